# %% [markdown]
# # The MLP: latency against batch
#
# The workload is the original article's: a stack of equally wide Linear+ReLU layers, timed at
# many batch sizes for several widths. Each chart draws the measured median with its
# interquartile band, the roofline prediction from the run's own measured ceilings (dashed),
# the predicted knee (◇, where compute time overtakes memory time) and the knee detected in the
# measurement (△, where a two-segment fit of log time against log batch bends). Hover a point
# for its numbers.

# %% tags=["hide-input"]
from pathlib import Path

from IPython.display import HTML, Markdown, display
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from benchmarks.analysis import curves as report
from benchmarks.site import charts
from benchmarks.site import text as txt

data = report.load_site_data()
ROOT = Path(report.__file__).resolve().parents[2]


def device_section(run):
    """Every chart and number of one device's shown run, as a list of displayable parts."""
    parts = []
    slug = run.device["slug"]
    found = [c for c in report.curves(run, "mlp") if len(c.points) >= 2]
    kind = txt.kind_word(run)
    intro = (
        f"<strong>{txt.h(txt.device_label(run))}</strong> ({kind} run; {txt.h(txt.provenance(run))}). "
        f"Measured ceilings: copy {txt.fmt_rate(run.ceilings['copy']['bytes_per_s'], 'B/s')}; matmul "
        + ", ".join(
            f"{d} {txt.fmt_rate(m['flops_per_s'], 'FLOP/s')}" for d, m in sorted(run.ceilings["matmul"].items())
        )
        + "."
    )
    if kind == "CPU":
        intro += (
            " This is a CPU run: it shows that a CPU has a roofline too, and says nothing about a GPU. "
            "There is no CUDA graph on a CPU, so only eager calls are timed."
        )
    others = data.others(run)
    if others:
        intro += f" {len(others)} older run(s) of this device are in the repository and not charted."
    parts.append(f"<p>{intro}</p>")
    if not found:
        parts.append("<p>This run has no measured MLP curve.</p>")
        return parts
    for (dtype, mode, cache), group in report.group_by(found, "dtype", "mode", "cache").items():
        key = f"mlp-{slug}-{dtype}-{mode}-{cache}"
        where = f"{txt.device_label(run)}, {dtype}, {mode}, cache {cache}"
        verdicts = "; ".join(f"{c.label}: {txt.knee_verdict(c)}" for c in group)
        parts.append(f"<h3>{txt.h(dtype)}, {txt.h(mode)}, cache {txt.h(cache)}</h3>")
        parts.append(
            charts.figure(
                charts.latency_chart(group, f"Latency against batch: {group[0].shape.split('×')[0]}-layer MLP"),
                f"{key}-latency",
                f"Latency against batch ({dtype}, {mode})",
                f"Log-log chart of median latency per call against batch size for each width, on {where} "
                f"({txt.cache_words(group[0])}), with the roofline prediction dashed. {verdicts}. "
                f"Data: {txt.provenance(run)}.",
            )
        )
        parts.append(
            charts.figure(
                charts.throughput_chart(group, "Throughput against batch"),
                f"{key}-throughput",
                f"Throughput against batch ({dtype}, {mode})",
                f"Log-log chart of rows per second (batch ÷ median latency) against batch size for each width, on "
                f"{where}, measured against the roofline prediction. Throughput keeps rising while latency is flat "
                f"and levels off past the knee. Data: {txt.provenance(run)}.",
            )
        )
    by_dtype = report.group_by(found, "dtype", "cache")
    for (dtype, cache), group in by_dtype.items():
        modes = {c.mode for c in group}
        if len(modes) < 2:
            continue
        parts.append(f"<h3>Eager calls against CUDA-graph replay, {txt.h(dtype)}</h3>")
        parts.append(
            charts.figure(
                charts.mode_chart(group, f"Eager against graph: {dtype}"),
                f"mlp-{slug}-{dtype}-{cache}-modes",
                f"Eager calls against CUDA-graph replay ({dtype})",
                f"One log-log panel per width: median latency of eager calls and of CUDA-graph replay against batch "
                f"size on {txt.device_label(run)}, {dtype}, cache {cache}, with the roofline dashed grey. The gap "
                f"at small batch is per-call overhead that graph replay removes. Data: {txt.provenance(run)}.",
            )
        )
    rows = []
    for c in found:
        ratio = c.knee_ratio()
        overhead = c.overhead_ratio()
        rows.append(
            [
                c.label,
                c.dtype,
                c.mode,
                c.cache,
                txt.fmt_batch(c.predicted_knee),
                txt.fmt_batch(c.knee.batch) if c.knee else "none detected",
                f"{txt.sig(ratio, 2)}× ({(ratio - 1) * 100:+.0f} %)" if ratio else "–",
                f"{txt.sig(overhead, 2)}×" if overhead else "–",
                f"{c.knee.slope_below:.2f} / {c.knee.slope_above:.2f}" if c.knee else "–",
            ]
        )
    parts.append(f"<h3>Knees: predicted against measured ({txt.h(txt.kind_word(run))})</h3>")
    parts.append(
        HTML(
            txt.html_table(
                [
                    "curve",
                    "dtype",
                    "mode",
                    "cache",
                    "predicted knee",
                    "measured knee",
                    "measured ÷ predicted (error)",
                    "measured ÷ roofline at smallest batch",
                    "log-log slope below / above",
                ],
                rows,
                caption=f"{txt.device_label(run)}; {txt.provenance(run)}",
            )
        )
    )
    failed = [(c, r) for c in found for r in c.not_ok]
    if failed:
        listed = "; ".join(
            f"{c.label} {c.dtype} {c.mode} batch {r['batch']}: {r['status']} ({r.get('message') or ''})"
            for c, r in failed
        )
        parts.append(f"<p>Points not measured: {txt.h(listed)}.</p>")
    return parts


