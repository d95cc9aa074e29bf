// The canvas renderer of frame panels: draws a Plotly figure ({data, layout}) on a <canvas> in about a
// millisecond, where Plotly.react takes 8-20 ms a panel (its defaults, axes and SVG are rebuilt on every frame),
// so scrubbing a run redraws every panel within one animation frame. It draws the figures the sandbox's panels
// make (2-D scatter with markers, lines, text and error bars; heatmaps; images; line and rect shapes; a vertical
// legend; linear, log and category axes, equal aspect), placed by Plotly's own rules (autorange padding, autotick, margins
// pushed by the legend), and says why not (`whyNot`) to anything else, which Plotly then draws. Hovering a point
// shows its hover text as Plotly would; `div.data` and `div.layout` hold the drawn figure, as on a Plotly div.
import { Axis, equalAspect } from "./canvas_axes.js";
import { FONT, dashPattern, knownSymbol, textLines } from "./canvas_marks.js";
import { edges, errorBar, heatmap, image, scatter, traceColor } from "./canvas_traces.js";
import { hoverAt, showHover } from "./canvas_hover.js";
import { drawLegend, measureLegend, plotWidth } from "./canvas_legend.js";

const MARGIN = { l: 80, r: 80, t: 100, b: 80 };
const HOVER_DISTANCE = 20;

const keys = (s) => new Set(s.split(" "));
const LAYOUT = keys("title margin showlegend legend hovermode xaxis yaxis uirevision paper_bgcolor plot_bgcolor font " +
  "shapes width height");
const LEGEND = keys("font x y xanchor yanchor bgcolor");
const ERROR = keys("type array arrayminus symmetric value valueminus visible thickness width color");
const AXIS = keys("title zeroline nticks ticklabeloverflow range type autorange scaleanchor scaleratio constrain " +
  "tickvals ticktext tickfont dtick showgrid showticklabels visible gridcolor zerolinecolor");
const TRACES = {
  scatter: keys("type mode name x y marker line text hovertext hoverinfo hovertemplate customdata textposition " +
    "textfont showlegend connectgaps opacity uid cliponaxis error_x error_y"),
  heatmap: keys("type name z x y x0 dx y0 dy zmin zmax colorscale showscale hoverinfo hovertemplate customdata " +
    "xgap ygap text hovertext uid"),
  image: keys("type name source x0 y0 dx dy hoverinfo uid"),
};
const MARKER = keys("size symbol color line opacity angle");
const SHAPE = keys("type x0 x1 y0 y1 xref yref line fillcolor opacity layer");

const colors = (c) => c === undefined || typeof c === "string" || (Array.isArray(c) && c.every((v) => typeof v === "string"));
const arr = (v) => Array.isArray(v) ? v : [v];
// coordinates Plotly would put on a category axis: text that is not a number
const words = (v) => Array.isArray(v) && v.some((c) => typeof c === "string" && c.trim() !== "" && !Number.isFinite(+c));

// Why this renderer cannot draw the figure exactly ("" when it can; Plotly then draws it).
export function whyNot(fig) {
  const lay = fig.layout || {};
  const extra = (obj, allowed) => Object.keys(obj || {}).filter((k) => !allowed.has(k)).join(",");
  const bad = extra(lay, LAYOUT);
  if (bad) return `layout.${bad}`;
  if (extra(lay.legend, LEGEND)) return `legend.${extra(lay.legend, LEGEND)}`;
  for (const [name, ax] of [["xaxis", lay.xaxis || {}], ["yaxis", lay.yaxis || {}]]) {
    if (extra(ax, AXIS)) return `${name}.${extra(ax, AXIS)}`;
    if (ax.type && !["linear", "log", "category", "-"].includes(ax.type)) return `${name}.type ${ax.type}`;
    if (ax.scaleanchor !== undefined && (name !== "yaxis" || ax.scaleanchor !== "x")) return `${name}.scaleanchor`;
  }
  for (const sh of lay.shapes || []) {
    if (extra(sh, SHAPE) || !["line", "rect"].includes(sh.type) || !["x", "paper", undefined].includes(sh.xref) ||
        !["y", "paper", undefined].includes(sh.yref)) return `shape ${sh.type} ${extra(sh, SHAPE)}`;
  }
  for (const t of fig.data || []) {
    const type = t.type || "scatter";
    if (!TRACES[type]) return `trace type ${type}`;
    if (extra(t, TRACES[type])) return `${type}.${extra(t, TRACES[type])}`;
    if (type !== "scatter" && (fig.data || []).some((u) => words(u.x) || words(u.y))) return "category axis with a grid";
    if (type === "scatter") {
      const m = t.marker || {};
      if (extra(m, MARKER)) return `marker.${extra(m, MARKER)}`;
      if (!colors(m.color)) return "marker.color (numbers: a colour scale)";
      if (!arr(m.symbol ?? "circle").every(knownSymbol)) return `marker.symbol ${m.symbol}`;
      if (extra(m.line, keys("width color")) || typeof (m.line?.color ?? "") !== "string") return "marker.line";
      for (const e of [t.error_x, t.error_y]) {
        if (e && (extra(e, ERROR) || !["data", "constant", "percent", undefined].includes(e.type))) return "error bars";
      }
    } else if (type === "heatmap") {
      if (t.showscale !== false) return "heatmap colour bar";
      if (!Array.isArray(t.colorscale)) return `colorscale ${t.colorscale}`;
    } else if (typeof t.source !== "string") return "image without source";
  }
  return "";
}

