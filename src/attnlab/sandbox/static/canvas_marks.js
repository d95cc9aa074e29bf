// Marks of the canvas renderer: Plotly's marker symbols (size = diameter in px, "-open" = hollow), dash
// patterns, colour scales given as [[fraction, colour], ...], and Plotly's small text markup (<br>, tags dropped).

export const FONT = '"Open Sans", verdana, arial, sans-serif';

const SQRT3 = Math.sqrt(3);

// path of a symbol of radius r centred on (x, y); `angle` in degrees clockwise from up (the arrow's heading)
const SHAPES = {
  circle: (g, x, y, r) => g.arc(x, y, r, 0, 2 * Math.PI),
  square: (g, x, y, r) => g.rect(x - r * 0.9, y - r * 0.9, 1.8 * r, 1.8 * r),
  diamond: (g, x, y, r) => poly(g, x, y, [[0, -1.3 * r], [1.3 * r, 0], [0, 1.3 * r], [-1.3 * r, 0]]),
  "triangle-up": (g, x, y, r) => poly(g, x, y, [[0, -1.15 * r], [SQRT3 * 0.66 * r, 0.58 * r],
    [-SQRT3 * 0.66 * r, 0.58 * r]]),
  "triangle-down": (g, x, y, r) => poly(g, x, y, [[0, 1.15 * r], [SQRT3 * 0.66 * r, -0.58 * r],
    [-SQRT3 * 0.66 * r, -0.58 * r]]),
  cross: (g, x, y, r) => {
    const a = 0.4 * r;
    poly(g, x, y, [[-a, -r], [a, -r], [a, -a], [r, -a], [r, a], [a, a], [a, r], [-a, r], [-a, a], [-r, a],
      [-r, -a], [-a, -a]]);
  },
  x: (g, x, y, r) => {
    const a = 0.4 * r / Math.SQRT2 * 2;
    const pts = [[0, -a], [r - a, -r], [r, -r + a], [a, 0], [r, r - a], [r - a, r], [0, a], [-r + a, r], [-r, r - a],
      [-a, 0], [-r, -r + a], [-r + a, -r]];
    poly(g, x, y, pts);
  },
  star: (g, x, y, r) => {
    const pts = [];
    for (let i = 0; i < 10; i++) {
      const a = Math.PI / 5 * i - Math.PI / 2;
      const rr = i % 2 ? 0.45 * r * 1.3 : 1.3 * r;
      pts.push([rr * Math.cos(a), rr * Math.sin(a)]);
    }
    poly(g, x, y, pts);
  },
  arrow: (g, x, y, r, angle) => {
    const t = (angle || 0) * Math.PI / 180;
    const rot = ([u, v]) => [u * Math.cos(t) - v * Math.sin(t), u * Math.sin(t) + v * Math.cos(t)];
    poly(g, x, y, [[0, 0], [-0.9 * r, 1.8 * r], [0.9 * r, 1.8 * r]].map(rot));
  },
};
const LINES = {  // "-thin" symbols are strokes only
  "cross-thin": (g, x, y, r) => {
    const a = 1.4 * r;  // Plotly's arms
    g.moveTo(x - a, y); g.lineTo(x + a, y); g.moveTo(x, y - a); g.lineTo(x, y + a);
  },
  "x-thin": (g, x, y, r) => {
    const a = r / Math.SQRT2 * 1.2;
    g.moveTo(x - a, y - a); g.lineTo(x + a, y + a); g.moveTo(x - a, y + a); g.lineTo(x + a, y - a);
  },
};

function poly(g, x, y, pts) {
  g.moveTo(x + pts[0][0], y + pts[0][1]);
  for (let i = 1; i < pts.length; i++) g.lineTo(x + pts[i][0], y + pts[i][1]);
  g.closePath();
}

const base = (symbol) => String(symbol || "circle").replace(/-open$/, "");

export function knownSymbol(symbol) {
  const b = base(symbol);
  return b in SHAPES || b in LINES;
}

// one marker: fill (unless open), outline of `line` = {width, color}
export function marker(g, x, y, symbol, size, fill, line, angle) {
  const name = base(symbol);
  const open = String(symbol || "").endsWith("-open");
  const r = size / 2;
  g.beginPath();
  if (name in LINES) {
    LINES[name](g, x, y, r);
    g.strokeStyle = fill;
    g.lineWidth = Math.max(1, line && line.width ? line.width : 1);
    g.stroke();
    return;
  }
  SHAPES[name](g, x, y, r, angle);
  if (open) {
    g.strokeStyle = fill;
    g.lineWidth = Math.max(1, line && line.width ? line.width : 1);
    g.stroke();
    return;
  }
  g.fillStyle = fill;
  g.fill();
  if (line && line.width > 0) {
    g.strokeStyle = line.color || "#444";
    g.lineWidth = line.width;
    g.stroke();
  }
}

// Plotly's dash names (Drawing.dashStyle): in units of max(line width, 3) px
export function dashPattern(dash, width) {
  const u = Math.max(width || 1, 3);
  const p = { dot: [1, 1], dash: [3, 3], longdash: [5, 5], dashdot: [3, 1, 1, 1], longdashdot: [5, 2, 1, 2] };
  return (p[dash] || []).map((v) => v * u);
}

// [[f, colour], ...] → f ∈ [0, 1] → "rgb(...)" (linear interpolation in RGB, as Plotly does)
export function colorScale(scale) {
  const stops = scale.map(([f, c]) => [+f, parseColor(c)]).sort((a, b) => a[0] - b[0]);
  return (f) => {
    if (!Number.isFinite(f)) return null;
    if (f <= stops[0][0]) return css(stops[0][1]);
    for (let i = 1; i < stops.length; i++) {
      if (f <= stops[i][0]) {
        const [f0, c0] = stops[i - 1];
        const [f1, c1] = stops[i];
        const t = f1 > f0 ? (f - f0) / (f1 - f0) : 1;
        return css(c0.map((v, k) => v + t * (c1[k] - v)));
      }
    }
    return css(stops.at(-1)[1]);
  };
}

const css = (c) => `rgb(${Math.round(c[0])},${Math.round(c[1])},${Math.round(c[2])})`;

let probe = null;
// any CSS colour → [r, g, b] (the canvas parses it; results are cached)
const parsed = new Map();
export function parseColor(c) {
  if (parsed.has(c)) return parsed.get(c);
  probe = probe || document.createElement("canvas").getContext("2d", { willReadFrequently: true });
  probe.clearRect(0, 0, 1, 1);
  probe.fillStyle = "#000";
  probe.fillStyle = c;
  probe.fillRect(0, 0, 1, 1);
  const d = probe.getImageData(0, 0, 1, 1).data;
  const rgb = [d[0], d[1], d[2]];
  parsed.set(c, rgb);
  return rgb;
}

// Plotly text markup → lines of plain text
export function textLines(s) {
  return String(s ?? "").split(/<br\s*\/?>/i).map((line) => line.replace(/<[^>]*>/g, "")
    .replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&"));
}
