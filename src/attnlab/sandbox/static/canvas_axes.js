// Cartesian axes of the canvas renderer: data → pixel maps, autorange, equal aspect and tick choice, following
// Plotly's rules for the layout keys the sandbox's panels use (linear and log axes, explicit ranges, reversed
// ranges, tickvals/ticktext, dtick, nticks, scaleanchor), so that a panel reads the same in either renderer.

const NICE = [1, 2, 5, 10];

const finite = (v) => v !== null && v !== undefined && Number.isFinite(+v);

// One axis: `l` is the linear coordinate (log10 of the data on a log axis), `p` the pixel in the page.
export class Axis {
  constructor(spec, letter) {
    this.spec = spec || {};
    this.letter = letter;
    this.log = this.spec.type === "log";
    this.reversed = this.spec.autorange === "reversed";
    this.lo = Infinity;
    this.hi = -Infinity;
    this.padded = false;  // Plotly's 5% of the axis length beyond the data (markers, text; y of lines)
    this.ppad = 0;  // and pixels beyond that (markers' radii)
  }

  d2l(v) {
    if (!finite(v)) return NaN;
    return this.log ? (v > 0 ? Math.log10(v) : NaN) : +v;
  }

  // widen the data extent by values given in data units
  include(values, padded = false, ppad = 0) {
    for (const v of values) {
      const l = this.d2l(v);
      if (Number.isNaN(l)) continue;
      if (l < this.lo) this.lo = l;
      if (l > this.hi) this.hi = l;
    }
    this.padded ||= padded;
    this.ppad = Math.max(this.ppad, ppad);
  }

  // the range in linear units: the layout's own, or the data extent padded as Plotly pads it
  settle(offset, length) {
    this.offset = offset;
    this.length = length;
    const given = this.spec.range;
    if (Array.isArray(given) && given.length === 2 && finite(given[0]) && finite(given[1]) &&
        this.spec.autorange !== true) {
      [this.r0, this.r1] = [+given[0], +given[1]];  // Plotly gives log ranges in log10 units already
      return;
    }
    let lo = this.lo;
    let hi = this.hi;
    if (!(lo <= hi)) [lo, hi] = this.log ? [0, 1] : [-1, 1];
    if (hi - lo < 1e-12) {
      const w = Math.abs(lo) > 0 ? Math.abs(lo) * 0.05 : 1;
      lo -= w;
      hi += w;
    }
    const span = hi - lo;
    const pad = this.ppad + (this.padded ? 0.05 * length : 0);
    const frac = pad / Math.max(length - 2 * pad, 1);
    this.r0 = lo - frac * span;
    this.r1 = hi + frac * span;
    if (this.reversed) [this.r0, this.r1] = [this.r1, this.r0];
  }

  // pixels per linear unit (signed: y grows downwards on screen)
  get scale() {
    const s = this.length / (this.r1 - this.r0);
    return this.letter === "y" ? -s : s;
  }

  l2p(l) {
    return this.letter === "y" ? this.offset + this.length - (l - this.r0) / (this.r1 - this.r0) * this.length
      : this.offset + (l - this.r0) / (this.r1 - this.r0) * this.length;
  }

  d2p(v) {
    return this.l2p(this.d2l(v));
  }

  p2l(p) {
    const f = this.letter === "y" ? (this.offset + this.length - p) / this.length : (p - this.offset) / this.length;
    return this.r0 + f * (this.r1 - this.r0);
  }

  // ticks: [{l, text}] inside the range
  ticks() {
    const lo = Math.min(this.r0, this.r1);
    const hi = Math.max(this.r0, this.r1);
    const inside = (l) => l >= lo - 1e-9 * (hi - lo) && l <= hi + 1e-9 * (hi - lo);
    if (Array.isArray(this.spec.tickvals)) {
      const text = this.spec.ticktext || [];
      return this.spec.tickvals.map((v, i) => ({ l: this.d2l(v), text: i < text.length ? String(text[i]) : fmt(+v) }))
        .filter((t) => inside(t.l));
    }
    const count = this.spec.nticks || Math.max(3, Math.min(10, Math.round(this.length / 70)));
    if (this.log) return logTicks(lo, hi, count).filter((t) => inside(t.l));
    const step = this.spec.dtick > 0 ? +this.spec.dtick : niceStep((hi - lo) / count);
    const out = [];
    const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; k++) {
      const l = +(k * step).toFixed(Math.min(decimals + 1, 15));
      out.push({ l, text: fmt(l, decimals) });
    }
    return out;
  }
}

// the smallest of 1, 2, 5 × 10^k at least `rough`
export function niceStep(rough) {
  if (!(rough > 0)) return 1;
  const base = 10 ** Math.floor(Math.log10(rough));
  return base * NICE.find((m) => m * base >= rough * (1 - 1e-9));
}

function logTicks(lo, hi, count) {
  const decades = hi - lo;
  const out = [];
  if (decades > count * 0.6) {  // whole decades only, every `every`-th
    const every = Math.max(1, Math.ceil(decades / count));
    for (let k = Math.ceil(lo); k <= hi; k++) if (k % every === 0) out.push({ l: k, text: fmtPow(k) });
    return out;
  }
  const mult = decades > count * 0.3 ? [1] : decades > 1.2 ? [1, 2, 5] : [1, 2, 3, 5];
  for (let k = Math.floor(lo); k <= Math.ceil(hi); k++) {
    for (const m of mult) out.push({ l: k + Math.log10(m), text: fmt(m * 10 ** k) });
  }
  return out;
}

function fmtPow(k) {
  return Math.abs(k) <= 4 ? fmt(10 ** k) : `1e${k < 0 ? "−" : ""}${Math.abs(k)}`;
}

// a tick label: fixed decimals when given, else 4 significant digits; Plotly's minus sign and SI suffixes
export function fmt(v, decimals) {
  const a = Math.abs(v);
  let s;
  if (a >= 1e4 && decimals === undefined || a >= 1e6) {
    const [div, suffix] = a >= 1e9 ? [1e9, "G"] : a >= 1e6 ? [1e6, "M"] : [1e3, "k"];
    s = `${+(a / div).toPrecision(3)}${suffix}`;
  } else if (decimals !== undefined) s = String(+a.toFixed(Math.min(decimals, 12)));  // "1", "0.5", as Plotly
  else s = a === 0 ? "0" : a < 1e-4 ? a.toExponential(1) : String(+a.toPrecision(4));
  return v < 0 && +s !== 0 ? `−${s}` : s;
}

// Plotly's scaleanchor: one data unit of y spans `ratio` data units of x in pixels. The axis whose scale is too
// large is compressed as its `constrain` says: a wider range around its centre ("range", Plotly's default), or
// a shorter, centred domain ("domain", the default of axes that hold an image).
export function equalAspect(xa, ya, ratio = 1, fallback = "range") {
  const sx = Math.abs(xa.scale);
  const sy = Math.abs(ya.scale) / ratio;
  if (sx === sy) return;
  const [ax, factor] = sx > sy ? [xa, sx / sy] : [ya, sy / sx];
  if ((ax.spec.constrain || fallback) === "domain") {
    const length = ax.length / factor;
    ax.offset += (ax.length - length) / 2;
    ax.length = length;
  } else {
    const c = (ax.r0 + ax.r1) / 2;
    const h = (ax.r1 - ax.r0) / 2 * factor;
    [ax.r0, ax.r1] = [c - h, c + h];
  }
}