export const canDraw = (fig) => !whyNot(fig);

// Draw `fig` into `div` at width × height CSS pixels; resolves once drawn (image traces are decoded first).
export async function draw(div, fig, width, height) {
  const images = await Promise.all(fig.data.map((t) => t.type === "image" ? decode(t.source) : null));
  const s = div._canvasplot || setup(div);
  const dpr = window.devicePixelRatio || 1;
  if (s.canvas.width !== Math.round(width * dpr) || s.canvas.height !== Math.round(height * dpr)) {
    s.canvas.width = Math.round(width * dpr);
    s.canvas.height = Math.round(height * dpr);
    s.canvas.style.width = `${width}px`;
    s.canvas.style.height = `${height}px`;
  }
  const g = s.g;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  const lay = fig.layout || {};
  const font = { size: 12, color: "#444", family: FONT, ...(lay.font || {}) };
  const m = { ...MARGIN, ...(lay.margin || {}) };
  const legend = measureLegend(g, fig, font);
  // paper: the area inside the margins (legend and "paper" shapes live there); box: the axes' area within it
  const paper = { x: m.l, y: m.t, w: Math.max(plotWidth(legend, width, m), 10), h: Math.max(height - m.t - m.b, 10) };
  const [xa, ya] = axes(fig, images, paper);
  const box = { x: xa.offset, y: ya.offset, w: xa.length, h: ya.length };
  g.fillStyle = lay.paper_bgcolor || "white";
  g.fillRect(0, 0, width, height);
  g.fillStyle = lay.plot_bgcolor || "white";
  g.fillRect(box.x, box.y, box.w, box.h);
  const xt = xa.spec.visible === false ? [] : xa.ticks();
  const yt = ya.spec.visible === false ? [] : ya.ticks();
  grid(g, xa, ya, xt, yt, box);
  g.save();
  g.beginPath();
  g.rect(box.x, box.y, box.w, box.h);
  g.clip();
  shapes(g, lay.shapes, "below", xa, ya, paper);
  s.points = [];
  s.cells = [];
  fig.data.forEach((t, i) => {
    if (t.type === "heatmap") heatmap(g, t, xa, ya, s.cells, i);
    else if (t.type === "image") image(g, t, images[i], xa, ya);
    else scatter(g, t, i, xa, ya, font, s.points);
  });
  shapes(g, lay.shapes, "above", xa, ya, paper);
  g.restore();
  labels(g, lay, xa, ya, xt, yt, box, font, width, height, m.t);
  if (legend) drawLegend(g, legend, paper, traceColor, lay.paper_bgcolor || "white");
  Object.assign(s, { fig, xa, ya, box });
  div.data = fig.data;
  div.layout = fig.layout;
  if (s.hovered) showHover(s, hoverAt(s, s.hovered, HOVER_DISTANCE));
}

export function toDataURL(div) {
  return div._canvasplot.canvas.toDataURL("image/png");
}

// the canvas replaces whatever the div held (a Plotly plot when the previous figure was Plotly's)
function setup(div) {
  if (div._fullLayout && window.Plotly) Plotly.purge(div);
  div.replaceChildren();
  div.classList.add("canvas-plot");
  const canvas = document.createElement("canvas");
  const tip = document.createElement("div");
  tip.className = "canvas-hover hovertext";
  tip.hidden = true;
  div.append(canvas, tip);
  const s = { canvas, tip, g: canvas.getContext("2d"), points: [], cells: [], hovered: null };
  canvas.addEventListener("mousemove", (ev) => {
    const r = canvas.getBoundingClientRect();
    s.hovered = [ev.clientX - r.left, ev.clientY - r.top];
    showHover(s, hoverAt(s, s.hovered, HOVER_DISTANCE));
  });
  canvas.addEventListener("mouseleave", () => {
    s.hovered = null;
    showHover(s, null);
  });
  div._canvasplot = s;
  return s;
}

