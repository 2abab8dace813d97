"""The reader's name for a language model (`llm:MODEL`, or `llm:custom` with --param sizes) and its tensor-parallel
width, turned into the registry's model or one line saying what to give instead: one reading for `serve llm:` and
`predict llm:`."""

from __future__ import annotations

from typing import Any

from benchmarks.commands.arguments import whole
from benchmarks.commands.choices import Refused
from benchmarks.llm_models import MODELS, PublishedModel, find_model, tensor_parallel_split
from snippets.costs import DecoderConfig

CUSTOM_PARAMS = {"layers": int, "d_model": int, "heads": int, "kv_heads": int, "d_ff": int, "ffn": str, "vocab": int,
                 "context": int}  # fmt: skip
CUSTOM_DEFAULTS = {"ffn": "swiglu", "vocab": 32000, "context": 8192}


def model_named(source: str, params: list[str]) -> PublishedModel:
    """SOURCE llm:MODEL (a published model, any case) or llm:custom with its --param sizes, as the registry's model."""
    kind, sep, name = source.partition(":")
    if kind.strip().lower() != "llm" or not sep or not name.strip():
        raise Refused(f"SOURCE {source!r}: write llm:MODEL (one of {', '.join(m.name for m in MODELS)}) or llm:custom")
    if name.strip().lower() != "custom":
        if params:
            raise Refused(f"--param is for llm:custom; {name} has its published configuration")
        found = find_model(name)
        if found is None:
            raise Refused(f"unknown model {name!r}; choose from {', '.join(m.name for m in MODELS)}, or llm:custom")
        return found
    values: dict[str, Any] = dict(CUSTOM_DEFAULTS)
    given: set[str] = set()
    for pair in params:
        key, eq, value = pair.partition("=")
        key = key.strip()
        if not eq or key not in CUSTOM_PARAMS:
            raise Refused(f"--param {pair!r}: write KEY=VALUE with KEY one of {', '.join(CUSTOM_PARAMS)}")
        if key in given:
            raise Refused(f"--param {pair!r}: {key} is given twice")
        given.add(key)
        values[key] = value.strip().lower() if CUSTOM_PARAMS[key] is str else whole(value, f"--param {key}", 1, 10**7)
    missing = [k for k in ("layers", "d_model", "heads", "kv_heads", "d_ff") if k not in values]
    if missing:
        raise Refused(f"llm:custom needs --param for {', '.join(missing)}")
    try:
        config = DecoderConfig(values["layers"], values["d_model"], values["heads"], values["kv_heads"],
                               values["d_ff"], values["ffn"])  # fmt: skip
    except ValueError as exc:
        raise Refused(f"llm:custom: {exc}") from None
    return PublishedModel("custom decoder", config, values["vocab"], False, "the --param values given",
                          max_context=values["context"])  # fmt: skip


def check_split(model: PublishedModel, tp: int) -> None:
    """Refuse a width the engines refuse: attention heads, and KV heads or their copies, must divide over it."""
    why = tensor_parallel_split(model, tp)
    if why is not None:
        raise Refused(f"--tp {tp}: {model.name} cannot be split so: {why} (vLLM refuses it too)")
