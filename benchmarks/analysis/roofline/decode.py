"""The arithmetic of the Transformer-decode page: the cost model of `snippets.costs` in closed form
over the batch and the context, the weight/KV split of the recorded bytes, the crossover batch, and
the comparisons the page states (MHA against GQA, prefill against decode).

Pure Python (no plotting, no torch); the words and charts are in benchmarks/site/.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.roofline.curves import MODE_ORDER, Curve, MeasuredPoint, bytes_per_element
from benchmarks.analysis.roofline.predict import predict
from benchmarks.contract.results import Run
from benchmarks.workloads import decoder_config
from snippets import costs


@dataclass(frozen=True)
class DecodeTerms:
    """The decode cost model of one decoder config, per call (all sizes in bytes and FLOPs).

    A step of b sequences that hold c cached positions each attends over n = c + 1 positions:
    FLOPs = b·(2·P + A·n), bytes = W + b·(κ·n + a), with P the matmul weight elements, W every
    weight's bytes, A the attention FLOPs per position, κ the KV bytes per position, a the
    activation bytes per token.
    """

    matmul_weights: int  # P: elements of every Linear weight
    weight_bytes: int  # W: every weight once (Linear and RMSNorm)
    attention_flops_per_position: int  # A = 4·layers·heads·head_dim (QKᵀ and PV)
    kv_bytes_per_position: int  # κ = 2·layers·kv_heads·head_dim·s (K and V, every layer)
    activation_bytes_per_token: int  # a = s·layers·(8·d_model + 2·d_ff)

    def kv_bytes_per_sequence(self, context: int) -> int:
        return self.kv_bytes_per_position * (context + 1)

    def flops(self, batch: float, context: int) -> float:
        return batch * (2 * self.matmul_weights + self.attention_flops_per_position * (context + 1))

    def bytes(self, batch: float, context: int) -> float:
        return self.weight_bytes + batch * (self.kv_bytes_per_sequence(context) + self.activation_bytes_per_token)

    def matmul_cost(self, batch: float) -> tuple[float, float]:
        """(FLOPs, bytes) of the step's matmuls: 2·P per sequence, and the weights once plus each token's
        activations."""
        return batch * 2 * self.matmul_weights, self.weight_bytes + batch * self.activation_bytes_per_token

    def attention_cost(self, batch: float, context: int) -> tuple[float, float]:
        """(FLOPs, bytes) of the step's attention: QKᵀ and PV over n positions, and each sequence's cache."""
        return batch * self.attention_flops_per_position * (context + 1), batch * self.kv_bytes_per_sequence(context)

    def intensity(self, batch: float, context: int) -> float:
        return self.flops(batch, context) / self.bytes(batch, context)

    def crossover_batch(self, context: int) -> float:
        """Batch at which the KV cache read equals the weight read: W / (κ·(c + 1))."""
        return self.weight_bytes / self.kv_bytes_per_sequence(context)

    def _per_sequence(self, context: int) -> tuple[float, float]:
        """(FLOPs, bytes) that each sequence adds to a step: (2·P + A·n, κ·n + a)."""
        n = context + 1
        return (
            2 * self.matmul_weights + self.attention_flops_per_position * n,
            self.kv_bytes_per_position * n + self.activation_bytes_per_token,
        )

    def intensity_limit(self, context: int) -> float:
        """FLOP per byte as the batch grows without bound: (2·P + A·n) / (κ·n + a)."""
        per_flops, per_bytes = self._per_sequence(context)
        return per_flops / per_bytes

    @property
    def attention_floor(self) -> float:
        """The limit's limit at endless context: A / κ = 2·(heads / kv_heads) / s FLOP per byte."""
        return self.attention_flops_per_position / self.kv_bytes_per_position

    def longest_context_with_knee(self, ridge: float) -> float | None:
        """The longest context whose decode step still turns compute-bound at some batch.

        math.inf when every context does (the attention alone is above the ridge); None when none
        does. Solves (2·P + A·n) / (κ·n + a) = ridge for n = c + 1.
        """
        top = 2 * self.matmul_weights - ridge * self.activation_bytes_per_token
        bottom = ridge * self.kv_bytes_per_position - self.attention_flops_per_position
        if bottom <= 0:
            return math.inf if top > 0 or self.attention_floor > ridge else None
        if top <= 0:
            return None
        n = top / bottom
        return n - 1 if n >= 1 else None

    def knee(self, context: int, ridge: float) -> float | None:
        """Batch at which compute time equals memory time at this context, or None if never."""
        per_flops, per_bytes = self._per_sequence(context)
        denominator = per_flops - ridge * per_bytes
        if denominator <= 0:
            return None
        return ridge * self.weight_bytes / denominator


