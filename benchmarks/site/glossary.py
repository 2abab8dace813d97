"""The site's vocabulary: one name per idea, each defined once here and linked where it first appears on
a page (`render.term`, or a markdown link to glossary/#slug).

Pure Python (no torch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    name: str
    definition: str
    see: str = ""  # a page of this site that shows it, e.g. "theory/"

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")


TERMS: tuple[Term, ...] = (
    Term(
        "ridge batch",
        "The batch at which a roofline says the arithmetic starts to take longer than moving the bytes: computed, "
        "never measured. For a layer whose weights dominate its bytes it is b* = (F/BW)·(s/2), with F the peak "
        "FLOP/s, BW the memory bandwidth and s the bytes per weight. It depends on which F and BW are used: a "
        "datasheet's peaks or the ceilings a run measured (a large matmul, a large copy), which make it a prediction, "
        "or the rates a curve's own kernels reached, read off that curve, which make it a fit.",
        "theory/",
    ),
    Term(
        "ridge intensity",
        "F/BW: the FLOP per byte at which compute time equals memory time on a device. A layer whose arithmetic "
        "intensity is below it is memory-bound.",
        "theory/",
    ),
    Term(
        "arithmetic intensity",
        "The FLOPs of a call divided by the bytes it must move. A Linear layer's grows about as 2·b/s with the batch b "
        "while its weights dominate the bytes.",
        "theory/",
    ),
    Term(
        "measured knee",
        "Where a measured latency curve bends from flat to growing: the break of a two-segment line fitted to log "
        "time against log batch, reported only when the time grows at least like the square root of the batch "
        "beyond it. Compared on every page with the ridge batch.",
        "mlp/",
    ),
    Term(
        "roofline",
        "The lower bound t ≥ max(FLOPs/F, bytes/BW) on a call's time: the slower of doing its arithmetic and moving "
        "its bytes. Drawn dashed on the site's charts.",
        "theory/",
    ),
    Term(
        "overhead-bound",
        "A call whose time is mostly fixed costs (Python, dispatch, kernel launches), at least half of it by the "
        "site's diagnosis. Flat in the batch and in the width: a false knee.",
        "regimes/",
    ),
    Term(
        "memory-bound",
        "A call whose roofline time is set by the bytes it moves. Flat in the batch while the weights dominate the "
        "bytes; grows with the size of the weights.",
        "regimes/",
    ),
    Term(
        "compute-bound",
        "A call whose roofline time is set by its arithmetic. Its time grows in proportion to the batch.",
        "regimes/",
    ),
    Term(
        "resident",
        "Weights timed in a hot loop, one copy: small weights are then read from the cache, not from memory, and the "
        "call looks faster than it will be in a server.",
        "regimes/",
    ),
    Term(
        "rotated",
        "Weights timed through enough copies that one pass over them spans three times the last-level cache, so "
        "every call reads its weights from memory. The site's default.",
        "methodology/",
    ),
    Term(
        "eager",
        "PyTorch calls made one after another from Python, each operation launched as its own kernel: what user code "
        "sees. Timed back to back.",
        "regimes/",
    ),
    Term(
        "graph",
        "Replaying a captured CUDA graph: the whole call's kernels launched at once, with most of the launch cost "
        "gone. The hardware's own curve.",
        "regimes/",
    ),
    Term(
        "compile",
        "The model run through torch.compile, which fuses operations and calls the kernels from generated code.",
        "regimes/",
    ),
    Term(
        "tile",
        "The block of the output (64 to 256 rows and columns) that one thread block of a matrix kernel computes. "
        "One row past a multiple of the tile height adds a whole, nearly empty row of tiles.",
        "steps/",
    ),
    Term(
        "wave",
        "The tiles an SM-full of thread blocks runs at once. One tile past a multiple of the SM count adds a "
        "mostly idle extra wave.",
        "steps/",
    ),
    Term(
        "quartile band",
        "The shaded band around a measured line: from the first to the third quartile of the timed samples of each "
        "point (half the samples lie inside it).",
        "methodology/",
    ),
    Term(
        "KV cache",
        "The keys and values of every token a sequence has seen, kept per layer so that a decode step computes "
        "attention over them without recomputing them. Read in full by every decode step.",
        "decode/",
    ),
    Term(
        "the article",
        "Finbarr Timbers, “How does batching work on modern GPUs?”, which this site started from; named and linked "
        "on the home page.",
        "",
    ),
)

BY_SLUG = {t.slug: t for t in TERMS}


def find(words: str) -> Term:
    """The term named `words` (any case), or KeyError naming the known ones."""
    slug = re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-")
    if slug not in BY_SLUG:
        raise KeyError(f"no glossary term {words!r}; known: {', '.join(BY_SLUG)}")
    return BY_SLUG[slug]
