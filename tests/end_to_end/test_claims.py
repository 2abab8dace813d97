"""Every causal sentence on the built site agrees with the diagnosis of the data it speaks of.

The pages mark each verdict (`span.verdict`, with the curve, the regime and, for one point, the batch);
this test reads them back from the built HTML of the committed site and of the SYNTHETIC site (whose
curves cover all three regimes), diagnoses the same curves again, and compares. It also checks that no
page output outside those marked sentences calls anything overhead-bound on its own authority.
"""

from __future__ import annotations

import math
import re
import statistics
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from benchmarks.analysis.published.calibration import committed_study
from benchmarks.analysis.published.roofline_check import BREAKS, checks
from benchmarks.analysis.roofline import calibration_file, decode, recommend
from benchmarks.analysis.roofline.calculator import gpu_ridge_batch
from benchmarks.analysis.roofline.curves import curves, group_by
from benchmarks.analysis.roofline.decode import decode_terms
from benchmarks.analysis.roofline.diagnosis import diagnose
from benchmarks.contract.results import load_results
from benchmarks.gpus import BYTES_PER_ELEMENT, find_gpu
from benchmarks.site import sweep_words, text
from benchmarks.site.data import load_site_data
from snippets.costs import resnet50_cost
from tests.end_to_end.test_site_build import ROOT, _tmp, built_site, write_synthetic_results, write_synthetic_sweeps

pytestmark = pytest.mark.build
OVER_A_CEILING = re.compile(r"\b(?:[1-9]\d{2,}|\d{4,}) % of the measured")  # a share above 100 % of a ceiling
# a diagnosis in words: only verdict spans may say it (the roofline's predictions say "memory-bound at every
# batch" or "compute-bound from the start", and prose explains the regimes in general)
CLAIM = re.compile(r"overhead-bound|bound by (?:fixed )?per-call|(?:is|was) overhead\b")


class _Verdicts(HTMLParser):
    """The verdict spans of a page, and the text of its notebook outputs outside them (prose cells,
    code, and the charts' inert specs left out)."""

    VOID = frozenset({"br", "img", "input", "meta", "link", "hr", "source", "col", "wbr"})

    def __init__(self):
        super().__init__()
        self.verdicts: list[dict[str, str]] = []
        self.verdict_texts: list[str] = []
        self.loose: list[str] = []
        self._stack: list[str] = []  # per open tag: "output", "verdict", "skip" or ""

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        attrs = dict(attrs)
        kind = ""
        if tag == "div" and "jp-OutputArea-output" in (attrs.get("class") or "").split():
            kind = "output"
        elif tag == "span" and attrs.get("class") == "verdict":
            self.verdicts.append(attrs)
            self.verdict_texts.append("")
            kind = "verdict"
        elif tag in ("template", "pre", "code", "script", "style"):
            kind = "skip"
        elif tag == "dl" and "glossary" in (attrs.get("class") or "").split():
            kind = "skip"  # the glossary defines the words; it diagnoses nothing
        self._stack.append(kind)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self._stack:
            self._stack.pop()

    def handle_data(self, data):
        if "verdict" in self._stack and self.verdict_texts:
            self.verdict_texts[-1] += data
        if "output" in self._stack and "verdict" not in self._stack and "skip" not in self._stack:
            self.loose.append(data)


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("index.html") if "results" not in p.relative_to(site).parts)


def _diagnoses(results: Path) -> dict[str, object]:
    found = {}
    for run in load_results(results).runs:
        for workload in {r["workload"] for r in run.records}:
            for curve in curves(run, workload):
                key = f"{run.id}|{workload}|{curve.label}|{curve.dtype}|{curve.mode}|{curve.cache}"
                found[key] = diagnose(curve)
    return found


