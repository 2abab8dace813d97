import sys

from benchmarks.commands.cli import main

sys.exit(main())
