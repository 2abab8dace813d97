"""The arithmetic of the CNN page: weight reuse, intensity at batch 1 against the ridge, and what a
larger batch buys, from the records' FLOPs and bytes or from the formulas of `snippets.costs`.

Pure Python (no plotting, no torch); the words and charts are in benchmarks/site/.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from benchmarks.analysis.roofline.curves import Curve, MeasuredPoint, bytes_per_element
from benchmarks.analysis.roofline.roofline_model import affine_fit, critical_batch
from benchmarks.gpus import Ceilings
from snippets import costs

ON_RIDGE = 0.95  # a per-image intensity within 5 % of the ridge: the formula cannot say which side it falls
BEYOND_CEILING = 1.05  # a rate above the matmul ceiling by more than run-to-run noise


# --------------------------------------------------------------------------- intensity from records


def _fit(curve: Curve) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """(intercept, slope) of the recorded FLOPs and of the recorded bytes against the batch."""
    if len({p.batch for p in curve.points}) < 2:
        return None
    batches = [float(p.batch) for p in curve.points]
    return affine_fit(batches, [p.flops for p in curve.points]), affine_fit(batches, [p.bytes for p in curve.points])


def intensity_at(curve: Curve, batch: float = 1) -> float | None:
    """FLOPs per byte of one call at `batch`: the recorded point if measured there, else the line
    through the recorded FLOPs and bytes (both are affine in the batch)."""
    for p in curve.points:
        if p.batch == batch and p.bytes:
            return p.flops / p.bytes
    if len(curve.points) < 2:
        return None
    batches = [float(p.batch) for p in curve.points]
    f0, f1 = affine_fit(batches, [p.flops for p in curve.points])
    b0, b1 = affine_fit(batches, [p.bytes for p in curve.points])
    moved = b0 + b1 * batch
    return (f0 + f1 * batch) / moved if moved > 0 else None


def intensity_limit(curve: Curve) -> float | None:
    """FLOPs per byte as the batch grows without bound: the per-item FLOPs over the per-item bytes."""
    fit = _fit(curve)
    if fit is None:
        return None
    (_, flops_per_item), (_, bytes_per_item) = fit
    return flops_per_item / bytes_per_item if bytes_per_item > 0 else None


def fixed_share(curve: Curve, batch: float = 1) -> float | None:
    """Share of the bytes at `batch` that does not grow with the batch (the weights): the intercept of
    the line through the recorded bytes, over the bytes at `batch`."""
    fit = _fit(curve)
    if fit is None:
        return None
    _, (fixed, per_item) = fit
    total = fixed + per_item * batch
    return max(fixed, 0.0) / total if total > 0 else None


def throughput_gain(curve: Curve) -> tuple[float, float | None]:
    """Items per second at the largest measured batch over the smallest: measured, and the roofline's."""
    first, last = curve.points[0], curve.points[-1]
    measured = (last.batch / last.median_s) / (first.batch / first.median_s)
    predicted = None
    if first.predicted_s and last.predicted_s:
        predicted = (last.batch / last.predicted_s) / (first.batch / first.predicted_s)
    return measured, predicted


def beyond_ceiling(curves: Iterable[Curve]) -> list[tuple[Curve, MeasuredPoint, float]]:
    """(curve, point, FLOP/s) of each curve whose fastest point beats the run's matmul ceiling by more
    than noise: the FLOPs count a direct convolution, and a library may do fewer."""
    found = []
    for c in curves:
        best = max(c.points, key=lambda p: p.flops / p.median_s)
        rate = best.flops / best.median_s
        if c.ceilings and rate > BEYOND_CEILING * c.ceilings.flops_per_s:
            found.append((c, best, rate))
    return found


# --------------------------------------------------------------------------- weight reuse


@dataclass(frozen=True)
class ConvReuse:
    """How often a convolution uses each weight element for one image."""

    weights: int  # k²·C_in·C_out
    positions: int  # H_out·W_out output positions, each of which applies every weight once
    flops_per_weight: int  # 2·positions: a multiply and an add per weight per position


