"""A model sweep as one offline HTML file: the recommendation, the table and the charts.

The charts are the site's (benchmarks/site/charts/sweep.py), drawn in the browser by the same
Vega bundle, inlined, so the file opens anywhere without a network. Everything taken from the
results document is escaped; the chart specs are embedded as inert JSON.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import html
import importlib.util
import json
from pathlib import Path

from benchmarks.site.sweep_table import table_lines


def report_available() -> str | None:
    """What the report needs that is not installed, or None."""
    missing = [name for name in ("altair", "vl_convert") if importlib.util.find_spec(name) is None]
    if missing:
        return (
            "altair and vl-convert-python, which draw its charts: pip install altair vl-convert-python "
            "(or run it through `nox -s sweep`)"
        )
    return None


def _inert(spec: dict) -> str:
    """JSON that cannot close the <script> element it sits in."""
    return json.dumps(spec).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 760px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
pre { background: #f5f5f5; padding: .8em; overflow-x: auto; font-size: 12px; }
.verdict li { margin: .3em 0; } .chart { margin: 1.5em 0; } .meta { color: #555; font-size: .9em; }
"""


def render_report(doc: dict) -> str:
    import vl_convert

    from benchmarks.site import sweep_words
    from benchmarks.site.charts import legible
    from benchmarks.site.charts.sweep import memory_note, sweep_charts, where

    rec = sweep_words.from_document(doc)
    model, run = doc["model"], doc["run"]
    charts = sweep_charts(doc)
    bundle = vl_convert.javascript_bundle().replace("</script", "<\\/script")
    verdicts = "".join(f"<li>{html.escape(line)}</li>" for line in rec.lines)
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in model.get("notes", []))
    state = "complete" if run["complete"] else f"incomplete ({html.escape(run.get('interrupted') or 'stopped')})"
    figures = "".join(f'<div class="chart" id="chart-{name}"></div>' for name, _ in charts)
    no_memory = f"<p>{html.escape(memory_note(doc))}</p>" if memory_note(doc) else ""
    specs = {name: legible(chart.to_dict()) for name, chart in charts}
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Batch-size sweep: {html.escape(model["name"])}</title><style>{STYLE}</style></head>
<body>
<h1>Batch-size sweep: {html.escape(model["name"])}</h1>
<p class="meta">{html.escape(model["target"])}, measured on {html.escape(where(doc))};
inputs: {html.escape(model["input"])}; sweep {html.escape(run["id"])}, started {html.escape(run["started_at"])},
{state}.</p>
<h2>Recommendation</h2><ul class="verdict">{verdicts}</ul>
{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}
<h2>Charts</h2>{figures}{no_memory}
<h2>Every batch size measured</h2><pre>{html.escape(chr(10).join(table_lines(doc)))}</pre>
<script type="module">{bundle}</script>
<script type="application/json" id="specs">{_inert(specs)}</script>
<script type="module">
const specs = JSON.parse(document.getElementById("specs").textContent);
// Each chart as wide as its spec asks, or as the page allows (a phone): 90 px stay for the y axis, and the
// subtitle's lines wrap at words to the width left.
const wrap = (line, chars) => {{
  const out = [];
  let current = "";
  for (const word of String(line).split(" ")) {{
    if (current && (current + " " + word).length > chars) {{ out.push(current); current = word; }}
    else current = current ? current + " " + word : word;
  }}
  if (current) out.push(current);
  return out;
}};
for (const [name, spec] of Object.entries(specs)) {{
  const room = document.getElementById("chart-" + name).clientWidth - 90;
  if (spec.width > room) {{
    spec.width = Math.max(150, room);
    const chars = Math.floor((spec.width + 80) / 6.2);
    if (spec.title && spec.title.subtitle) spec.title.subtitle = spec.title.subtitle.flatMap((l) => wrap(l, chars));
  }}
  window.vegaEmbed("#chart-" + name, spec, {{renderer: "svg", mode: "vega-lite", actions: false}});
}}
</script>
</body></html>
"""


def write_report(doc: dict, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(doc), encoding="utf-8")
    return path