def decode_terms(params: dict[str, Any], bytes_per_element: int) -> DecodeTerms:
    """The terms of `snippets.costs.decode_cost` for one config (layers, d_model, heads, kv_heads, d_ff)."""
    config = decoder_config(params)
    s = bytes_per_element
    return DecodeTerms(
        matmul_weights=costs.matmul_weight_elements(config),
        weight_bytes=s * costs.weight_elements(config),
        attention_flops_per_position=costs.attention_flops_per_position(config),
        kv_bytes_per_position=costs.kv_cache_bytes(config, 1, 1, s),
        activation_bytes_per_token=s * config.layers * costs.activation_elements_per_token(config),
    )


def curve_terms(curve: Curve) -> DecodeTerms:
    """The cost model of a decode curve's config in its dtype."""
    return decode_terms(curve.params, bytes_per_element(curve.dtype) or 0)


# --------------------------------------------------------------------------- curves and records


def is_decode(curve: Curve) -> bool:
    return curve.workload == "decode" and curve.params.get("phase", "decode") == "decode"


def is_prefill(curve: Curve) -> bool:
    return curve.workload == "decode" and curve.params.get("phase") == "prefill"


def is_mha(params: dict[str, Any]) -> bool:
    return params["kv_heads"] == params["heads"]


def by_attention(curves: Sequence[Curve]) -> list[Curve]:
    """Curves ordered MHA first (most KV heads first), then by context."""
    return sorted(curves, key=lambda c: (-c.params["kv_heads"], c.params["context"]))


def curve_records(curve: Curve, status: str | None = "ok") -> list[dict[str, Any]]:
    """The run's records behind one curve (with this status; None for every status), by batch."""
    return curve.records(status)


def kv_share(record: dict[str, Any]) -> float | None:
    """Share of the call's bytes that is KV cache, from the record's bytes_split."""
    split = record.get("bytes_split") or {}
    if "kv_bytes" not in split or not record.get("bytes"):
        return None
    return split["kv_bytes"] / record["bytes"]


def recorded_crossover(records: Sequence[dict[str, Any]]) -> float | None:
    """Weight bytes over KV bytes per sequence, from the records' bytes_split (None without one)."""
    for r in records:
        split = r.get("bytes_split") or {}
        if split.get("kv_bytes") and r["batch"] > 0:
            return split["weight_bytes"] / (split["kv_bytes"] / r["batch"])
    return None


def run_ridges(run: Run, dtypes: Sequence[str]) -> dict[str, float]:
    """This run's ridge (matmul FLOP/s ÷ copy bytes/s) for each dtype it measured both for."""
    copy = run.ceilings.get("copy", {}).get("bytes_per_s")
    ridges = {}
    for dtype in dtypes:
        matmul = run.ceilings.get("matmul", {}).get(dtype)
        if matmul and copy:
            ridges[dtype] = matmul["flops_per_s"] / copy
    return ridges


