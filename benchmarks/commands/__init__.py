"""The command line, one module per verb (`python -m benchmarks VERB`); `cli` holds the parser.

Commands are the only code that wires measuring to analysis and to the site. Only the measuring verbs
import torch, and only once they have parsed their arguments."""