// Detach the canvas so that Plotly can draw into the div.
export function release(div) {
  if (!div._canvasplot) return;
  div.replaceChildren();
  div.classList.remove("canvas-plot");
  delete div._canvasplot;
  delete div.data;
  delete div.layout;
}

const decoded = new Map();
async function decode(source) {
  if (decoded.has(source)) return decoded.get(source);
  const img = new Image();
  img.src = source;
  await img.decode();
  decoded.set(source, img);
  if (decoded.size > 64) decoded.delete(decoded.keys().next().value);
  return img;
}

// -- axes ---------------------------------------------------------------------------------------------
function axes(fig, images, box) {
  const lay = fig.layout || {};
  const xa = new Axis(lay.xaxis, "x");
  const ya = new Axis(lay.yaxis, "y");
  for (const [ax, c] of [[xa, "x"], [ya, "y"]]) {  // Plotly's autotype: text coordinates make a category axis
    const coords = fig.data.filter((t) => (t.type || "scatter") === "scatter").map((t) => t[c]);
    if (ax.spec.type === "category" || ((ax.spec.type ?? "-") === "-" && coords.some(words))) {
      ax.setCategories([...new Set(coords.flatMap((v) => (v || []).filter((x) => x !== null).map(String)))]);
    }
  }
  fig.data.forEach((t, i) => {
    if (t.type === "heatmap") {
      const [nx, ny] = [(t.z[0] || []).length, t.z.length];
      xa.include(edges(t.x, t.x0, t.dx, nx));
      ya.include(edges(t.y, t.y0, t.dy, ny));
    } else if (t.type === "image") {
      const { x0 = 0, y0 = 0, dx = 1, dy = 1 } = t;
      xa.include([x0 - dx / 2, x0 + (images[i].naturalWidth - 0.5) * dx]);
      ya.include([y0 - dy / 2, y0 + (images[i].naturalHeight - 0.5) * dy]);
    } else {
      const mode = t.mode || "markers";
      const padded = /markers|text/.test(mode);
      const r = mode.includes("markers") ? Math.max(...arr((t.marker || {}).size ?? 6)) / 1.6 : 0;  // Plotly: size / 1.6
      const xs = t.x ?? t.y.map((_, k) => k);
      xa.include(xs, padded, r);
      ya.include(t.y, true, r);
      for (const [ax, v, e] of [[xa, xs, t.error_x], [ya, t.y, t.error_y]]) {
        if (!e || e.visible === false) continue;
        ax.include(v.map((c, k) => c - errorBar(e, v, k)[0]), true);  // bar ends: 5% padding, no marker room
        ax.include(v.map((c, k) => +c + errorBar(e, v, k)[1]), true);
      }
    }
  });
  for (const sh of lay.shapes || []) {
    if (sh.xref !== "paper") xa.include([sh.x0, sh.x1], false, 0);
    if (sh.yref !== "paper") ya.include([sh.y0, sh.y1], false, 0);
  }
  xa.settle(box.x, box.w);
  ya.settle(box.y, box.h);
  if (ya.spec.scaleanchor === "x") {
    equalAspect(xa, ya, ya.spec.scaleratio || 1, fig.data.some((t) => t.type === "image") ? "domain" : "range");
  }
  return [xa, ya];
}

function grid(g, xa, ya, xt, yt, box) {
  g.lineWidth = 1;
  for (const [ax, ticks, vertical] of [[xa, xt, true], [ya, yt, false]]) {
    if (ax.spec.showgrid !== false) {
      g.strokeStyle = ax.spec.gridcolor || "#eee";
      g.beginPath();
      for (const t of ticks) {
        const p = Math.round(ax.l2p(t.l)) + 0.5;
        if (vertical) { g.moveTo(p, box.y); g.lineTo(p, box.y + box.h); } else { g.moveTo(box.x, p); g.lineTo(box.x + box.w, p); }
      }
      g.stroke();
    }
    const lo = Math.min(ax.r0, ax.r1);
    const hi = Math.max(ax.r0, ax.r1);
    if (ax.spec.zeroline !== false && ax.spec.visible !== false && !ax.log && !ax.categories && lo < 0 && hi > 0) {
      const p = Math.round(ax.l2p(0)) + 0.5;
      g.strokeStyle = ax.spec.zerolinecolor || "#444";
      g.beginPath();
      if (vertical) { g.moveTo(p, box.y); g.lineTo(p, box.y + box.h); } else { g.moveTo(box.x, p); g.lineTo(box.x + box.w, p); }
      g.stroke();
    }
  }
}