def first_mode(curves: Sequence[Curve]) -> str:
    """The mode the page states comparisons in: graph before eager, then any other."""
    order = {mode: i for i, mode in enumerate(MODE_ORDER)}
    return min({c.mode for c in curves}, key=lambda m: order.get(m, 9))


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class DecodeRow:
    """One decode curve's line of the knee table."""

    curve: Curve
    first: tuple[int, float] | None  # (batch, KV share of bytes) at the smallest measured batch
    last: tuple[int, float] | None  # and at the largest
    crossover: float | None  # batch at which KV bytes equal weight bytes (from the records)

    @property
    def context(self) -> int:
        return self.curve.params["context"]

    @property
    def formula_crossover(self) -> float:
        return curve_terms(self.curve).crossover_batch(self.context)

    @property
    def disagrees(self) -> bool:
        """The recorded bytes give another crossover than the cost formula."""
        return bool(self.crossover) and abs(self.formula_crossover / self.crossover - 1) > 1e-3


def decode_rows(curves: Sequence[Curve]) -> list[DecodeRow]:
    """Knees and KV shares of decode curves, ordered by attention then context."""
    rows = []
    for c in curves:
        if not is_decode(c):
            continue
        records = [r for r in curve_records(c) if kv_share(r) is not None]
        first = (records[0]["batch"], kv_share(records[0])) if records else None
        last = (records[-1]["batch"], kv_share(records[-1])) if records else None
        rows.append(DecodeRow(c, first, last, recorded_crossover(records)))
    return sorted(rows, key=lambda r: (-r.curve.params["kv_heads"], r.context, r.curve.dtype, r.curve.mode))


@dataclass(frozen=True)
class ConditionRow:
    """The MLP condition of one config at one context: the crossover, the limit and the knee."""

    params: dict[str, Any]
    terms: DecodeTerms
    largest_batch: int | None  # the largest measured batch (None for a formula without measurement)
    ridge: float

    @property
    def context(self) -> int:
        return self.params["context"]

    @property
    def limit(self) -> float:
        return self.terms.intensity_limit(self.context)

    @property
    def knee(self) -> float | None:
        return self.terms.knee(self.context, self.ridge)

    @property
    def crossover(self) -> float:
        return self.terms.crossover_batch(self.context)


def condition_rows(curves: Sequence[Curve], ridge: float) -> list[ConditionRow]:
    """Per attention and context (MHA first): weights, KV per sequence, crossover, limit against the ridge."""
    rows, seen = [], set()
    for c in by_attention(curves):
        size = bytes_per_element(c.dtype)
        key = (tuple(sorted(c.params.items())), c.dtype)
        if key in seen or size is None:
            continue
        seen.add(key)
        rows.append(ConditionRow(c.params, decode_terms(c.params, size), c.batches[-1], ridge))
    return rows


def formula_rows(sweeps: Sequence[Any], ridge: float, size: int) -> list[ConditionRow]:
    """The same conditions for the profile's decode sweeps, by the formula alone (no measurement)."""
    ordered = sorted(sweeps, key=lambda s: (-s.params["kv_heads"], s.params["context"]))
    return [ConditionRow(s.params, decode_terms(s.params, size), None, ridge) for s in ordered]


# --------------------------------------------------------------------------- per operation


@dataclass(frozen=True)
class OperationPoint:
    """One measured decode step beside the roofline of each of its two kinds of work, run one after the
    other: the matmuls (weights read once for the batch) and the attention (each sequence's own cache)."""

    batch: int
    measured_s: float
    matmul_s: float
    attention_s: float
    matmul_bound: str  # memory or compute
    attention_bound: str

    @property
    def sum_s(self) -> float:
        return self.matmul_s + self.attention_s

    @property
    def tokens_per_s(self) -> float:
        """Every sequence gets a token per step: the server's rate."""
        return self.batch / self.measured_s

    @property
    def tokens_per_s_per_sequence(self) -> float:
        """What each sequence (each user) sees: one token per step."""
        return 1 / self.measured_s


