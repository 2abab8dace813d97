"""The measuring half: the only package here that imports torch (lazily, module by module)."""

import warnings

# A pip-installed torch without numpy warns at import; nothing here uses numpy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
