// Draw every chart on the page with vega-embed (SVG renderer), from the inert JSON spec
// (a <template>) beside each chart. Runs on first load and after every instant-navigation page swap
// (Material's document$), and redraws when the reader switches light/dark mode.
const views = new Map();

function theme() {
  const scheme = document.body.getAttribute("data-md-color-scheme");
  return scheme === "slate" ? "dark" : "default";
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
  for (const figure of document.querySelectorAll("figure.bchart")) {
    const target = figure.querySelector(".bchart-view");
    const source = figure.querySelector("template.bchart-spec");
    if (!target || !source) continue;
    if (target.dataset.drawn === wanted && target.querySelector("svg")) continue;
    const spec = JSON.parse(source.content.textContent);
    const options = {
      renderer: "svg",
      mode: "vega-lite", // the specs are Vega-Lite; a top-level concat would otherwise be taken for Vega
      actions: false, // the default menu links to an editor on another host
      theme: wanted === "dark" ? "dark" : undefined,
      config: { background: null },
    };
    window
      .vegaEmbed(target, spec, options)
      .then((result) => {
        if (views.has(target)) views.get(target).finalize();
        views.set(target, result.view);
        target.dataset.drawn = wanted;
        // The chart's text description, for screen readers (the caption shows it too).
        const svg = target.querySelector("svg");
        if (svg && spec.description) svg.setAttribute("aria-label", spec.description);
      })
      .catch((error) => {
        target.textContent = "This chart could not be drawn: " + error.message;
        console.error(error);
      });
  }
}

document$.subscribe(() => draw());
new MutationObserver(() => draw()).observe(document.body, {
  attributes: true,
  attributeFilter: ["data-md-color-scheme"],
});
