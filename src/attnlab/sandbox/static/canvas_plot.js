// The canvas renderer of frame panels: draws a Plotly figure ({data, layout}) on a <canvas> in about a
// millisecond, where Plotly.react takes 8-20 ms a panel (its defaults, axes and SVG are rebuilt on every frame),
// so scrubbing a run redraws every panel within one animation frame. It draws the figures the sandbox's panels
// make (2-D scatter with markers, lines and text; heatmaps; images; line and rect shapes; linear and log axes,
// equal aspect) and says no (`canDraw`) to anything else, which Plotly then draws. Hovering a point shows its
// hover text as Plotly would; `div.data` and `div.layout` hold the drawn figure, as on a Plotly div.
import { Axis, equalAspect } from "./canvas_axes.js";
import { FONT, colorScale, dashPattern, knownSymbol, marker, textLines } from "./canvas_marks.js";
import { hoverAt, showHover } from "./canvas_hover.js";

const COLORWAY = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
  "#bcbd22", "#17becf"];
const MARGIN = { l: 80, r: 80, t: 100, b: 80 };
const HOVER_DISTANCE = 20;

const keys = (s) => new Set(s.split(" "));
const LAYOUT = keys("title margin showlegend hovermode xaxis yaxis uirevision paper_bgcolor plot_bgcolor font shapes " +
  "width height");
const AXIS = keys("title zeroline nticks ticklabeloverflow range type autorange scaleanchor scaleratio constrain " +
  "tickvals ticktext tickfont dtick showgrid showticklabels visible gridcolor zerolinecolor");
const TRACES = {
  scatter: keys("type mode name x y marker line text hovertext hoverinfo hovertemplate customdata textposition " +
    "textfont showlegend connectgaps opacity uid cliponaxis"),
  heatmap: keys("type name z x y x0 dx y0 dy zmin zmax colorscale showscale hoverinfo hovertemplate customdata " +
    "xgap ygap text hovertext uid"),
  image: keys("type name source x0 y0 dx dy hoverinfo uid"),
};
const MARKER = keys("size symbol color line opacity angle");
const SHAPE = keys("type x0 x1 y0 y1 xref yref line fillcolor opacity layer");

const colors = (c) => c === undefined || typeof c === "string" || (Array.isArray(c) && c.every((v) => typeof v === "string"));
const arr = (v) => Array.isArray(v) ? v : [v];

