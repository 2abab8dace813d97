// Draw every chart on the page with vega-embed (SVG renderer), from the inert JSON spec
// (a <template>) beside each chart. Runs on first load and after every instant-navigation page swap
// (Material's document$), redraws when the reader switches light/dark mode, and again when the
// text column changes width.
//
// A chart is first drawn as its spec says. When it comes out wider than the text column (a phone,
// or a legend beside a wide plot) it is drawn again, narrower: legends go below the plot, panels
// side by side are stacked, the plots shrink to the column and long titles wrap. Exports (PNG, SVG)
// keep the spec's own layout.
//
// A classic script, not a module, like the bundle it uses (the hook wraps that in a function): a
// browser refuses module scripts on a page opened from disk (file://), so charts would never draw there.
// Opened from disk, links to a page's folder ("mlp/") are also pointed at its index.html, which a
// browser shows instead of a folder listing.
(function () {
"use strict";
const views = new Map();
const AXIS_ROOM = 90; // px beside a plot for its y axis labels and title
const MIN_PLOT = 150; // px: a plot is never drawn narrower than this
const CHAR_PX = 6.4; // px per character of an 11 px title line, for wrapping

function theme() {
  const scheme = document.body.getAttribute("data-md-color-scheme");
  return scheme === "slate" ? "dark" : "default";
}

function wrapLine(line, chars) {
  if (line.length <= chars) return [line];
  const lines = [];
  let current = "";
  // A word longer than a line (a long name without spaces) is cut into line-long pieces.
  const words = line.split(" ").flatMap((word) => word.match(new RegExp(`.{1,${chars}}`, "gu")) || [word]);
  for (const word of words) {
    if (current && (current + " " + word).length > chars) {
      lines.push(current);
      current = word;
    } else {
      current = current ? current + " " + word : word;
    }
  }
  if (current) lines.push(current);
  return lines;
}

function wrapTitle(title, width) {
  const chars = Math.max(24, Math.floor(width / CHAR_PX));
  const wrap = (value, size) => {
    const limit = Math.floor((chars * 11) / size);
    const lines = Array.isArray(value) ? value : [value];
    return lines.flatMap((line) => wrapLine(String(line), limit));
  };
  if (typeof title === "string") return { text: wrap(title, 13) };
  if (!title || typeof title !== "object") return title;
  const out = { ...title };
  const computed = out.text && typeof out.text === "object" && !Array.isArray(out.text); // {expr}: the controls'
  if (out.text !== undefined && !computed) out.text = wrap(out.text, out.fontSize || 13);
  if (out.subtitle !== undefined) out.subtitle = wrap(out.subtitle, out.subtitleFontSize || 11);
  return out;
}

// A copy of `spec` laid out for `width` px: stacked, legends below, plots of at most `plot` px.
function narrowed(spec, width, plot) {
  const walk = (node, top) => {
    if (Array.isArray(node)) return node.map((item) => walk(item, false));
    if (!node || typeof node !== "object") return node;
    const out = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === "encoding" && value && typeof value === "object") {
        // a legend a channel sets for itself (columns, orient) would override the config below: narrow it too
        out.encoding = Object.fromEntries(
          Object.entries(value).map(([channel, def]) =>
            def && typeof def === "object" && def.legend && typeof def.legend === "object"
              ? [channel, { ...def, legend: { ...def.legend, orient: "bottom", direction: "vertical", columns: 1 } }]
              : [channel, def],
          ),
        );
      } else if (key === "data" || key === "datasets" || key === "params") {
        out[key] = value;
      } else if (key === "hconcat") {
        out.vconcat = walk(value, false);
      } else if (key === "columns" && typeof value === "number") {
        out.columns = 1;
      } else if (key === "width" && typeof value === "number") {
        out.width = Math.min(value, plot);
      } else if (key === "title") {
        out.title = wrapTitle(value, width);
      } else if (key === "config" && top) {
        out.config = value;
      } else {
        out[key] = walk(value, false);
      }
    }
    return out;
  };
  const out = walk(spec, true);
  const config = { ...(out.config || {}) };
  config.legend = { ...(config.legend || {}), orient: "bottom", direction: "vertical", columns: 1 };
  out.config = config;
  return out;
}

function svgWidth(target) {
  const svg = target.querySelector("svg");
  return svg ? svg.getBoundingClientRect().width : 0;
}

