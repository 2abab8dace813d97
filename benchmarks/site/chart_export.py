"""Every chart of a build written as SVG and PNG, the ones not in the cache drawn side by side, one process per core.

vl-convert draws one chart at a time in a process: two threads take as long as one (60 charts: 6.5 s in turn,
6.3 s on two threads, 4.2 s on two processes, on 2 cores). So the charts the cache does not hold are handed to
worker processes; a build whose charts are all cached starts none. A drawn chart is kept in the cache under the
hash of its spec and vl-convert's version, written whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

FEW = 8  # fewer charts to draw than this are drawn here: starting workers would cost more


class ExportFailed(Exception):
    """A chart vl-convert could not draw: its id and the first line of the error."""


def _version() -> str:
    import vl_convert

    return getattr(vl_convert, "__version__", "unknown")


def _spec(spec_path: Path) -> dict:
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    spec.setdefault("config", {})["background"] = "white"
    return spec


def cache_key(spec: dict, version: str) -> str:
    return hashlib.sha256(f"{version}\n{json.dumps(spec, sort_keys=True)}".encode()).hexdigest()[:32]


def draw(spec_path: str, out_dir: str, cache: str) -> None:
    """Draw one chart into `out_dir` as <id>.svg and <id>.png, and keep both in `cache`."""
    import vl_convert

    path, out = Path(spec_path), Path(out_dir)
    spec = _spec(path)
    try:
        svg = vl_convert.vegalite_to_svg(spec)
        png = vl_convert.svg_to_png(svg, scale=2)  # the drawing made once: rendering the spec again costs more
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise ExportFailed(f"chart {path.stem}: cannot be exported: {type(exc).__name__}: {first}") from None
    (out / f"{path.stem}.svg").write_text(svg, encoding="utf-8")
    (out / f"{path.stem}.png").write_bytes(png)
    key = cache_key(spec, _version())
    keep(Path(cache) / f"{key}.svg", svg.encode("utf-8"))
    keep(Path(cache) / f"{key}.png", png)


def keep(path: Path, data: bytes) -> None:
    """Cache one export, written whole or not at all (a cache that cannot be written only costs time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError:
        pass


def from_cache(spec_path: Path, out_dir: Path, cache: Path) -> bool:
    """Copy the chart's SVG and PNG from the cache; False when it does not hold both."""
    key = cache_key(_spec(spec_path), _version())
    svg, png = cache / f"{key}.svg", cache / f"{key}.png"
    if not (svg.is_file() and png.is_file()):
        return False
    shutil.copyfile(svg, out_dir / f"{spec_path.stem}.svg")
    shutil.copyfile(png, out_dir / f"{spec_path.stem}.png")
    return True


def export_all(specs: list[Path], out_dir: Path, cache: Path, workers: int) -> int:
    """Write every chart's SVG and PNG into `out_dir`; how many were drawn (the rest came from `cache`)."""
    missing = [path for path in specs if not from_cache(path, out_dir, cache)]
    if len(missing) < FEW or workers <= 1:
        for path in missing:
            draw(str(path), str(out_dir), str(cache))
        return len(missing)
    context = multiprocessing.get_context("spawn")  # the parent's threads (mkdocs, vl-convert's) never fork
    pool = ProcessPoolExecutor(max_workers=min(workers, len(missing)), mp_context=context)
    try:
        chunk = max(1, len(missing) // (workers * 8))
        list(pool.map(draw, [str(p) for p in missing], [str(out_dir)] * len(missing), [str(cache)] * len(missing),
                      chunksize=chunk))  # fmt: skip
    finally:
        pool.shutdown(cancel_futures=True)  # a chart that cannot be drawn stops the rest
    return len(missing)
