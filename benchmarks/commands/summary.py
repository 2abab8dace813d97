"""A short plain-text table of one run: ceilings, then each curve's range and knees.

Pure Python (standard library only), so it runs wherever `python -m benchmarks` does.
"""

from __future__ import annotations

from datetime import datetime

from benchmarks.analysis.roofline.curves import curves
from benchmarks.contract.results import ModelSweep, Run
from benchmarks.site import text


def _seconds_between(start: str, end: str | None) -> str:
    if not end:
        return "unfinished"
    return f"{(datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds():.0f} s"


def summary_lines(run: Run) -> list[str]:
    doc = run.doc["run"]
    ceilings = run.ceilings
    lines = [
        f"{text.device_label(run)} · run {run.id} · profile {doc.get('profile')} · "
        f"{'complete' if run.complete else 'INCOMPLETE: ' + str(doc.get('interrupted'))} · "
        f"wall {_seconds_between(doc['started_at'], doc.get('finished_at'))}",
        f"ceilings: copy {text.fmt_rate(ceilings['copy']['bytes_per_s'], 'B/s')}; matmul "
        + ", ".join(f"{d} {text.fmt_rate(m['flops_per_s'], 'FLOP/s')}" for d, m in sorted(ceilings["matmul"].items())),
    ]
    statuses: dict[str, int] = {}
    for record in run.records:
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    lines.append("points: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))
    header = (
        f"{'curve':<44} {'dtype':<9} {'mode':<6} {'ok':>5} {'first':>10} {'last':>10} {'knee pred':>9} {'knee meas':>9}"
    )
    lines += [header, "-" * len(header)]
    workloads = list(dict.fromkeys(r["workload"] for r in run.records))
    for workload in workloads:
        for curve in curves(run, workload):
            total = len(curve.points) + len(curve.not_ok)
            first = f"{text.fmt_time(curve.points[0].median_s)}" if curve.points else "–"
            last = f"{text.fmt_time(curve.points[-1].median_s)}" if curve.points else "–"
            shape = f" E={curve.params.get('experts')} k={curve.params.get('top_k')}" if workload == "moe" else ""
            name = f"{workload}{shape} {curve.label}"[:44]
            predicted = text.fmt_batch(curve.predicted_knee)
            measured = text.fmt_batch(curve.knee.batch if curve.knee else None)
            lines.append(
                f"{name:<44} {curve.dtype:<9} {curve.mode:<6} {len(curve.points):>2}/{total:<2} {first:>10} {last:>10} "
                f"{predicted:>9} {measured:>9}"
            )
    return lines


def sweep_summary_lines(sweep: ModelSweep) -> list[str]:
    """A model sweep's summary: what was swept where, then its table of batch sizes."""
    from benchmarks.site.sweep_table import table_lines

    doc, model = sweep.doc, sweep.doc["model"]
    state = "complete" if sweep.complete else "INCOMPLETE: " + str(doc["run"].get("interrupted"))
    header = f"{doc['device']['name']} · sweep {sweep.id} of {model['name']} ({model['target']}) · {state}"
    return [header, *table_lines(doc)]
