// What a reader would see wrong on a page: a sideways scroll, a figure without drawn marks, a chart
// wider than its column, a label cut off by the figure or truncated by Vega, two labels on top of
// each other. Returns {sideways, figures: [{id, problems: [...]}]}; run by tests/end_to_end/test_layout.py.
() => {
  const root = document.documentElement;
  const SLACK = 1; // px of rounding
  const LABELS = ".role-legend-label text, .role-legend-title text, .role-axis-title text, .role-axis-label text, " +
    ".role-title-text text, .role-title-subtitle text, .role-mark text";
  const box = (el) => el.getBoundingClientRect();
  const overlap = (a, b) => {
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    return w > 2 && h > 2;
  };
  const words = (el) => (el.textContent || "").trim();
  const shown = (el) => words(el) && box(el).width > 0 && Number(getComputedStyle(el).opacity) > 0;
  const figures = [...document.querySelectorAll("figure.bchart")].map((figure) => {
    const problems = [];
    const view = figure.querySelector(".bchart-view");
    const svg = view && view.querySelector("svg");
    if (!svg) return { id: figure.id, problems: ["not drawn"] };
    const frame = box(view);
    const drawn = [...svg.querySelectorAll(".role-mark path, .role-mark line, .role-mark rect")].filter(
      (el) => el.getAttribute("d") !== "" && (el.tagName !== "path" || el.getAttribute("d")),
    );
    if (drawn.length === 0) problems.push("no marks drawn");
    if (box(svg).right > frame.right + SLACK) {
      problems.push(`chart ${Math.round(box(svg).width)} px wide in a ${Math.round(frame.width)} px column`);
    }
    const texts = [...svg.querySelectorAll("text")].filter(shown);
    for (const t of texts) {
      const r = box(t);
      if (r.left < frame.left - SLACK || r.right > frame.right + SLACK) problems.push(`cut off: "${words(t)}"`);
      if (words(t).endsWith("…")) problems.push(`truncated: "${words(t)}"`);
    }
    const labels = [...svg.querySelectorAll(LABELS)].filter(shown);
    for (let i = 0; i < labels.length; i++) {
      for (let j = i + 1; j < labels.length; j++) {
        if (overlap(box(labels[i]), box(labels[j]))) {
          problems.push(`overlap: "${words(labels[i])}" and "${words(labels[j])}"`);
        }
      }
    }
    for (const axis of svg.querySelectorAll(".role-axis-label")) {
      const ticks = [...axis.querySelectorAll("text")].filter(shown).map((t) => [box(t), words(t)]);
      ticks.sort((a, b) => a[0].left - b[0].left);
      for (let i = 1; i < ticks.length; i++) {
        const [[left, a], [right, b]] = [ticks[i - 1], ticks[i]];
        const sameRow = Math.min(left.bottom, right.bottom) - Math.max(left.top, right.top) > 2;
        if (sameRow && right.left - left.right < 3) problems.push(`tick labels run together: "${a}" "${b}"`);
      }
    }
    return { id: figure.id, problems };
  });
  return { sideways: root.scrollWidth > root.clientWidth + SLACK, width: root.clientWidth, figures };
}
