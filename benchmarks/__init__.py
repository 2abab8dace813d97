"""Measure how latency grows with batch size, and explain it with the roofline model.

The top level holds the registry: the workloads (`workloads`), the profiles (`profiles`), the GPU datasheets
(`gpus`), the published language models (`llm_models`), and the notebook API `sweep` below. The packages, with
dependencies pointing one way (commands → measure, analysis, site → contract → the registry):

- `contract/`: the results and sweep schemas, their rules, the strict reader and the atomic writer;
- `measure/`: the only package that imports torch: timers, ceilings, the run, the model sweep;
- `analysis/`: pure Python: `roofline/` (curves, roofline, diagnosis, predictions, recommendations), `serving/`
  (the dynamic batcher and LLM engine simulators) and `published/` (figures others published, checked);
- `site/`: charts (`site/charts/`), words and one module per page; never measures;
- `commands/`: the command line, one module per verb; the only code wiring the others together.

`sweep` (below) imports torch only when called.
"""

from __future__ import annotations

from typing import Any


def sweep(model: Any, make_input: Any = None, **options: Any):
    """Sweep a model over batch sizes on this machine and recommend one, from a notebook.

        from benchmarks import sweep
        result = sweep(model, lambda b: torch.randn(b, 512), budget_ms=20)
        print(result)             # the table and the recommendation
        result.recommendation     # the numbers (benchmarks.analysis.roofline.recommend.Recommendation)
        result.charts()           # the Altair charts the report and the site draw

    `make_input(batch)` returns a tensor, a tuple of arguments or a dict of keyword arguments with
    the batch first; without it give `input_shape=(512,)` (and `vocab=N` for token ids). Options are
    those of `python -m benchmarks sweep`: device, dtype, mode, batches, max_batch, budget_ms,
    percentile, time_limit_s, threads, input_shape, input_dtype, vocab, results_dir (default: keep no
    file) and quiet.
    """
    from benchmarks.commands.sweep import sweep_model

    return sweep_model(model, make_input, **options)
