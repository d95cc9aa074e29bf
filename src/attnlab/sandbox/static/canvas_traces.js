// Traces of the canvas renderer, drawn as Plotly draws them: heatmaps (cells coloured by a [[f, colour], ...]
// scale between zmin and zmax), images (pixel (0, 0) centred on (x0, y0), rows along dy), and 2-D scatter traces
// (lines with gaps at missing values, error bars, markers, text). Each returns nothing; hoverable points and heatmap
// cells are appended to the lists it is given.
import { colorScale, dashPattern, marker, textLines } from "./canvas_marks.js";

const COLORWAY = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
  "#bcbd22", "#17becf"];

// cell edges of a heatmap axis: from centres `c`, or from x0 + k·dx
export function edges(c, x0 = 0, dx = 1, n) {
  if (!Array.isArray(c) || c.length !== n) return Array.from({ length: n + 1 }, (_, k) => x0 + (k - 0.5) * dx);
  if (n === 1) return [c[0] - 0.5, c[0] + 0.5];
  const e = [c[0] - (c[1] - c[0]) / 2];
  for (let k = 1; k < n; k++) e.push((c[k - 1] + c[k]) / 2);
  e.push(c[n - 1] + (c[n - 1] - c[n - 2]) / 2);
  return e;
}

export function heatmap(g, t, xa, ya, cells, index) {
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

export function image(g, t, img, xa, ya) {
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

export function scatter(g, t, index, xa, ya, font, points) {
  const mode = t.mode || "markers";
  const n = t.y.length;
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    xs[k] = xa.d2p(t.x ? t.x[k] : k);
    ys[k] = ya.d2p(t.y[k]);
  }
  const base = traceColor(t, index);
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
  errorBars(g, t, xs, ys, xa, ya, base);
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

// a trace's own colour: its marker's or line's when one colour is given, else Plotly's colorway
export function traceColor(t, index) {
  const c = (t.marker || {}).color;
  return typeof c === "string" ? c : (t.line || {}).color || COLORWAY[index % COLORWAY.length];
}

// [minus, plus] of point k's error bar (Plotly's types: data arrays, a constant, a percentage of the value)
export function errorBar(e, v, k) {
  const type = e.type || ("array" in e ? "data" : "percent");
  const sym = e.symmetric ?? !("arrayminus" in e || "valueminus" in e);  // Plotly's default
  let plus;
  let minus;
  if (type === "data") {
    plus = (e.array || [])[k] ?? 0;
    minus = sym ? plus : (e.arrayminus || [])[k] ?? 0;
  } else if (type === "constant") {
    plus = e.value ?? 10;
    minus = sym ? plus : e.valueminus ?? 10;
  } else {
    plus = Math.abs(v[k]) * (e.value ?? 10) / 100;
    minus = sym ? plus : Math.abs(v[k]) * (e.valueminus ?? 10) / 100;
  }
  return [+minus || 0, +plus || 0];
}

// error bars (thickness 2, caps ±4 px by default, in the trace's colour), beneath the markers as in Plotly
function errorBars(g, t, xs, ys, xa, ya, color) {
  for (const [e, values, vertical] of [[t.error_y, t.y, true], [t.error_x, t.x, false]]) {
    if (!e || e.visible === false || !values) continue;
    const cap = e.width ?? 4;
    g.beginPath();
    for (let k = 0; k < xs.length; k++) {
      if (!Number.isFinite(xs[k]) || !Number.isFinite(ys[k])) continue;
      const [minus, plus] = errorBar(e, values, k);
      const ax = vertical ? ya : xa;
      const [p0, p1] = [ax.d2p(values[k] - minus), ax.d2p(+values[k] + plus)];
      if (vertical) {
        g.moveTo(xs[k], p0); g.lineTo(xs[k], p1);
        if (cap > 0) { g.moveTo(xs[k] - cap, p0); g.lineTo(xs[k] + cap, p0); g.moveTo(xs[k] - cap, p1); g.lineTo(xs[k] + cap, p1); }
      } else {
        g.moveTo(p0, ys[k]); g.lineTo(p1, ys[k]);
        if (cap > 0) { g.moveTo(p0, ys[k] - cap); g.lineTo(p0, ys[k] + cap); g.moveTo(p1, ys[k] - cap); g.lineTo(p1, ys[k] + cap); }
      }
    }
    g.strokeStyle = e.color || color;
    g.lineWidth = e.thickness ?? 2;
    g.stroke();
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
