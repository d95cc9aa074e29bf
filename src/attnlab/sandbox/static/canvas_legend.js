// The legend of the canvas renderer, measured and placed as Plotly places a vertical legend: items 19 px apart
// (fonts up to 12 px), text 40 px from the box's left edge, box width = widest text + 45 px, 5 px padding above
// and below; x/y in fractions of the plot area with Plotly's anchors; a legend outside on the right (the default
// x = 1.02) widens the right margin by its width, so the plot area shrinks as Plotly's does.
import { FONT, marker, dashPattern, textLines } from "./canvas_marks.js";

const ITEM = 19;
const TEXT_X = 40;

// the legend's entries and size, or null when the figure shows none
export function measureLegend(g, fig, font) {
  const lay = fig.layout || {};
  if (!lay.showlegend) return null;
  const spec = lay.legend || {};
  const f = { ...font, ...(spec.font || {}) };
  const items = fig.data.map((t, i) => ({ t, i })).filter(({ t }) => t.showlegend !== false);
  if (!items.length) return null;
  g.font = `${f.size}px ${f.family || FONT}`;
  const names = items.map(({ t, i }) => textLines(t.name ?? `trace ${i}`).join(" "));
  const width = Math.ceil(Math.max(...names.map((n) => g.measureText(n).width)) + TEXT_X + 5);
  const item = Math.max(16, 1.3 * f.size) + 3;
  return { spec, font: f, items, names, width, height: items.length * item + 10, item,
    x: spec.x ?? 1.02, y: spec.y ?? 1, xanchor: spec.xanchor || "left", yanchor: spec.yanchor || "auto" };
}

// plot-area width left once a legend outside on the right has its room
export function plotWidth(legend, width, m) {
  const w = width - m.l - m.r;
  if (!legend || legend.xanchor !== "left" || legend.x < 1) return w;
  return Math.round((width - m.l - m.r - legend.width) / legend.x);
}

export function drawLegend(g, legend, box, colorOf, paper) {
  const { x, y, width, height, item } = legend;
  const fx = legend.xanchor === "auto" ? (x >= 2 / 3 ? 1 : x <= 1 / 3 ? 0 : 0.5)
    : { left: 0, center: 0.5, right: 1 }[legend.xanchor] ?? 0;
  const fy = legend.yanchor === "auto" ? (y >= 2 / 3 ? 0 : y <= 1 / 3 ? 1 : 0.5)
    : { top: 0, middle: 0.5, bottom: 1 }[legend.yanchor] ?? 0;
  const left = box.x + x * box.w - fx * width;
  const top = box.y + (1 - y) * box.h - fy * height;
  g.fillStyle = legend.spec.bgcolor || paper;
  g.fillRect(left, top, width, height);
  g.font = `${legend.font.size}px ${legend.font.family || FONT}`;
  g.textAlign = "left";
  g.textBaseline = "middle";
  legend.items.forEach(({ t, i }, k) => {
    const cy = top + 5 + (k + 0.5) * item;
    const color = colorOf(t, i);
    const mode = t.type === "scatter" || !t.type ? t.mode || "markers" : "markers";
    if (mode.includes("lines")) {
      const line = { width: 2, color, ...(t.line || {}) };
      g.beginPath();
      g.moveTo(left + 5, cy);
      g.lineTo(left + 35, cy);
      g.setLineDash(dashPattern(line.dash, line.width));
      g.strokeStyle = line.color;
      g.lineWidth = Math.min(line.width, 5);
      g.stroke();
      g.setLineDash([]);
    }
    if (mode.includes("markers")) {
      const m = t.marker || {};
      const first = (v, d) => (Array.isArray(v) ? v[0] : v) ?? d;
      marker(g, left + 20, cy, first(m.symbol, "circle"), Math.min(first(m.size, 6), 16), first(m.color, color),
        m.line, m.angle);
    }
    g.fillStyle = legend.font.color;
    g.fillText(legend.names[k], left + TEXT_X, cy);
  });
}
