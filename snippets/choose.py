"""Which batch to run, from measured (batch, seconds per call) pairs: the rule the batch-size guide gives,
without torch, so that the sweep snippet and the site apply the same one.

- the largest batch whose call fits a latency budget;
- the smallest batch within 5 % of the best throughput measured: past it, a bigger batch buys
  latency and little throughput;
- run the smaller of the two; when no batch fits the budget, the fastest batch measured;
- and when a larger batch measured no slower, run that one instead: it does more in the same time.
"""

FLAT_SHARE = 0.95  # throughput within 5 % of the best counts as flat (the sweep command's rule too)


def largest_within(points, budget_s):
    """The largest batch whose time per call is at most `budget_s`, or None when none is."""
    fitting = [batch for batch, seconds in points if seconds <= budget_s]
    return max(fitting) if fitting else None


def throughput_flattens(points, share=FLAT_SHARE):
    """The smallest batch whose throughput (batch ÷ seconds) reaches `share` of the best measured."""
    rates = sorted((batch, batch / seconds) for batch, seconds in points)
    best = max(rate for _, rate in rates)
    return next(batch for batch, rate in rates if rate >= share * best)


def no_slower_larger(points, batch):
    """Of `batch` and the larger batches measured no slower than it, the one of highest throughput."""
    seconds = dict(points)
    return max((b for b, s in points if b >= batch and s <= seconds[batch]), key=lambda b: (b / seconds[b], b))


def choose(points, budget_s):
    """The batch to run: the smaller of the two above, or the fastest batch when none fits the budget;
    then a larger batch measured no slower, if there is one."""
    fitting = largest_within(points, budget_s)
    if fitting is None:
        picked = min(points, key=lambda point: (point[1], point[0]))[0]
    else:
        picked = min(throughput_flattens(points), fitting)
    return no_slower_larger(points, picked)
