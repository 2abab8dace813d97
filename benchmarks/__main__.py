import time

BENCHMARKS_STARTED = time.perf_counter()  # a sweep's --time-limit counts from here (benchmarks.commands.sweep)

import sys  # noqa: E402

from benchmarks.commands.cli import main  # noqa: E402

sys.exit(main())