function shapes(g, list, layer, xa, ya, paper) {
  for (const sh of list || []) {
    if ((sh.layer || "above") !== layer) continue;
    const px = (v) => sh.xref === "paper" ? paper.x + v * paper.w : xa.d2p(v);
    const py = (v) => sh.yref === "paper" ? paper.y + (1 - v) * paper.h : ya.d2p(v);
    const [x0, x1, y0, y1] = [px(sh.x0), px(sh.x1), py(sh.y0), py(sh.y1)];
    const line = { color: "#444", width: 2, ...(sh.line || {}) };
    g.save();
    g.globalAlpha = sh.opacity ?? 1;
    g.beginPath();
    if (sh.type === "rect") g.rect(Math.min(x0, x1), Math.min(y0, y1), Math.abs(x1 - x0), Math.abs(y1 - y0));
    else { g.moveTo(x0, y0); g.lineTo(x1, y1); }
    if (sh.type === "rect" && sh.fillcolor) {
      g.fillStyle = sh.fillcolor;
      g.fill();
    }
    if (line.width > 0) {
      g.setLineDash(dashPattern(line.dash, line.width));
      g.strokeStyle = line.color;
      g.lineWidth = line.width;
      g.stroke();
    }
    g.restore();
  }
}

// -- tick labels and titles (placed where Plotly 4 puts them, measured on its SVG: tick labels 2 px off the plot
// area, axis titles at 1.2× and the main title at 1.4× the layout's font size, x title centred 27 px below the
// plot area, y title 36 px left of it, main title centred 0.37× its size above the middle of the top margin)
function labels(g, lay, xa, ya, xt, yt, box, font, width, height, marginTop) {
  const tickFont = (ax) => ({ ...font, ...(ax.spec.tickfont || {}) });
  const setFont = (f) => {
    g.font = `${f.size}px ${f.family || FONT}`;
    g.fillStyle = f.color || font.color;
  };
  const tickLabel = (f, t) => setFont(t.small ? { ...f, size: 0.75 * f.size } : f);  // log axes' digits: 3/4 size
  if (ya.spec.showticklabels !== false) {
    g.textAlign = "right";
    g.textBaseline = "middle";
    for (const t of yt) {
      tickLabel(tickFont(ya), t);
      g.fillText(t.text, box.x - 2, ya.l2p(t.l));
    }
  }
  if (xa.spec.showticklabels !== false) {
    g.textAlign = "center";
    g.textBaseline = "top";
    let right = -Infinity;
    for (const t of xt) {
      tickLabel(tickFont(xa), t);
      const p = xa.l2p(t.l);
      const w = g.measureText(t.text).width;
      if (p - w / 2 < right + 3) continue;  // no overlapping labels
      g.fillText(t.text, p, box.y + box.h + 2);
      right = p + w / 2;
    }
  }
  const title = (spec) => typeof spec === "string" ? { text: spec } : spec || {};
  g.textAlign = "center";
  g.textBaseline = "middle";
  const xTitle = title(xa.spec.title);
  if (xTitle.text && xa.spec.visible !== false) {
    const f = { ...font, size: Math.round(1.2 * font.size), ...(xTitle.font || {}) };
    setFont(f);
    g.fillText(textLines(xTitle.text).join(" "), box.x + box.w / 2, Math.min(box.y + box.h + 27, height - f.size / 2));
  }
  const yTitle = title(ya.spec.title);
  if (yTitle.text && ya.spec.visible !== false) {
    const f = { ...font, size: Math.round(1.2 * font.size), ...(yTitle.font || {}) };
    setFont(f);
    g.save();
    g.translate(Math.max(box.x - 36, f.size / 2), box.y + box.h / 2);
    g.rotate(-Math.PI / 2);
    g.fillText(textLines(yTitle.text).join(" "), 0, 0);
    g.restore();
  }
  const main = title(lay.title);
  if (main.text) {
    const f = { ...font, size: Math.round(1.4 * font.size), ...(main.font || {}) };
    const x = (main.x ?? 0.5) * width;
    const anchor = main.xanchor && main.xanchor !== "auto" ? main.xanchor
      : x < width / 3 ? "left" : x > 2 * width / 3 ? "right" : "center";
    setFont(f);
    g.textAlign = anchor;
    const lines = textLines(main.text);
    const y0 = marginTop / 2 - 0.37 * f.size - (lines.length - 1) * f.size * 0.6;
    lines.forEach((ln, j) => g.fillText(ln, x, y0 + j * f.size * 1.2));
  }
}