def conv_reuse(c_in: int, c_out: int, kernel: int, resolution: int, stride: int = 1) -> ConvReuse:
    """Weight count and reuse of a same-padded square k×k convolution (one image)."""
    side = -(-resolution // stride)
    return ConvReuse(kernel * kernel * c_in * c_out, side * side, 2 * side * side)


@dataclass(frozen=True)
class IntensityRow:
    """One CNN curve's line of the intensity table."""

    curve: Curve
    intensity: float | None  # FLOP per byte at batch 1
    ridge: float | None  # FLOP per byte where this run's compute and memory times meet
    reuse: ConvReuse | None  # single conv layers only
    weight_share: float | None  # share of the bytes at batch 1 that the weights take

    @property
    def above_ridge(self) -> bool:
        return self.intensity is not None and self.ridge is not None and self.intensity >= self.ridge


def intensity_rows(curves: Sequence[Curve]) -> list[IntensityRow]:
    """Intensity at batch 1 against the run's ridge for conv and ResNet-50 curves."""
    rows = []
    for c in curves:
        reuse = None
        if c.workload == "conv":
            p = c.params
            reuse = conv_reuse(p["c_in"], p["c_out"], p["kernel"], p["resolution"])
        ridge = c.ceilings.ridge_intensity if c.ceilings else None
        rows.append(IntensityRow(c, intensity_at(c, 1), ridge, reuse, fixed_share(c, 1)))
    return rows


def single_layers(rows: Sequence[IntensityRow]) -> list[IntensityRow]:
    """The conv rows with an intensity, one per layer and dtype (intensity does not depend on the mode)."""
    unique: dict[tuple[str, str], IntensityRow] = {}
    for r in rows:
        if r.curve.workload == "conv" and r.intensity is not None:
            unique.setdefault((r.curve.label, r.curve.dtype), r)
    return list(unique.values())


# --------------------------------------------------------------------------- formulas with datasheet ceilings


@dataclass(frozen=True)
class FormulaConv:
    """One conv shape costed by the formula with given ceilings (no measurement)."""

    label: str
    reuse: ConvReuse
    weight_share: float  # share of the bytes at batch 1 that the weights take
    intensity: float  # FLOP per byte at batch 1
    per_image_intensity: float  # FLOP per byte of each extra image (its activations only)
    ridge: float
    knee: float | None  # the roofline's knee; None when never compute-bound

    @property
    def on_ridge(self) -> bool:
        """Never compute-bound by the formula, but within rounding of the ridge for each extra image."""
        return self.knee is None and self.per_image_intensity > ON_RIDGE * self.ridge


def formula_convs(shapes, dtype: str, ceilings: Ceilings) -> list[FormulaConv]:
    """Conv shapes (c_in, c_out, kernel, resolution) costed by the formula with given (datasheet)
    ceilings: intensity at batch 1, per extra image, and the roofline's knee. No measurement."""
    size = bytes_per_element(dtype)
    found = []
    for c_in, c_out, kernel, resolution in shapes:
        (_, f1, m1), (_, f2, m2) = [(b, *costs.conv_cost(b, c_in, c_out, kernel, resolution, size)) for b in (1, 2)]
        reuse = conv_reuse(c_in, c_out, kernel, resolution)
        found.append(
            FormulaConv(
                label=f"{kernel}×{kernel}, {c_in}→{c_out} @{resolution}²",
                reuse=reuse,
                weight_share=size * reuse.weights / m1,
                intensity=f1 / m1,
                per_image_intensity=(f2 - f1) / (m2 - m1),
                ridge=ceilings.ridge_intensity,
                knee=critical_batch([(1, f1, m1), (2, f2, m2)], ceilings),
            )
        )
    return found


@dataclass(frozen=True)
class FormulaVerdicts:
    """Formula convs sorted by what the roofline says about their flat region."""

    from_start: list[FormulaConv]  # compute-bound from the first image
    short: list[FormulaConv]  # a flat region that ends at a knee
    never: list[FormulaConv]  # memory-bound at every batch
    on_ridge: list[FormulaConv]  # on the ridge to within rounding

    @property
    def longest(self) -> float | None:
        return max((f.knee for f in self.short if f.knee is not None), default=None)


def formula_verdicts(found: Sequence[FormulaConv]) -> FormulaVerdicts:
    return FormulaVerdicts(
        from_start=[f for f in found if f.knee is not None and f.knee < 1],
        short=[f for f in found if f.knee is not None and f.knee >= 1],
        never=[f for f in found if f.knee is None and not f.on_ridge],
        on_ridge=[f for f in found if f.on_ridge],
    )
