"""When requests reach a server: open-loop Poisson or bursty arrivals, or a recorded trace.

Each function returns a sorted numpy array of timestamps in seconds. Open-loop arrivals do not wait
for answers (users of a public service); the closed loop of N clients that benchmark tools run, where
each client sends its next request when the previous answer comes back, lives in the simulator
(`benchmarks.analysis.serving.batcher.simulator.simulate(..., clients=N)`), because its arrivals depend on the
server.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from benchmarks.contract.errors import UserError
from benchmarks.contract.inputs import TRACE_LIMIT, InputError, read_text_bounded

MAX_TRACE_BYTES = TRACE_LIMIT
MAX_TRACE_REQUESTS = 5_000_000


class TraceError(ValueError, UserError):
    """A trace file that cannot be used: its path, where and what is wrong, in one line."""


def _check_rate(rate_per_s: float) -> float:
    if not isinstance(rate_per_s, (int, float)) or not math.isfinite(rate_per_s) or rate_per_s <= 0:
        raise ValueError(f"the rate must be a number of requests per second above 0, not {rate_per_s!r}")
    return float(rate_per_s)


def _check_count(n: int) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"the number of requests must be a whole number of at least 1, not {n!r}")
    return int(n)


def poisson_arrivals(rate_per_s: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n arrival times of a Poisson process at `rate_per_s`: independent exponential gaps of mean 1/rate,
    the first gap counted from 0."""
    rate, n = _check_rate(rate_per_s), _check_count(n)
    return np.cumsum(rng.standard_exponential(n)) / rate


def gamma_arrivals(rate_per_s: float, cv: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n arrival times whose gaps are gamma-distributed with mean 1/rate and coefficient of variation `cv`
    (standard deviation ÷ mean of a gap): 1 is Poisson, above 1 is bursty (requests come in clumps with
    long quiet spells between), below 1 is more regular than Poisson."""
    rate, n = _check_rate(rate_per_s), _check_count(n)
    if not isinstance(cv, (int, float)) or not math.isfinite(cv) or not 0.05 <= cv <= 20:
        raise ValueError(f"the coefficient of variation must be a number from 0.05 to 20, not {cv!r}")
    shape = 1.0 / (cv * cv)
    return np.cumsum(rng.standard_gamma(shape, n)) / (shape * rate)


def trace_arrivals(path: Path | str) -> np.ndarray:
    """Arrival times read from a file: a JSON array of seconds, or text with one time in seconds per line
    (blank lines and lines starting with # are skipped). Times must be finite, at least 0 and in order;
    the first is moved to 0. A bad file raises TraceError naming the file and the line or index."""
    path = Path(path)
    try:
        text = read_text_bounded(path, kind="trace", limit_bytes=MAX_TRACE_BYTES)
    except InputError as exc:
        raise TraceError(str(exc)) from None
    if text.lstrip().startswith("["):
        try:
            values = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise TraceError(f"{path}: is not JSON: {str(exc)[:120]}") from None
        if not isinstance(values, list):
            raise TraceError(f"{path}: must be a JSON array of times in seconds")
        items = [(f"[{index}]", value) for index, value in enumerate(values)]
    else:
        items = []
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                items.append((f"line {number}", float(line)))
            except ValueError:
                raise TraceError(f"{path}: line {number}: {line[:40]!r} is not a time in seconds") from None
    if not items:
        raise TraceError(f"{path}: holds no arrival times")
    if len(items) > MAX_TRACE_REQUESTS:
        raise TraceError(f"{path}: holds more than {MAX_TRACE_REQUESTS:,} arrival times")
    previous = 0.0
    times = np.empty(len(items))
    for index, (where, value) in enumerate(items):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
        if not ok:
            raise TraceError(f"{path}: {where}: must be a time in seconds, a number of at least 0")
        if value < previous:
            raise TraceError(f"{path}: {where}: {value:g} s comes before the time above it ({previous:g} s)")
        times[index] = previous = float(value)
    return times - times[0]
