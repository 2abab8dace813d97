"""MkDocs hooks for the site: results checks, a self-served chart bundle, chart exports.

- on_config: make the repository importable by the notebooks' kernels (run over local sockets, so the build
  prints no warning per page: hooks/jupyter/), check every results
  and sweep file (a bad one stops the build with a message naming the file and the field) and give
  this build a fresh directory for staged charts.
- on_pre_page: a page whose code fails stops the build with one line (the results file it was drawing, when the
  failure came from one; see benchmarks/site/render.py's drawing_from), not the notebook's whole traceback.
- on_files: add the Vega/Vega-Lite/vega-embed bundle (written by vl-convert, cached per
  vl-convert version) as one site file that every page shares, as a classic script so that a page
  opened from disk (file://) draws its charts too; and run the notebook pages' code side by side, one page per
  core, from the first page's render (benchmarks/site/page_pool.py; BATCHING_PAGE_WORKERS=1 runs them in turn).
- on_page_content: drop what nbconvert inlines into each notebook page (its 600 KB stylesheet,
  MathJax and Mermaid loaders that would fetch from another host), put the CPU notice under each
  page's title while every committed measurement is from a CPU, render as MathML the $$...$$ formulas
  that the page's own markdown cells wrote (and no other text: formulas never come from data), and
  resolve chart links; keep every table cell's hyphenated, dashed or slashed word on one line
  (benchmarks/site/whole_words.py).
- on_page_content also gives every heading a permalink, keeps moved chart ids as anchors and fills in the
  charts' embed snippets with the site's address (benchmarks/site/charts/links.py).
- on_post_build: write every staged chart as site/charts/<id>.{json,csv,svg,png} (an SVG and PNG drawn before
  from the same spec by the same vl-convert are taken from .cache/exports/, the others drawn one process per core:
  benchmarks/site/chart_export.py) and copy the published results files
  to site/results/ and the model sweeps to site/sweeps/; then log one line of where the build spent its time.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.contract.results import KNOWN_VALID_ENV, KnownValid  # noqa: E402
from benchmarks.contract.text import printable  # noqa: E402
from benchmarks.site import chart_export, charts, notice, page_pool  # noqa: E402
from benchmarks.site.charts import links  # noqa: E402
from benchmarks.site.data import SiteDataError, load_site_data  # noqa: E402
from benchmarks.site.model_sweeps import load_sweeps  # noqa: E402
from benchmarks.site.page_pool import PagePool  # noqa: E402
from benchmarks.site.whole_words import keep_table_words_whole  # noqa: E402

BUNDLE_PATH = "assets/javascripts/vega-bundle.js"
EXPORT_CACHE = ROOT / ".cache" / "exports"
PAGE_TIMES = ROOT / ".cache" / "page-seconds.json"  # the last build's seconds per page: the longest start first
KERNEL_IPC_ENV = "BATCHING_KERNEL_IPC"
_STATE: dict[str, Path] = {}
_TIMES: dict[str, float] = {}  # seconds per page (its code run and rendered), and the build's start
_LOG = logging.getLogger("mkdocs.hooks.site")

_STYLE = re.compile(r"<style[^>]*>.*?</style>", re.S | re.I)
_SCRIPT = re.compile(r"<script(?![^>]*application/json)[^>]*>.*?</script>", re.S | re.I)
_MATH = re.compile(r"\$\$(.+?)\$\$", re.S)
_MARKDOWN_CELL = re.compile(r"^# %% \[markdown\][^\n]*\n((?:#[^\n]*(?:\n|$))*)", re.M)


def on_config(config):
    _TIMES.clear()
    _TIMES["(start)"] = time.perf_counter()
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ["JUPYTER_CONFIG_DIR"] = str(Path(__file__).with_name("jupyter"))  # kernels over IPC, not TCP
    sockets = Path(tempfile.mkdtemp(prefix="batching-kernels-"))
    os.environ[KERNEL_IPC_ENV] = str(sockets / "kernel")  # this build's own socket files (hooks/jupyter/)
    _STATE["sockets"] = sockets
    try:
        data = load_site_data()
        sweeps = load_sweeps()
    except SiteDataError as exc:
        raise PluginError(str(exc)) from None
    _STATE["runs"] = data.runs  # type: ignore[assignment]
    _STATE["sweeps"] = sweeps  # type: ignore[assignment]
    _STATE["notice"] = notice.cpu_notice(data)  # type: ignore[assignment]
    _STATE["notice_line"] = notice.cpu_line(data)  # type: ignore[assignment]
    stage = Path(tempfile.mkdtemp(prefix="batching-charts-"))
    os.environ[charts.STAGE_ENV] = str(stage)
    os.environ[charts.CHECK_SPECS_ENV] = "0"  # the tests check every page's specs; the build draws them
    _STATE["stage"] = stage
    _share_validated([*data.runs, *sweeps], Path(tempfile.mkdtemp(prefix="batching-valid-")))
    return config


def _share_validated(documents, directory: Path) -> None:
    """Tell every page's process which files this build validated, so that each parses them without validating
    them again (a file changed since is validated again: benchmarks.contract.results.KnownValid)."""
    known = KnownValid()
    for document in documents:
        known.add(document.path)
    where = directory / "validated.json"
    known.save(where)
    os.environ[KNOWN_VALID_ENV] = str(where)
    _STATE["validated"] = directory


def failure_line(source: str, exc: BaseException) -> str:
    """One line for a page that failed: what its code raised (a notebook's failure carries the error's name and
    value; a PageDataError's value already names the results file), never the notebook's whole traceback."""
    name = getattr(exc, "ename", None) or type(exc).__name__
    value = getattr(exc, "evalue", None)
    value = str(exc) if value is None else str(value)
    first = (value.strip().splitlines() or [""])[0][:400]
    if name == "PageDataError":
        return f"{source}: {first}"
    return f"{source}: the page's code failed: {name}: {first}"


def on_pre_page(page, config, files):
    render = page.render

    def render_or_one_line(config, files):
        started = time.perf_counter()
        try:
            return render(config, files)
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(printable(failure_line(page.file.src_uri, exc))) from None
        finally:
            pool = _STATE.get("pages")
            ran = pool.seconds.get(page.file.abs_src_path) if pool else None  # its code's time, not its wait
            _TIMES[page.file.src_uri] = time.perf_counter() - started if ran is None else ran

    page.render = render_or_one_line
    return page


def _bundle() -> str:
    import vl_convert

    version = getattr(vl_convert, "__version__", "unknown")
    cache = ROOT / ".cache" / f"vega-bundle-{version}.js"
    if cache.exists():
        return cache.read_text(encoding="utf-8")
    text = vl_convert.javascript_bundle()
    chart_export.keep(cache, text.encode("utf-8"))  # whole or not at all: another build may be reading it
    return text


def _classic(bundle: str) -> str:
    """The bundle as a classic script: vl-convert writes it as a module (top-level declarations, strict
    mode), which a browser refuses to run on a page opened from disk. Inside one function its names stay
    its own, as they would in a module; it sets window.vegaEmbed as before."""
    return '(function () {\n"use strict";\n' + bundle + "\n})();\n"


def on_files(files, config):
    files.append(File.generated(config, BUNDLE_PATH, content=_classic(_bundle())))
    notebooks = [f.abs_src_path for f in files if f.is_documentation_page() and f.src_uri.endswith(".py")]
    _run_pages_side_by_side(notebooks)
    return files


def _run_pages_side_by_side(paths: list[str]) -> None:
    """Answer mkdocs-jupyter's conversions from a pool that runs every notebook page's code at once."""
    from mkdocs_jupyter import convert

    original = _STATE.get("nb2html") or convert.nb2html
    _STATE["nb2html"] = original  # type: ignore[assignment]
    pool = PagePool(paths, _STATE["sockets"], PAGE_TIMES)
    _STATE["pages"] = pool  # type: ignore[assignment]
    convert.nb2html = lambda path, **options: pool.convert(original, path, **options)


def _root_prefix(page) -> str:
    depth = page.url.count("/") if page.url else 0
    return "../" * depth


def _tex_key(tex: str) -> str:
    return " ".join(tex.split())


def authored_formulas(source: str) -> set[str]:
    """The $$...$$ formulas that the markdown cells of a page's source (a percent-format notebook)
    write, whitespace normalised: the only formulas its page may render."""
    cells = ("\n".join(line[2:] if line.startswith("# ") else line[1:] for line in cell.splitlines())
             for cell in _MARKDOWN_CELL.findall(source))  # fmt: skip
    return {_tex_key(tex) for cell in cells for tex in _MATH.findall(cell)}


def render_math(html_text: str, authored: set[str]) -> str:
    """Each $$...$$ of the page's HTML that its own source wrote as a formula, as MathML; anything else
    between two '$$' (text that came from data, which the renderer writes with '$' as &#36; anyway)
    stays text."""
    import html

    from latex2mathml.converter import convert

    def one(match: re.Match) -> str:
        tex = html.unescape(match.group(1)).strip()
        if _tex_key(tex) not in authored:
            return match.group(0).replace("$", "&#36;")
        return f'<div class="eq">{convert(tex, display="block")}</div>'

    return _MATH.sub(one, html_text)


def _with_notice(html_text: str, page) -> str:
    """The CPU notice under the page's title (at the top when it has none): in full on the page that explains it,
    as one line linking there on every other."""
    full = page.url == notice.EXPLAINED_ON
    text = _STATE.get("notice" if full else "notice_line")
    if not text:
        return html_text
    end = html_text.find("</h1>")
    at = end + len("</h1>") if end >= 0 else 0
    return html_text[:at] + str(text) + html_text[at:]


def _lasting_links(html_text: str, page, config) -> str:
    """Permalinks on every heading, old chart ids kept as anchors, embed snippets' absolute addresses."""
    html_text = links.moved_here(links.permalinks(html_text), links.built_ids(html_text))
    published = bool(os.environ.get("SITE_URL"))  # mkdocs.yml falls back to 127.0.0.1 without it
    return links.absolute(html_text, config["site_url"] or "/", page.canonical_url or page.abs_url or "", published)


def on_page_content(html_text, page, config, files):
    if page.file.src_uri.endswith(".py"):
        html_text = _STYLE.sub("", html_text)
        html_text = _SCRIPT.sub("", html_text)
        source = Path(page.file.abs_src_path).read_text(encoding="utf-8")
        html_text = render_math(html_text, authored_formulas(source))
    html_text = keep_table_words_whole(_lasting_links(html_text, page, config))
    return _with_notice(html_text, page).replace(charts.SITE_ROOT, _root_prefix(page))


def time_spent(
    times: dict[str, float], total_s: float, exports_s: float, drawn: int, cached: int, workers: int = 1
) -> str:
    """One line: the build's seconds, its pages' (their code's, summed over the pages run side by side) and the
    three slowest, and its chart exports'."""
    pages = {name: seconds for name, seconds in times.items() if not name.startswith("(")}
    slowest = sorted(pages.items(), key=lambda item: -item[1])[:3]
    named = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in slowest)
    side = f", {workers} at a time" if workers > 1 else ""
    return (
        f"site built in {total_s:.0f} s: {len(pages)} pages {sum(pages.values()):.0f} s{side} (slowest {named}); "
        f"{drawn + cached} charts exported in {exports_s:.0f} s ({drawn} drawn, {cached} from .cache/exports/)"
    )


def _close_pages(*, keep_times: bool) -> None:
    pool = _STATE.pop("pages", None)
    if pool is not None:
        pool.close(keep_times=keep_times)


def on_post_build(config):
    workers = _STATE["pages"].count if _STATE.get("pages") else 1
    _close_pages(keep_times=True)
    site = Path(config["site_dir"])
    out_dir = site / "charts"
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = _STATE.get("stage")
    specs = sorted(stage.glob("*.json")) if stage else []
    for path in stage.iterdir() if stage else []:
        shutil.copyfile(path, out_dir / path.name)
    started = time.perf_counter()
    try:
        drawn = chart_export.export_all(specs, out_dir, EXPORT_CACHE, page_pool.workers())
    except chart_export.ExportFailed as exc:
        raise PluginError(printable(str(exc))) from None
    exports_s = time.perf_counter() - started
    if stage:
        shutil.rmtree(stage, ignore_errors=True)
    for scratch in ("validated", "sockets"):
        if _STATE.get(scratch):
            shutil.rmtree(_STATE[scratch], ignore_errors=True)
    links.write_moved_exports(out_dir)
    for run in _STATE.get("runs", []):
        target = site / "results" / run.device["slug"] / f"{run.id}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run.path, target)
    for sweep in _STATE.get("sweeps", []):
        target = site / "sweeps" / sweep.device["slug"] / f"{sweep.id}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sweep.path, target)
    if "(start)" in _TIMES:
        total_s = time.perf_counter() - _TIMES["(start)"]
        _LOG.info(time_spent(_TIMES, total_s, exports_s, drawn, len(specs) - drawn, workers))


def on_build_error(error):
    """A failed build leaves no scratch directory behind (its staged charts, validated list and kernel sockets)
    and no page running."""
    _close_pages(keep_times=False)
    for scratch in ("stage", "validated", "sockets"):
        if _STATE.get(scratch):
            shutil.rmtree(_STATE[scratch], ignore_errors=True)