// Why this renderer cannot draw the figure exactly ("" when it can; Plotly then draws it).
export function whyNot(fig) {
  const lay = fig.layout || {};
  const extra = (obj, allowed) => Object.keys(obj || {}).filter((k) => !allowed.has(k)).join(",");
  const bad = extra(lay, LAYOUT);
  if (bad) return `layout.${bad}`;
  if (lay.showlegend) return "legend";
  for (const [name, ax] of [["xaxis", lay.xaxis || {}], ["yaxis", lay.yaxis || {}]]) {
    if (extra(ax, AXIS)) return `${name}.${extra(ax, AXIS)}`;
    if (ax.type && !["linear", "log", "-"].includes(ax.type)) return `${name}.type ${ax.type}`;
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
    if (type === "scatter") {
      const m = t.marker || {};
      if (extra(m, MARKER)) return `marker.${extra(m, MARKER)}`;
      if (!colors(m.color)) return "marker.color (numbers: a colour scale)";
      if (!arr(m.symbol ?? "circle").every(knownSymbol)) return `marker.symbol ${m.symbol}`;
      if (extra(m.line, keys("width color")) || typeof (m.line?.color ?? "") !== "string") return "marker.line";
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
  const [xa, ya] = axes(fig, images, { x: m.l, y: m.t, w: Math.max(width - m.l - m.r, 10),
    h: Math.max(height - m.t - m.b, 10) });
  const box = { x: xa.offset, y: ya.offset, w: xa.length, h: ya.length };  // the plot area, after equal aspect
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
  shapes(g, lay.shapes, "below", xa, ya, box);
  s.points = [];
  s.cells = [];
  fig.data.forEach((t, i) => {
    if (t.type === "heatmap") heatmap(g, t, xa, ya, s.cells, i);
    else if (t.type === "image") image(g, t, images[i], xa, ya);
    else scatter(g, t, i, xa, ya, font, s.points);
  });
  shapes(g, lay.shapes, "above", xa, ya, box);
  g.restore();
  labels(g, lay, xa, ya, xt, yt, box, font, width, height);
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
      const r = mode.includes("markers") ? Math.max(...arr((t.marker || {}).size ?? 6)) / 2 : 0;
      xa.include(t.x ?? t.y.map((_, k) => k), padded, r);
      ya.include(t.y, true, r);
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

// cell edges of a heatmap axis: from centres `c`, or from x0 + k·dx
function edges(c, x0 = 0, dx = 1, n) {
  if (!Array.isArray(c) || c.length !== n) return Array.from({ length: n + 1 }, (_, k) => x0 + (k - 0.5) * dx);
  if (n === 1) return [c[0] - 0.5, c[0] + 0.5];
  const e = [c[0] - (c[1] - c[0]) / 2];
  for (let k = 1; k < n; k++) e.push((c[k - 1] + c[k]) / 2);
  e.push(c[n - 1] + (c[n - 1] - c[n - 2]) / 2);
  return e;
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
    if (ax.spec.zeroline !== false && ax.spec.visible !== false && !ax.log && lo < 0 && hi > 0) {
      const p = Math.round(ax.l2p(0)) + 0.5;
      g.strokeStyle = ax.spec.zerolinecolor || "#444";
      g.beginPath();
      if (vertical) { g.moveTo(p, box.y); g.lineTo(p, box.y + box.h); } else { g.moveTo(box.x, p); g.lineTo(box.x + box.w, p); }
      g.stroke();
    }
  }
}

function shapes(g, list, layer, xa, ya, box) {
  for (const sh of list || []) {
    if ((sh.layer || "above") !== layer) continue;
    const px = (v) => sh.xref === "paper" ? box.x + v * box.w : xa.d2p(v);
    const py = (v) => sh.yref === "paper" ? box.y + (1 - v) * box.h : ya.d2p(v);
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

// -- traces -------------------------------------------------------------------------------------------
function heatmap(g, t, xa, ya, cells, index) {
  const ny = t.z.length;
  const nx = (t.z[0] || []).length;
  const xe = edges(t.x, t.x0, t.dx, nx).map((v) => xa.d2p(v));
  const ye = edges(t.y, t.y0, t.dy, ny).map((v) => ya.d2p(v));
  let zmin = t.zmin;
  let zmax = t.zmax;
  if (zmin === undefined || zmax === undefined) {
    const all = t.z.flat().filter(Number.isFinite);
    zmin ??= Math.min(...all);
    zmax ??= Math.max(...all);
  }
  const color = colorScale(t.colorscale);
  const span = zmax - zmin || 1;
  const [gx, gy] = [(t.xgap || 0) / 2, (t.ygap || 0) / 2];
  for (let j = 0; j < ny; j++) {
    const [top, bottom] = [Math.round(Math.min(ye[j], ye[j + 1])), Math.round(Math.max(ye[j], ye[j + 1]))];
    for (let i = 0; i < nx; i++) {
      const z = t.z[j][i];
      if (z === null || !Number.isFinite(z)) continue;
      const [left, right] = [Math.round(Math.min(xe[i], xe[i + 1])), Math.round(Math.max(xe[i], xe[i + 1]))];
      g.fillStyle = color(Math.min(1, Math.max(0, (z - zmin) / span)));
      g.fillRect(left + gx, top + gy, right - left - 2 * gx, bottom - top - 2 * gy);
    }
  }
  cells.push({ trace: index, xe, ye });
}

function image(g, t, img, xa, ya) {
  const { x0 = 0, y0 = 0, dx = 1, dy = 1 } = t;
  const left = xa.d2p(x0 - dx / 2);
  const top = ya.d2p(y0 - dy / 2);
  g.save();
  g.imageSmoothingEnabled = false;
  g.translate(left, top);
  g.scale(xa.d2p(x0 + dx / 2) - left, ya.d2p(y0 + dy / 2) - top);  // one image pixel, signed (flips as needed)
  g.drawImage(img, 0, 0);
  g.restore();
}

function scatter(g, t, index, xa, ya, font, points) {
  const mode = t.mode || "markers";
  const n = t.y.length;
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    xs[k] = xa.d2p(t.x ? t.x[k] : k);
    ys[k] = ya.d2p(t.y[k]);
  }
  const base = COLORWAY[index % COLORWAY.length];
  const line = { width: 2, color: base, ...(t.line || {}) };
  const mk = { size: 6, symbol: "circle", color: base, ...(t.marker || {}) };
  g.save();
  g.globalAlpha = t.opacity ?? 1;
  if (mode.includes("lines") && line.width > 0) {
    g.beginPath();
    let pen = false;
    for (let k = 0; k < n; k++) {
      if (!Number.isFinite(xs[k]) || !Number.isFinite(ys[k])) {
        pen = false;
        continue;
      }
      if (pen) g.lineTo(xs[k], ys[k]);
      else g.moveTo(xs[k], ys[k]);
      pen = true;
    }
    g.setLineDash(dashPattern(line.dash, line.width));
    g.strokeStyle = line.color;
    g.lineWidth = line.width;
    g.lineJoin = "round";
    g.stroke();
    g.setLineDash([]);
  }
  const at = (v, k) => Array.isArray(v) ? v[k] : v;
  if (mode.includes("markers")) {
    g.globalAlpha = (t.opacity ?? 1) * (mk.opacity ?? 1);
    for (let k = 0; k < n; k++) {
      if (!Number.isFinite(xs[k]) || !Number.isFinite(ys[k])) continue;
      marker(g, xs[k], ys[k], at(mk.symbol, k), at(mk.size, k), at(mk.color, k), mk.line, mk.angle);
    }
  }
  if (mode.includes("text") && t.text) text(g, t, xs, ys, mode.includes("markers") ? mk.size : 0, font);
  g.restore();
  if (t.hoverinfo === "skip" || t.hoverinfo === "none") return;
  for (let k = 0; k < n; k++) {
    if (Number.isFinite(xs[k]) && Number.isFinite(ys[k])) {
      points.push({ x: xs[k], y: ys[k], trace: index, point: k, color: at(mk.color, k) || base });
    }
  }
}

// text of a scatter trace, placed by `textposition` around each point (Plotly's default: middle center)
function text(g, t, xs, ys, size, font) {
  const tf = { ...font, ...(t.textfont || {}) };
  const [v, h] = (t.textposition || "middle center").split(" ");
  const off = (Array.isArray(size) ? 0 : size / 2) + 2;
  g.font = `${tf.size}px ${tf.family}`;
  g.fillStyle = tf.color;
  g.textAlign = h === "right" ? "left" : h === "left" ? "right" : "center";
  g.textBaseline = v === "top" ? "bottom" : v === "bottom" ? "top" : "middle";
  const dx = h === "right" ? off : h === "left" ? -off : 0;
  const dy = v === "top" ? -off : v === "bottom" ? off : 0;
  for (let k = 0; k < xs.length; k++) {
    const s = Array.isArray(t.text) ? t.text[k] : t.text;
    if (s === undefined || s === null || !Number.isFinite(xs[k]) || !Number.isFinite(ys[k])) continue;
    textLines(s).forEach((ln, j, all) => g.fillText(ln, xs[k] + dx, ys[k] + dy + (j - (all.length - 1)) * tf.size * 1.2));
  }
}

// -- tick labels and titles ---------------------------------------------------------------------------
function labels(g, lay, xa, ya, xt, yt, box, font, width, height) {
  g.fillStyle = font.color;
  const tickFont = (ax) => ({ ...font, ...(ax.spec.tickfont || {}) });
  let yLabelWidth = 0;
  if (ya.spec.showticklabels !== false) {
    const f = tickFont(ya);
    g.font = `${f.size}px ${f.family}`;
    g.textAlign = "right";
    g.textBaseline = "middle";
    for (const t of yt) {
      g.fillText(t.text, box.x - 4, ya.l2p(t.l));
      yLabelWidth = Math.max(yLabelWidth, g.measureText(t.text).width);
    }
  }
  let xLabelHeight = 0;
  if (xa.spec.showticklabels !== false && xt.length) {
    const f = tickFont(xa);
    g.font = `${f.size}px ${f.family}`;
    g.textAlign = "center";
    g.textBaseline = "top";
    let right = -Infinity;
    for (const t of xt) {
      const p = xa.l2p(t.l);
      const w = g.measureText(t.text).width;
      if (p - w / 2 < right + 3) continue;  // no overlapping labels
      g.fillText(t.text, p, box.y + box.h + 4);
      right = p + w / 2;
    }
    xLabelHeight = f.size + 4;
  }
  const title = (spec) => (typeof spec === "string" ? spec : spec && spec.text) || "";
  const xTitle = xa.spec.visible === false ? "" : title(xa.spec.title);
  const yTitle = ya.spec.visible === false ? "" : title(ya.spec.title);
  g.font = `${font.size}px ${font.family}`;
  if (xTitle) {
    g.textAlign = "center";
    g.textBaseline = "top";
    g.fillText(textLines(xTitle).join(" "), box.x + box.w / 2, Math.min(box.y + box.h + xLabelHeight + 4, height - font.size - 2));
  }
  if (yTitle) {
    g.save();
    g.translate(Math.max(box.x - yLabelWidth - 8 - font.size, 2), box.y + box.h / 2);
    g.rotate(-Math.PI / 2);
    g.textAlign = "center";
    g.textBaseline = "top";
    g.fillText(textLines(yTitle).join(" "), 0, 0);
    g.restore();
  }
  const main = typeof lay.title === "string" ? { text: lay.title } : lay.title || {};
  if (main.text) {
    const f = { ...font, size: font.size * 17 / 12, ...(main.font || {}) };
    const x = (main.x ?? 0.5) * width;
    const anchor = main.xanchor && main.xanchor !== "auto" ? main.xanchor : x < width / 3 ? "left" : x > 2 * width / 3 ? "right" : "center";
    g.font = `${f.size}px ${f.family}`;
    g.fillStyle = f.color || font.color;
    g.textAlign = anchor;
    g.textBaseline = "middle";
    const lines = textLines(main.text);
    const y0 = box.y / 2 - (lines.length - 1) * f.size * 0.6;
    lines.forEach((ln, j) => g.fillText(ln, x, y0 + j * f.size * 1.2));
  }
}
