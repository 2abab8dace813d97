"""SYNTHETIC: a stand-in for vLLM, for the engine check's tests (see entrypoints/openai/api_server.py)."""

__version__ = "0.0.0+stand-in"