async function embed(target, spec, wanted) {
  const options = {
    renderer: "svg",
    mode: "vega-lite", // the specs are Vega-Lite; a top-level concat would otherwise be taken for Vega
    actions: false, // the default menu links to an editor on another host
    theme: wanted === "dark" ? "dark" : undefined,
    config: { background: null },
  };
  const result = await window.vegaEmbed(target, spec, options);
  if (views.has(target)) views.get(target).finalize();
  views.set(target, result.view);
  return result;
}

async function drawOne(figure, wanted) {
  const target = figure.querySelector(".bchart-view");
  const source = figure.querySelector("template.bchart-spec");
  if (!target || !source) return;
  const available = Math.floor(target.clientWidth);
  if (target.dataset.drawn === wanted && target.dataset.width === String(available) && target.querySelector("svg"))
    return;
  const job = wanted + "@" + available;
  if (target.dataset.pending === job) return; // already being drawn so
  target.dataset.pending = job;
  const spec = JSON.parse(source.content.textContent);
  try {
    await embed(target, spec, wanted);
    // Too wide for the column: lay out again, narrower, until it fits (or the plots reach MIN_PLOT).
    let plot = available - AXIS_ROOM;
    for (let attempt = 0; attempt < 4 && svgWidth(target) > available + 1; attempt++) {
      const excess = attempt === 0 ? 0 : svgWidth(target) - available;
      plot = Math.max(MIN_PLOT, plot - excess);
      await embed(target, narrowed(spec, available, plot), wanted);
      if (plot === MIN_PLOT) break;
    }
    target.dataset.drawn = wanted;
    target.dataset.width = String(available);
    // The chart's text description, for screen readers (the caption shows it too).
    const svg = target.querySelector("svg");
    if (svg && spec.description) svg.setAttribute("aria-label", spec.description);
    offerChoiceImage(figure, target, spec);
  } catch (error) {
    target.textContent = "This chart could not be drawn: " + error.message;
    console.error(error);
  } finally {
    delete target.dataset.pending;
  }
}

// A chart with controls (the calculator): its exported files show the default choice, so a button beside them
// saves the chart as drawn now, named after the choice (its title names it too).
function offerChoiceImage(figure, target, spec) {
  const bound = (spec.params || []).filter((param) => param.bind);
  const links = figure.querySelector(".bchart-links");
  if (!bound.length || !links || links.querySelector(".bchart-choice-png")) return;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "bchart-choice-png";
  button.textContent = "PNG of this choice";
  button.addEventListener("click", async () => {
    const view = views.get(target);
    if (!view) return;
    const choice = bound.map((param) => String(view.signal(param.name))).join("-");
    const slug = choice.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
    const before = view.background();
    view.background(getComputedStyle(document.body).backgroundColor);
    const link = document.createElement("a");
    link.href = await view.toImageURL("png", 2);
    view.background(before);
    link.download = `${target.dataset.chartId}-${slug}.png`;
    document.body.append(link);
    link.click();
    link.remove();
  });
  links.append(" · ", button);
}

function draw() {
  // Let go of the views whose charts left the page.
  for (const [element, view] of views) {
    if (!document.body.contains(element)) {
      view.finalize();
      views.delete(element);
    }
  }
  const wanted = theme();
  for (const figure of document.querySelectorAll("figure.bchart")) drawOne(figure, wanted);
}

let resizeTimer = null;
function redrawSoon() {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(draw, 200);
}

// Opened from disk: "mlp/" would show a folder listing, so every link into the site names its index.html.
function linkFiles() {
  if (location.protocol !== "file:") return;
  for (const a of document.querySelectorAll("a[href]")) {
    const href = a.getAttribute("href");
    if (/^[a-z][a-z0-9+.-]*:|^\/\//i.test(href) || href.startsWith("#")) continue; // another scheme, or this page
    const [path, hash] = href.split(/(?=#)/u);
    if (path === "" || path.endsWith("/")) a.setAttribute("href", path + "index.html" + (hash || ""));
    else if (path === "." || path === "..") a.setAttribute("href", path + "/index.html" + (hash || ""));
  }
}

function start() {
  linkFiles();
  draw();
}

// Material's document$ announces every page swap of instant navigation; opened from disk it announces nothing, so
// the first page is drawn on DOMContentLoaded as well (drawOne skips a chart drawn or being drawn at this width).
if (typeof window.document$ !== "undefined") window.document$.subscribe(() => start());
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
window.addEventListener("resize", redrawSoon);
// A chart folded in a closed <details> was drawn without a column to fit: draw it again once opened.
document.addEventListener("toggle", (event) => event.target.open && event.target.querySelector("figure.bchart") && draw(), true);
new MutationObserver(() => draw()).observe(document.body, {
  attributes: true,
  attributeFilter: ["data-md-color-scheme"],
});
})();