def _sweep_segments(sweeps: Path) -> dict[str, set[tuple[str, str]]]:
    """Per model sweep, the (regime, 'first-last') stretches its diagnosis finds (a stretch with no verdict,
    where a count missed part of the work, states no regime and is left out)."""
    found = {}
    for sweep in load_results(sweeps).sweeps if sweeps.exists() else []:
        diagnosis = sweep_words.from_document(sweep.doc).diagnosis
        segments = diagnosis.segments if diagnosis else ()
        found[f"sweep|{sweep.id}"] = {
            (s.regime, f"{s.first}-{s.last}") for s in segments if s.regime != recommend.UNKNOWN
        }
    return found


def _check(site: Path, results: Path, sweeps: Path) -> set[str]:
    diagnoses, sweep_segments = _diagnoses(results), _sweep_segments(sweeps)
    regimes, problems = set(), []
    stated_by_sweep: dict[str, set[tuple[str, str]]] = {}
    for page in _pages(site):
        parser = _Verdicts()
        parser.feed(page.read_text(encoding="utf-8"))
        for verdict, words in zip(parser.verdicts, parser.verdict_texts, strict=True):
            if verdict["data-curve"].startswith("sweep|"):
                stated = (verdict["data-regime"], verdict.get("data-batches"))
                if stated not in sweep_segments.get(verdict["data-curve"], set()):
                    problems.append(f"{page}: {verdict['data-curve']} says {stated}, not found by its diagnosis")
                if OVER_A_CEILING.search(words):
                    problems.append(f"{page}: {verdict['data-curve']} quotes a share over 100 % of a ceiling: {words}")
                stated_by_sweep.setdefault(verdict["data-curve"], set()).add(stated)
                regimes.add(verdict["data-regime"])
                continue
            d = diagnoses.get(verdict["data-curve"])
            if d is None:
                problems.append(f"{page}: a verdict about an unknown curve {verdict['data-curve']}")
                continue
            batch = verdict.get("data-batch")
            expected = d.at(int(batch)).regime if batch else ",".join(dict.fromkeys(d.regimes))
            if verdict["data-regime"] != expected:
                problems.append(f"{page}: {verdict['data-curve']} at {batch}: says {verdict['data-regime']}, "
                                f"the diagnosis {expected}")  # fmt: skip
            regimes |= set(verdict["data-regime"].split(","))
        text = " ".join(parser.loose)
        for match in CLAIM.finditer(text):
            problems.append(f"{page}: an unmarked causal claim: …{text[max(0, match.start() - 80) : match.end()]}")
    for curve, segments in sweep_segments.items():  # every sweep's every stretch is stated, and checked above
        if stated_by_sweep.get(curve, set()) != segments:
            problems.append(f"{curve}: the site states {sorted(stated_by_sweep.get(curve, ()))}, its diagnosis "
                            f"finds {sorted(segments)}")  # fmt: skip
    assert not problems, "\n".join(problems)
    return regimes


def test_committed_site_claims_agree_with_the_diagnosis():
    regimes = _check(built_site("committed"), ROOT / "benchmarks" / "results", ROOT / "benchmarks" / "sweeps")
    assert regimes, "the committed site states no verdict"


def test_synthetic_site_claims_cover_every_regime_and_agree():
    results, sweeps = _tmp("claims-results-"), _tmp("claims-sweeps-")
    write_synthetic_results(results)
    write_synthetic_sweeps(sweeps)
    assert _check(built_site("synthetic"), results, sweeps) == {"overhead", "memory", "compute"}


# --------------------------------------------------------------------------- predictions and their forecasts