def html_of(parts):
    return "".join(p if isinstance(p, str) else p._repr_html_() for p in parts)


# %% [markdown]
# ## Measured curves

# %% tags=["hide-input"]
if not data.shown:
    display(Markdown("No results are committed yet: run `nox -s bench docs` to measure this machine."))
elif len(data.shown) == 1:
    display(HTML(html_of(device_section(data.shown[0]))))
else:
    display(Markdown("Several devices have results: choose one."))
    labels = "".join(
        f'<label for="__devices_{i}">{txt.h(txt.device_label(r))}</label>' for i, r in enumerate(data.shown)
    )
    inputs = "".join(
        f'<input {"checked " if i == 0 else ""}id="__devices_{i}" name="__devices" type="radio">'
        for i in range(len(data.shown))
    )
    blocks = "".join(f'<div class="tabbed-block">{html_of(device_section(run))}</div>' for run in data.shown)
    display(
        HTML(
            f'<div class="tabbed-set tabbed-alternate" data-tabs="1:{len(data.shown)}">{inputs}'
            f'<div class="tabbed-labels">{labels}</div><div class="tabbed-content">{blocks}</div></div>'
        )
    )

# %% [markdown]
# ## Reading the knee table
#
# *Predicted knee* is the batch where the roofline's compute time overtakes its memory time, from
# the FLOPs and bytes the harness counts for each point and the run's measured ceilings.
# *Measured knee* is where a continuous two-segment line fitted to log time against log batch
# bends, reported only if the time grows at least like the square root of the batch beyond it.
# A ratio near 1 means the roofline explains the curve. A measured knee far beyond the predicted
# one, together with a smallest-batch time many times the roofline's, means the flat region is
# set by per-call overhead rather than by memory: a false knee.
#
# ## The code that was timed
#
# This is `snippets/mlp.py`, the file the harness imports, shown as it is in the repository.

# %% tags=["hide-input"]
source = (ROOT / "snippets" / "mlp.py").read_text(encoding="utf-8")
code = highlight(source, PythonLexer(), HtmlFormatter(cssclass="highlight"))
display(HTML(f'<details class="example"><summary>snippets/mlp.py</summary>{code}</details>'))

# %% tags=["hide-input"]
takeaway = (
    "The flat part of each curve is where a call costs the same whatever the batch; the knee is where that "
    "stops. Compare each measured knee with its prediction before trusting either: a knee far past the "
    "roofline's is overhead, not hardware."
)
if data.shown and not data.gpus:
    takeaway += " Every curve here is from a CPU; a GPU run will appear here once one is committed."
display(HTML(f'<div class="admonition success"><p class="admonition-title">Takeaway</p><p>{takeaway}</p></div>'))
