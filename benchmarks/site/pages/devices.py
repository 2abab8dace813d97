"""The devices page: every device with a committed run, newest complete run each, read the same way: measured
ceilings against the datasheet, the MLP's ridge batch against its measured knee, normalised curves on shared
axes, and the software each run measured with."""

from __future__ import annotations

from benchmarks.analysis.roofline import curves as c
from benchmarks.analysis.roofline import devices as dv
from benchmarks.analysis.roofline.predict import STATED_COUNT, predict
from benchmarks.contract.results import Run
from benchmarks.gpus import find_gpu
from benchmarks.site import charts, text
from benchmarks.site import data as site_data
from benchmarks.site.charts.devices import DATASHEET, MEASURED, ROOFLINE, beside_datasheets_chart, normalised_chart
from benchmarks.site.data import SiteData
from benchmarks.site.forecasts import ceiling_chart_line
from benchmarks.site.render import NO_RESULTS, Html, Page, Paragraph, Table, tag

KNEE_HEADERS = [
    "device", "MLP (dtype · mode)", "ridge batch, predicted from the run's ceilings", "measured knee",
    "measured ÷ predicted", "ridge batch at the rates reached (fitted)", "measured ÷ fitted",
]  # fmt: skip
SOFTWARE_HEADERS = ["device", "run (date · commit)", "torch", "CUDA", "driver", "Python", "CPU threads"]
DATASHEET_GPUS = ("NVIDIA T4", "NVIDIA A100 SXM4 80GB", "NVIDIA H100 SXM", "NVIDIA H200")  # beside what was measured


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    if not data.shown:
        return Page(
            {name: [NO_RESULTS] for name in ("beside", "ceilings", "knees", "curves", "software")},
            data,
            {"devices_measured": 0},
            lesson=lesson(0),
        )
    return Page(
        {
            "beside": beside_datasheets(data),
            "ceilings": [ceilings_table(data)],
            "knees": [knee_table(data)],
            "curves": curves_parts(data),
            "software": [software_table(data)],
        },
        data,
        {"devices_measured": len(data.shown)},
        takeaway_items=knees_against_ridges(data),
        lesson=lesson(len(data.shown)),
    )


def label(run: Run) -> str:
    return text.device_label(run) + (" (SYNTHETIC test fixture)" if run.synthetic else "")


def estimate(words: str) -> Html:
    """A datasheet figure or a prediction, set apart from what was measured."""
    return tag("em", words, class_="estimate")


# --------------------------------------------------------------------------- ceilings


def rate(ceiling: dv.Ceiling, value: float) -> str:
    return text.fmt_rate(value, "B/s" if ceiling.name == dv.COPY else "FLOP/s")


def ceiling_cell(ceiling: dv.Ceiling | None) -> list:
    if ceiling is None:
        return ["–"]
    cell: list = [f"{rate(ceiling, ceiling.measured)} measured", Html("<br>")]
    if ceiling.datasheet:
        share = f"{text.sig(100 * ceiling.fraction, 2)} % of it"
        return [*cell, estimate(f"{rate(ceiling, ceiling.datasheet)} datasheet; measured {share}")]
    return [*cell, estimate("no datasheet figure")]


def ceilings_table(data: SiteData) -> Table:
    found = [{ceiling.name: ceiling for ceiling in dv.ceilings(run)} for run in data.shown]
    dtypes = sorted({name for row in found for name in row if name != dv.COPY}, key=_dtype_order)
    headers = ["device", "copy bandwidth", *(f"matmul, {dtype}" for dtype in dtypes)]
    rows = [
        [label(run), *(ceiling_cell(mine.get(name)) for name in (dv.COPY, *dtypes))]
        for run, mine in zip(data.shown, found)
    ]
    return Table(headers, rows, "Measured ceilings of each device's newest complete run, beside its datasheet")


def _dtype_order(dtype: str) -> tuple:
    return (c.DTYPE_ORDER.index(dtype) if dtype in c.DTYPE_ORDER else len(c.DTYPE_ORDER), dtype)


# --------------------------------------------------------------------------- knees


