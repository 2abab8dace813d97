"""A model sweep's points as a terminal table. Pure Python."""

from __future__ import annotations

from benchmarks.analysis.roofline import recommend


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1e3:.3g}"


def _bytes(count: int | None) -> str:
    if count is None:
        return "–"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def table_lines(doc: dict) -> list[str]:
    """batch, the stage that found it ("found by": its numbers come from the last pass that measured it, with
    the samples counted), median and percentile latency, throughput, peak memory and what bounds it. On a CPU
    the memory is the process's peak so far, the same for every batch, and the column says so."""
    p = doc["settings"]["percentile"]
    found = recommend.from_document(doc).diagnosis
    bound = {v.batch: v.regime for v in found.verdicts} if found else {}
    model = doc["model"]
    head = (
        f"{model['name']} ({model['target']}), {model['dtype']}, {model['mode']}, on {doc['device']['name']}; "
        f"inputs: {model['input']}"
    )
    memory_head = "peak memory" if doc["device"]["kind"] == "cuda" else "process peak"
    rows = [head]
    if not doc["run"]["complete"]:
        rows.append(f"incomplete: {doc['run'].get('interrupted') or 'stopped'}")
    rows += [
        f"{'batch':>6} {'found by':>8} {'samples':>7} {'median ms':>10} {f'p{p} ms':>9} {'samples/s':>11} "
        f"{memory_head:>12}  bound",
    ]
    for point in doc["points"]:
        if point["status"] != "ok":
            rows.append(
                f"{point['batch']:>6} {point['stage']:>8} {'–':>7}  {point['status']}: {(point['message'] or '')[:80]}"
            )
            continue
        memory = _bytes(point.get("peak_memory_bytes"))
        rows.append(
            f"{point['batch']:>6} {point['stage']:>8} {len(point['timing']['samples_s']):>7} "
            f"{_ms(point['median_s']):>10} {_ms(point['percentile_s']):>9} "
            f"{point['throughput']:>11,.0f} {memory:>12}  {bound.get(point['batch'], '–')}"
        )
    return rows
