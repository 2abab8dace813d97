"""Words that the CNN and Transformer-decode pages share: knees and points not measured (plain text)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.roofline_model import Knee
from benchmarks.site import text
from benchmarks.site.render import Paragraph


def predicted_knee_text(curve: Curve) -> str:
    """The ridge batch in words: 'none', 'below batch 1 (compute-bound from the start)', '≈ 12'."""
    knee = curve.predicted_knee
    if knee is None:
        return "none (memory-bound at every batch)"
    first = curve.batches[0] if curve.points else 1
    if knee < first:
        return f"below {first}: compute-bound from the start"
    return f"≈ {text.fmt_batch(knee)}"


def measured_knee_text(knee: Knee | None) -> str:
    """The detected knee with the log-log slopes either side (0 is flat, 1 is proportional)."""
    if knee is None:
        return "none detected"
    return f"≈ {text.fmt_batch(knee.batch)} (slope {knee.slope_below:.2f} → {knee.slope_above:.2f})"


def knees_text(curve: Curve) -> str:
    """'ridge batch …, measured knee …' of one curve."""
    return f"ridge batch {predicted_knee_text(curve)}, measured knee {measured_knee_text(curve.knee)}"


def knee_findings(curves: Sequence[Curve]) -> str:
    """Each curve's label with its ridge batch and measured knee, for a figure's findings."""
    return "; ".join(f"{c.label}: {knees_text(c)}" for c in curves)


def ridge_intensity_note(ridges: dict[str, float]) -> str:
    """'Ridge: float32 3.67 FLOP/byte.' for the dtypes of a device's introduction."""
    if not ridges:
        return ""
    return "Ridge: " + ", ".join(f"{dtype} {text.sig(value, 3)} FLOP/byte" for dtype, value in ridges.items()) + "."


def not_measured(curves: Sequence[Curve]) -> list[str]:
    """One line per configuration and status listing the batches that were not measured, every mode
    together, with the first message as an example (plain text)."""
    grouped: dict[tuple, dict[str, Any]] = {}
    for c in curves:
        for r in c.not_ok:
            entry = grouped.setdefault(
                (c.label, c.dtype, r["status"]), {"batches": set(), "modes": [], "message": r.get("message")}
            )
            entry["batches"].add(r["batch"])
            if c.mode not in entry["modes"]:
                entry["modes"].append(c.mode)
    lines = []
    for (label, dtype, status), entry in grouped.items():
        batches = sorted(entry["batches"])
        line = f"{label} ({dtype}, {', '.join(entry['modes'])}): batch{'es' * (len(batches) > 1)} "
        line += ", ".join(str(b) for b in batches) + f" {status}"
        if entry["message"]:
            line += f" ({entry['message']})"
        lines.append(line)
    return lines


def not_measured_parts(curves: Sequence[Curve]) -> list[Paragraph]:
    """A paragraph listing the points not measured, or nothing."""
    missing = not_measured(curves)
    return [Paragraph(f"Points not measured: {'; '.join(missing)}.")] if missing else []