def mlp_runs(data: SiteData) -> list[Run]:
    """Per device, the run its MLP curves come from (a newer run of other workloads alone never hides them)."""
    return data.shown_for("mlp")


def knee_table(data: SiteData) -> Table:
    rows = []
    for run in mlp_runs(data):
        found = dv.knee_rows(run)
        if not found:
            rows.append([label(run), "no depth-8 MLP measured", "–", "–", "–", "–", "–"])
        for row in found:
            curve = row.curve
            rows.append(
                [
                    label(run),
                    f"{curve.label} ({curve.dtype} · {curve.mode})",
                    ridge_cell(row.ridge),
                    f"≈ {text.fmt_batch(row.measured)}" if row.measured else "no clear knee",
                    times(row.ratio),
                    ridge_cell(row.reached),
                    times(row.fitted_ratio),
                ]
            )
    return Table(KNEE_HEADERS, rows, "The MLP's ridge batch, predicted and fitted, against its measured knee")


def times(ratio: float | None) -> str:
    return f"{text.sig(ratio, 2)}×" if ratio else "–"


def ridge_cell(batch: float | None) -> Html:
    return estimate(f"≈ {text.fmt_batch(batch)}") if batch else estimate("none: never compute-bound")


# --------------------------------------------------------------------------- curves


def normalised_rows(run: Run) -> list[dict]:
    rows = []
    for point in dv.normalised(run):
        curve = f"{point.curve.label} · {charts.DTYPE_SHORT.get(point.curve.dtype, point.curve.dtype)}"
        base = {"device": label(run), "curve": curve, "x": point.x, "batch": point.batch}
        rows.append({**base, "kind": MEASURED, "y": point.measured})
        rows.append({**base, "kind": ROOFLINE, "y": point.predicted})
    return rows


def curves_parts(data: SiteData) -> list:
    rows = [row for run in mlp_runs(data) for row in normalised_rows(run)]
    if not rows:
        return [Paragraph("No committed run has an MLP curve with a ridge batch to normalise by.")]
    devices = [label(run) for run in mlp_runs(data) if any(row["device"] == label(run) for row in rows)]
    dtypes = ", ".join(dict.fromkeys(k.curve.dtype for run in mlp_runs(data) for k in dv.knee_rows(run)))
    chart = normalised_chart(
        rows,
        devices,
        "Every device on shared axes: normalised latency against normalised batch",
        [
            f"{len(devices)} device{'' if len(devices) == 1 else 's'} · {dtypes} · graph replay on a GPU, "
            "eager calls on a CPU · weights rotated through memory",
            "solid: measured; dashed grey: roofline predicted from each run's own measured ceilings",
        ],
    )
    figure = charts.figure(
        chart,
        "devices-normalised",
        "Every device's MLP curves, normalised",
        "One log-log panel per device with a committed run: each depth-8 MLP's median latency divided by the "
        "roofline's latency at batch 1, against the batch divided by the ridge batch of the run's own measured "
        "ceilings, measured solid and the roofline's prediction dashed grey, so that machines of any speed share the "
        "axes. Devices: " + "; ".join(devices),
        "Each device's MLP curves on shared axes: latency ÷ the roofline's latency at batch 1 against batch ÷ ridge "
        "batch, measured solid, predicted dashed.",
    )
    return [figure]


# --------------------------------------------------------------------------- beside the datasheet GPUs


