// What a reader would see wrong on a page: a sideways scroll, a figure without drawn marks, a chart or a table
// wider than its column, a table that scrolls without a visible cue, a label cut off by the figure or truncated by
// Vega, two labels on top of each other, a legend symbol or label fainter than 3:1 against the page, a table cell
// that breaks a word or a number across two lines.
// Returns {sideways, width, figures: [{id, problems: [...], symbols: [...]}], tables: [{id, problems: [...]}]};
// run by tests/end_to_end/test_layout.py. `tablesMayScroll`: a phone, where a wide table may scroll behind a cue.
(tablesMayScroll) => {
  const root = document.documentElement;
  const SLACK = 1; // px of rounding
  const CONTRAST = 3; // WCAG's minimum for graphics and large text
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

  // Colours as the browser computed them: [r, g, b, alpha] in 0–255 and 0–1, or null for none.
  const rgba = (value) => {
    const m = /rgba?\(([^)]+)\)/.exec(value || "");
    if (!m) return null;
    const parts = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
  };
  const luminance = ([r, g, b]) => {
    const lin = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  const ratio = (a, b) => {
    const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const c = rgba(getComputedStyle(node).backgroundColor);
      if (c && c[3] > 0) return c;
    }
    return [255, 255, 255, 1];
  };
  const opacity = (el, stop) => {
    let a = 1;
    for (let node = el; node && node !== stop.parentElement; node = node.parentElement) {
      a *= Number(getComputedStyle(node).opacity);
    }
    return a;
  };
  // The contrast of what `el` paints (its fill, or its stroke where that is stronger) over the page behind `svg`.
  const contrast = (el, svg, bg) => {
    const style = getComputedStyle(el);
    const base = opacity(el, svg);
    const paints = [[style.fill, Number(style.fillOpacity)]];
    if (parseFloat(style.strokeWidth) > 0) paints.push([style.stroke, Number(style.strokeOpacity)]);
    let best = 0;
    for (const [paint, alpha] of paints) {
      const c = rgba(paint);
      if (!c) continue;
      const a = base * alpha * c[3];
      const seen = [0, 1, 2].map((i) => a * c[i] + (1 - a) * bg[i]);
      best = Math.max(best, ratio(seen, bg));
    }
    return best;
  };

  const figures = [...document.querySelectorAll("figure.bchart, .chart")].map((figure) => {
    const problems = [];
    const symbols = [];
    const view = figure.querySelector(".bchart-view") || figure;
    const svg = view && view.querySelector("svg");
    if (!svg) return { id: figure.id, problems: ["not drawn"], symbols };
    const frame = box(figure.matches(".chart") ? figure.parentElement : view); // the report: its page's column
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
    // A note on a rule (a ridge, a limit) sits beside it, never struck through by it or another rule: checked
    // where the chart is drawn as its spec lays it out (a phone's narrowed copy squeezes every plot).
    const rules = tablesMayScroll ? [] : [...svg.querySelectorAll(".mark-rule.role-mark line")].map(box);
    for (const t of [...svg.querySelectorAll(".mark-text.role-mark text")].filter(shown)) {
      const r = box(t);
      const struck = rules.some((q) =>
        q.width < 2
          ? q.left > r.left + 1 && q.left < r.right - 1 && Math.min(q.bottom, r.bottom) - Math.max(q.top, r.top) > 2
          : q.height < 2 && q.top > r.top + 1 && q.top < r.bottom - 1 &&
            Math.min(q.right, r.right) - Math.max(q.left, r.left) > 2,
      );
      if (struck) problems.push(`a rule strikes through its note: "${words(t)}"`);
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
    // Contrast: every label, and every legend symbol (named by the label beside it).
    const bg = background(view);
    for (const t of labels) {
      const seen = contrast(t, svg, bg);
      if (seen < CONTRAST) problems.push(`faint label ${seen.toFixed(2)}:1: "${words(t)}"`);
    }
    for (const rule of svg.querySelectorAll(".mark-rule.role-mark line")) {
      if (parseFloat(getComputedStyle(rule).strokeWidth) > 2) continue; // a band's faint span, not a marking rule
      const seen = contrast(rule, svg, bg);
      if (seen < CONTRAST) problems.push(`faint rule ${seen.toFixed(2)}:1`);
    }
    for (const legend of svg.querySelectorAll(".role-legend")) {
      // Vega draws a legend's symbols as one mark and its labels as another, entry by entry in the same order.
      const names = [...legend.querySelectorAll(".role-legend-label text")].map(words);
      const symbols_ = [...legend.querySelectorAll(".role-legend-symbol path")];
      for (const [i, symbol] of symbols_.entries()) {
        const seen = contrast(symbol, svg, bg);
        const name = names[i] === undefined ? "(no label)" : names[i];
        symbols.push([name, Number(seen.toFixed(2))]);
        if (seen < CONTRAST) problems.push(`faint legend symbol ${seen.toFixed(2)}:1: "${name}"`);
      }
    }
    return { id: figure.id, problems, symbols };
  });

  // A word is the text between spaces, hyphens and dashes and slashes included ("TensorRT-LLM", "(116–151)").
  // Broken: laid out on two lines (its range's boxes at two heights). Code is exempt: an identifier or a flag may
  // end a line after a hyphen, as it does in an editor.
  const PIECE = /\S+/g;
  const breaksAWord = (cell) => {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement && node.parentElement.closest("code")) continue;
      for (const m of node.data.matchAll(PIECE)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const rows = new Set([...range.getClientRects()].filter((q) => q.width > 0).map((q) => Math.round(q.top)));
        if (rows.size > 1) return true;
      }
    }
    return false;
  };
  const column = (el) => box(el.closest("article, .md-content__inner, body") || document.body);
  const tables = [...document.querySelectorAll("article table, body > table, body > div table")].map((table, i) => {
    const problems = [];
    const head = table.querySelector("caption") || table.querySelector("th, td");
    const id = `table ${i + 1} "${head ? words(head).slice(0, 50) : ""}"`;
    const r = box(table);
    if (r.width === 0) return { id, problems }; // folded away (a closed <details>): checked when opened
    const col = column(table);
    let scroller = null;
    for (let node = table; node && node !== document.body; node = node.parentElement) {
      if (node.scrollWidth > node.clientWidth + SLACK && /auto|scroll/.test(getComputedStyle(node).overflowX)) {
        scroller = node;
        break;
      }
    }
    if (scroller) {
      const style = getComputedStyle(scroller);
      const cue = /gradient/.test(style.backgroundImage) && /local/.test(style.backgroundAttachment);
      const sw = `${scroller.scrollWidth} px in ${scroller.clientWidth} px`;
      if (!tablesMayScroll) problems.push(`scrolls sideways (${sw})`);
      else if (!cue) problems.push(`scrolls sideways with no visible cue (${sw})`);
      const frame = box(scroller); // what the reader sees of it must stay in the column
      if (frame.right > col.right + 20 || frame.left < col.left - 20) problems.push(`scroll box outside the column`);
    } else if (r.right > col.right + SLACK || r.left < col.left - SLACK) {
      problems.push(`table ${Math.round(r.width)} px wide in a ${Math.round(col.width)} px column`);
    }
    const broken = [...table.querySelectorAll("th, td")].filter(breaksAWord);
    for (const cell of broken.slice(0, 3)) problems.push(`breaks a word across lines: "${words(cell).slice(0, 60)}"`);
    if (broken.length > 3) problems.push(`and ${broken.length - 3} more cells that break a word`);
    return { id, problems, broken: broken.length };
  });
  return { sideways: root.scrollWidth > root.clientWidth + SLACK, width: root.clientWidth, figures, tables };
}
