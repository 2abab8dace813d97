"""The theory page's CPU section: what its roofline's arithmetic ceiling is, and is not, from the committed run."""

from benchmarks.site import data as site_data
from benchmarks.site import text
from benchmarks.site.pages import theory


def test_the_cpu_ceiling_is_named_a_kernels_and_what_beat_it_in_the_same_run_is_given():
    data = site_data.load_site_data()
    curve = theory.cpu_curve(data)
    assert curve is not None
    run = next(r for r in data.runs if r.id == curve.run.id)
    ceiling = run.ceilings["matmul"][curve.dtype]["flops_per_s"]
    said = theory.ceiling_words(curve, data)
    assert f"square {curve.dtype} matmul reached on {run.device['threads']} thread" in said
    assert text.fmt_rate(ceiling, "FLOP/s") in said and "not the CPU's peak" in said
    rates = [
        r["flops"] / r["median_s"]
        for r in run.records
        if r["workload"] == "conv" and r["status"] == "ok" and r["dtype"] == curve.dtype and r.get("flops")
    ]
    if rates and max(rates) > ceiling:  # the convolutions beat the matmul's ceiling: said, with their best rate
        assert f"{text.fmt_rate(max(rates), 'FLOP/s')})" in said or f"{text.fmt_rate(max(rates), 'FLOP/s')};" in said
        assert "not a property of CPUs" in said


def test_a_run_without_a_ceiling_in_the_curves_dtype_says_so():
    """SYNTHETIC: a CPU run whose curve's dtype has no measured matmul ceiling."""
    from tests.synthetic import make_run, site_data

    run = make_run(kind="cpu", dtypes=("bfloat16",))
    run["ceilings"]["matmul"] = {}
    data = site_data(run)
    curve = theory.cpu_curve(data)
    assert curve is not None
    assert "measured no bfloat16 matmul ceiling" in theory.ceiling_words(curve, data)
    theory.build(data)