def _text(page: Path, tables: bool = True) -> str:
    """A built page's visible text, tags and chart specs left out, entities decoded; `tables=False` leaves its
    tables out too (the prose alone)."""
    hidden = "script|template|style" if tables else "script|template|style|table"
    html = re.sub(rf"<({hidden})\b.*?</\1>", " ", page.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _decode_step_s(params: dict, context: int, batch: int, ceilings, size: int = 2) -> float:
    """One decode step by hand: the matmuls' roofline plus the attention's (`DecodeTerms`, not `predict`)."""
    terms = decode_terms(params, size)
    (mf, mb), (af, ab) = terms.matmul_cost(batch), terms.attention_cost(batch, context)
    rate, bandwidth = ceilings.flops_per_s, ceilings.bytes_per_s
    return max(mf / rate, mb / bandwidth) + max(af / rate, ab / bandwidth)


def test_the_published_pages_ratios_verdicts_and_cross_validation_are_what_the_data_files_give():
    said = _text(built_site("committed") / "published" / "index.html")
    found = checks()
    # every figure's ratio as the table states it, and none above 1 unless it breaks an assumption
    for c in found:
        assert f" {c.ratio:.2f} " in said or f" {c.ratio:.2g}: above the roofline" in said, c.row.id
        assert c.ratio < 1 or set(c.row.model.departures) & BREAKS or "batch-unstated" in c.row.model.departures
    # a time per token is the mean decode step, each step summed per operation (independent arithmetic)
    for c in found:
        m = c.row.model
        if m.kind == "decode-step" and m.parallelism == "none":
            ceilings = find_gpu(m.gpu).ceilings(m.dtype)
            steps = [_decode_step_s(m.params, m.input_tokens + k, m.batch, ceilings) for k in range(m.output_tokens)]
            assert c.predicted == pytest.approx(m.batch * len(steps) / sum(steps), rel=1e-9)
    # the takeaway says which set its share covers, and the summary gives the median over all of them
    clean = [c.ratio for c in found if not set(c.row.model.departures) & BREAKS]
    assert (
        f"the {len(clean)} published figures that keep to its assumptions reached "
        f"{min(clean) * 100:.0f}–{max(clean) * 100:.0f} % of it (median {statistics.median(clean) * 100:.0f} %)"
    ) in said
    assert f"Published ÷ ceiling over all {len(found)}: median " in said
    # the cross-validation's first lines: median and p90 |error|, recomputed here from the forecasts themselves
    study = committed_study()
    fitted = sorted(abs(o.forecast / o.figure.published - 1) for o in study.outcomes if o.figure.fit)
    median, p90 = statistics.median(fitted), fitted[math.ceil(0.9 * len(fitted)) - 1]
    assert f"Leave one source out, median |error| {median * 100:.0f} %, 90th percentile {p90 * 100:.0f} %" in said
    every = sorted(abs(o.error) for o in study.outcomes)
    shown = f"over all {len(every)} figures from {study.sources} sources, median {statistics.median(every) * 100:.0f} %"
    assert shown in said
    for o in study.outcomes:
        assert f"{o.figure.id} {o.figure.kind}" in said and f"{o.error * 100:+.0f} %" in said, o.figure.id
    # the T4 table: ResNet-50 in fp32 sits on the ridge by the site's 5 % rule under the stated count
    t4 = find_gpu("NVIDIA T4").ceilings("float32")
    (f1, m1), (f2, m2) = resnet50_cost(1, 4), resnet50_cost(2, 4)
    assert abs((f2 - f1) / (m2 - m1) / t4.ridge_intensity - 1) < 0.05
    assert "undecided: each extra image within 5 % of the ridge (every elementwise pass through memory)" in said
    assert "critical batch" not in said and "predicted knee" not in said


def test_the_decode_pages_gqa_speedups_are_the_rooflines():
    said = _text(built_site("committed") / "decode" / "index.html")
    checked = 0
    for run in load_site_data(ROOT / "benchmarks" / "results").shown_for("decode"):
        steps = [c for c in curves(run, "decode") if decode.is_decode(c) and len(c.points) >= 2]
        for group in group_by(steps, "dtype", "cache").values():
            mode = decode.first_mode(group)
            for pair in decode.attention_pairs([c for c in group if c.mode == mode]):
                if not pair.same_last_batch or pair.mha.ceilings is None:
                    continue
                batch, size = pair.mha.points[-1].batch, BYTES_PER_ELEMENT[pair.mha.dtype]
                mha = _decode_step_s(pair.mha.params, pair.context, batch, pair.mha.ceilings, size)
                gqa = _decode_step_s(pair.gqa.params, pair.context, batch, pair.gqa.ceilings, size)
                assert f"where the roofline predicts {text.sig(mha / gqa, 3)}× at the run's ceilings" in said
                checked += 1
    assert checked, "the committed decode page compares no MHA and GQA pair"
    assert "where the counted bytes predict" not in said


def test_home_guide_and_calculator_state_one_count_and_the_forecasts_error():
    site = built_site("committed")
    home = _text(site / "index.html")
    h100 = find_gpu("NVIDIA H100 SXM")
    stated = gpu_ridge_batch(h100, "bfloat16", 4096)  # the calculator's closed form, not the home page's code
    cached = gpu_ridge_batch(h100, "bfloat16", 4096, 8, "cache")
    assert f"ridge batch ≈ {stated:,.0f} with every layer's activations through memory" in home
    assert f"(≈ {cached:,.0f} with activations kept in cache, the other bound" in home
    decode, gemm = (
        calibration_file.committed().expected_for("decode", 1),
        calibration_file.committed().expected_for("GEMM", 1),
    )
    guide = _text(site / "guide" / "index.html")
    assert f"expected error ±{decode.median * 100:.0f} % median, ±{decode.p90 * 100:.0f} % at p90" in guide
    assert "79.6 GiB as its driver reports it" in guide
    for page in (home, _text(site / "calculator" / "index.html")):
        assert f"expected error ±{gemm.median * 100:.0f} % median, ±{gemm.p90 * 100:.0f} % at p90" in page


# --------------------------------------------------------------------------- ranges over a table's rows

NUMBER = r"\d+(?:\.\d+)?"
RANGE = re.compile(rf"(?<![\d.])({NUMBER})(?: ?(?:–|to) ?)({NUMBER})(?![\d.])")
NONE_BELOW = re.compile(rf"none (?:fell|falls|is) below ({NUMBER})")


class _Tables(HTMLParser):
    """Every table of a page: its header cells and the text of each row's cells."""

    def __init__(self):
        super().__init__()
        self.tables: list[tuple[list[str], list[list[str]]]] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append(([], []))
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self.tables:
            headers, rows = self.tables[-1]
            if not headers:
                headers.extend(self._row)
            else:
                rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def numeric_columns(tables) -> list[tuple[str, list[str]]]:
    """(header, cells) of every column whose cells are all plain numbers, in tables of three rows or more."""
    found = []
    for headers, rows in tables:
        if len(rows) < 3:
            continue
        for i, header in enumerate(headers):
            cells = [row[i] for row in rows if i < len(row)]
            if len(cells) == len(rows) and all(re.fullmatch(NUMBER, c) for c in cells):
                found.append((header, cells))
    return found


# how a sentence names the rows a range covers: 'the 11 rows that …', 'the other 3', 'over the 15 whose …',
# '(2 figures)', '12 of the curve service'
NAMED_ROWS = re.compile(r"\b(\d+) (?:rows?|figures?|cases?|of the|whose)\b|\bother (\d+)\b|\b(?:over|on) the (\d+)\b")


def names_rows(sentence: str, total: int) -> bool:
    """Whether the sentence names a subset of the table's rows: a count of them, below the table's."""
    counts = [int(n) for match in NAMED_ROWS.finditer(sentence) for n in match.groups() if n]
    return any(0 < n < total for n in counts)


def range_problems(said: str, tables) -> list[str]:
    """A range (or a 'none fell below') whose ends are values of a table's numeric column must cover every row of
    that column, or its sentence must name the rows it covers (how many, and which: 'the 11 rows that compare a
    throughput', 'the other 3, which …')."""
    problems = []
    sentences = re.split(r"(?<=[.:])\s+(?=[A-Z])", said)
    for header, cells in numeric_columns(tables):
        values = [float(c) for c in cells]
        low, high = min(values), max(values)
        for sentence in sentences:
            for match in RANGE.finditer(sentence):
                a, b = match.group(1), match.group(2)
                if a not in cells or b not in cells or float(a) >= float(b):
                    continue
                if (float(a), float(b)) == (low, high):
                    continue
                n = sum(float(a) <= v <= float(b) for v in values)
                if not names_rows(sentence, len(values)):
                    problems.append(f"'{header}': {a}–{b} spans {n} of {len(values)} rows, unnamed: {sentence}")
            for match in NONE_BELOW.finditer(sentence):
                if match.group(1) in cells and float(match.group(1)) != low:
                    problems.append(f"'{header}': none below {match.group(1)}, but a row has {low:g}: {sentence}")
    return problems


def test_the_range_rule_catches_a_range_that_skips_rows_and_passes_one_that_names_them():
    """SYNTHETIC table and sentences: the old LLM-serving sentence fails the rule; the rows named, it passes."""
    table = [(["figure", "ratio"], [["a", "0.67"], ["b", "0.54"], ["c", "0.77"], ["d", "0.26"], ["e", "0.16"]])]
    old = "For throughputs it runs from 0.54 to 0.77: no engine reached the roofline, and none fell below 0.54 of it."
    assert len(range_problems(old, table)) == 2
    new = ("Over all 5 rows it runs from 0.16 to 0.77: on the 3 rows that compare a throughput, 0.54–0.77; on the "
           "other 2, 0.16–0.26.")  # fmt: skip
    assert range_problems(new, table) == []


def test_every_range_on_the_committed_site_covers_its_table_or_names_its_rows():
    problems = []
    for page in _pages(built_site("committed")):
        parser = _Tables()
        parser.feed(page.read_text(encoding="utf-8"))
        prose = _text(page, tables=False)  # a cell's own spread, "15.6 (12.6–18.6)", claims nothing of a column
        problems += [f"{page}: {p}" for p in range_problems(prose, parser.tables)]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- statements the data contradicted


def test_statements_the_data_contradicts_are_gone_and_their_computed_ones_are_there():
    site = built_site("committed")
    serving, llm = _text(site / "serving" / "index.html"), _text(site / "llm_serving" / "index.html")
    guide, published = _text(site / "guide" / "index.html"), _text(site / "published" / "index.html")
    theory, decode_page = _text(site / "theory" / "index.html"), _text(site / "decode" / "index.html")
    gone = {
        serving: ["nothing below was timed on a server", "stays nearly flat as the rate rises",
                  "Batching moves the corner to the right", "At low load the max delay is most of the waiting",
                  "both batch handler styles", "a precision the files read do not state",
                  "on a small machine shared with other work it follows that work"],
        llm: ["none fell below", "meets the budget up to about", "24.0 GiB", "eight kernels per layer"],
        guide: ["32,768", ", about 42.9 ms"],
        published: ["Every curve on this site's other pages is measured", "most of the predicted time is"],
        theory: ["only a lower ridge batch"],
        decode_page: ["it says, attention costs little"],
    }  # fmt: skip
    for said, phrases in gone.items():
        for phrase in phrases:
            assert phrase not in said, phrase
    assert "One section of this page was timed on a real server" in serving
    assert "On this curve no policy's p99 stays flat" in serving or "stays within 10 % of its value" in serving
    assert "Most of the waiting at " in serving
    assert "carry that noise" in serving or "(noise low:" in serving
    assert "records int8 weights and input for ResNet-50" in serving and "policies in all" in serving
    assert "meets the budget at steady state up to about" in llm and "counting the wait for the first token" in llm
    assert "22.5 GiB (as its driver reports it)" in llm and "kernels this model counts in a layer" in llm
    assert "Its context is at most 8,192 tokens" in guide
    assert "% in operations bound by compute" in published
    assert "not the CPU's peak" in theory and "注意力機制所消耗的時間被大幅減少" in decode_page