def beside_datasheets(data: SiteData) -> list:
    """The headline MLP as measured on the first device shown, beside the roofline prediction of the same MLP in the
    same dtype on each datasheet GPU that lists a rate for it: until a GPU is measured, what one would show."""
    curve = site_data.headline_curve(data)
    if curve is None:
        return []
    batches = [p.batch for p in curve.points]
    name = text.device_label(curve.run)  # in the legend; the subtitle and caption give the page's full label
    rows = [{"device": name, "kind": MEASURED, "batch": p.batch, "ms": p.median_s * 1e3} for p in curve.points]
    shown = []
    for name in DATASHEET_GPUS:
        gpu = find_gpu(name)
        if gpu is None or curve.dtype not in gpu.peak_flops:
            continue
        shown.append(gpu.name)
        predicted = predict("mlp", curve.params, gpu.ceilings(curve.dtype), curve.dtype, batches)
        rows += [{"device": gpu.name, "kind": DATASHEET, "batch": p.batch, "ms": p.seconds * 1e3} for p in predicted]
    if not shown:
        return []
    dtype = charts.DTYPE_SHORT.get(curve.dtype, curve.dtype)
    chart = beside_datasheets_chart(
        rows,
        f"The {curve.shape} in {dtype}: measured on one device, predicted on datasheet GPUs",
        [
            f"{label(curve.run)}, {curve.mode}, cache {curve.cache}, measured solid · {', '.join(shown)}: roofline "
            "of the datasheet (the ceiling, not the forecast), predicted, dashed",
            *datasheet_line_words(),
        ],
    )
    figure = charts.figure(
        chart,
        "devices-beside-datasheets",
        f"The {curve.shape} measured beside datasheet GPUs, predicted",  # the device is named below: a new run keeps it
        f"Log-log chart of latency per call against batch for the {curve.shape} in {curve.dtype}: measured on "
        f"{label(curve.run)} as a solid line with points, and the roofline of each datasheet GPU ({', '.join(shown)}) "
        "as a dashed line, a prediction and not a measurement",
        f"Measured solid on {label(curve.run)}; predicted dashed from the datasheets of {', '.join(shown)}.",
    )
    return [figure]


def datasheet_line_words() -> list[str]:
    """The datasheet lines' cache state (the byte count the roofline uses) and what they draw (the ceiling)."""
    return [f"datasheet lines: weights and {STATED_COUNT['mlp']}, none kept in cache;", f"they {ceiling_chart_line()}"]


# --------------------------------------------------------------------------- software


def software_table(data: SiteData) -> Table:
    rows = []
    for run in data.shown:
        stack = dv.software(run)
        cells = [stack[name] if stack[name] is not None else "–" for name in ("torch", "cuda", "driver", "python")]
        threads = stack["threads"] if run.device["kind"] != "cuda" and stack["threads"] else "–"
        rows.append([label(run), run_cell(run), *map(str, cells), str(threads)])
    return Table(SOFTWARE_HEADERS, rows, "The software each run measured with, as its results file records it")


def run_cell(run: Run) -> str:
    commit = run.doc["run"].get("git_commit")
    words = f"{text.run_date(run)} · {commit[:7] if commit else 'commit unknown'}"
    return words if run.complete else words + " · incomplete"


# --------------------------------------------------------------------------- takeaway items


def knees_against_ridges(data: SiteData) -> list[str]:
    """Per device: its measured knees against the ridge batch of its ceilings and of the rates its kernels reached, and
    its ceilings as a share of the datasheet."""
    said = []
    for run in mlp_runs(data):
        rows = dv.knee_rows(run)
        predicted = [row.ratio for row in rows if row.ratio]
        fitted = [row.fitted_ratio for row in rows if row.fitted_ratio]
        shares = [x.fraction for x in dv.ceilings(run) if x.fraction]
        words = f"{label(run)}: "
        words += (
            f"measured knee {text.sig_range(predicted)}× the ridge batch predicted from the run's ceilings"
            if predicted
            else "no measured knee to set against a ridge batch"
        )
        if fitted:
            words += f", {text.sig_range(fitted)}× the one at the rates its kernels reached (fitted to the same curves)"
        if shares:
            words += f"; ceilings {text.sig(100 * min(shares), 2)}–{text.sig(100 * max(shares), 2)} % of the datasheet"
        said.append(words + ".")
    return said


def lesson(devices_measured: int) -> str:
    """The takeaway's lesson; its last sentence depends on how many devices have a committed run."""
    words = (
        "Read every machine the same way: measure its ceilings, predict its ridge batch from them, then look where its "
        "curves bend; where they bend later, the rates its kernels reach at small batches are below its ceilings."
    )
    if devices_measured > 1:
        words += " Normalised by their own roofline, curves from different machines share one pair of axes."
    elif devices_measured == 1:
        words += " Only one device has a committed run so far; each new device adds a row and a panel here."
    return words