def _roofline(cost: tuple[float, float], ceilings) -> tuple[float, str]:
    flops, moved = cost
    compute, memory = flops / ceilings.flops_per_s, moved / ceilings.bytes_per_s
    return max(compute, memory), "compute" if compute >= memory else "memory"


def operation_points(curve: Curve) -> list[OperationPoint]:
    """The curve's measured points with the matmuls' and the attention's rooflines at the run's ceilings."""
    if curve.ceilings is None or not is_decode(curve):
        return []
    terms, context = curve_terms(curve), curve.params["context"]
    found = []
    for p in curve.points:
        matmul, matmul_bound = _roofline(terms.matmul_cost(p.batch), curve.ceilings)
        attention, attention_bound = _roofline(terms.attention_cost(p.batch, context), curve.ceilings)
        found.append(OperationPoint(p.batch, p.median_s, matmul, attention, matmul_bound, attention_bound))
    return found


def matmul_ridge_batch(curve: Curve) -> float | None:
    """Where the matmuls alone turn compute-bound at the run's ceilings: 2·P·b / F = (W + a·b) / BW."""
    if curve.ceilings is None:
        return None
    terms, ridge = curve_terms(curve), curve.ceilings.ridge_intensity
    denominator = 2 * terms.matmul_weights - ridge * terms.activation_bytes_per_token
    return ridge * terms.weight_bytes / denominator if denominator > 0 else None


# --------------------------------------------------------------------------- comparisons


@dataclass(frozen=True)
class AttentionPair:
    """MHA and GQA measured at the same context, with their cost models."""

    context: int
    mha: Curve
    gqa: Curve

    @property
    def group_size(self) -> int:
        return self.gqa.params["heads"] // self.gqa.params["kv_heads"]

    @property
    def crossovers(self) -> tuple[float, float]:
        size = bytes_per_element(self.gqa.dtype) or 0
        before, after = decode_terms(self.mha.params, size), decode_terms(self.gqa.params, size)
        return before.crossover_batch(self.context), after.crossover_batch(self.context)

    @property
    def same_last_batch(self) -> bool:
        return self.mha.points[-1].batch == self.gqa.points[-1].batch

    def roofline_speedup(self, batch: int) -> float | None:
        """MHA's predicted step time over GQA's at `batch` on the run's ceilings, each step the matmuls' roofline
        plus the attention's (`benchmarks.analysis.roofline.predict`): what the roofline predicts GQA saves, which is
        the ratio of the bytes only where both steps are memory-bound. None without ceilings."""
        ceilings = self.gqa.ceilings
        if ceilings is None or self.mha.ceilings is None:
            return None
        before = predict("decode", self.mha.params, self.mha.ceilings, self.mha.dtype, [batch])[0]
        after = predict("decode", self.gqa.params, ceilings, self.gqa.dtype, [batch])[0]
        return before.seconds / after.seconds


def attention_pairs(curves: Sequence[Curve]) -> list[AttentionPair]:
    """Each GQA curve with the MHA curve of the same context, by context."""
    by_context: dict[int, list[Curve]] = {}
    for c in curves:
        by_context.setdefault(c.params["context"], []).append(c)
    pairs = []
    for context, group in sorted(by_context.items()):
        mha = next((c for c in group if is_mha(c.params)), None)
        if mha is not None:
            pairs += [AttentionPair(context, mha, c) for c in group if c.params["kv_heads"] < c.params["heads"]]
    return pairs


def prefill_tokens_per_s(prefill: Curve) -> tuple[MeasuredPoint, float]:
    """The prefill's largest measured batch and its tokens per second there."""
    top = prefill.points[-1]
    return top, top.batch * prefill.params["context"] / top.median_s


def fastest_step(steps: Sequence[Curve]) -> tuple[Curve, MeasuredPoint] | None:
    """The decode step with the most tokens (sequences) per second, and its point."""
    return max(((c, p) for c in steps for p in c.points), key=lambda cp: cp[1].batch / cp[1].median_s, default=None)
