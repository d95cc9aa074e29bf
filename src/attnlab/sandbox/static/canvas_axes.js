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
    this.extremes = [];  // {lo, hi, padded, ppad}: a group of values, each with the room it needs beyond it
  }

  // a category axis: values are placed at the index of their category (Plotly's order: first appearance)
  setCategories(names) {
    this.categories = names;
    this.index = new Map(names.map((n, k) => [n, k]));
  }

  d2l(v) {
    if (this.index) return v === null || v === undefined ? NaN : this.index.get(String(v)) ?? NaN;
    if (!finite(v)) return NaN;
    return this.log ? (v > 0 ? Math.log10(v) : NaN) : +v;
  }

  // values (data units) the autorange must show; `padded`: Plotly's 5% of the axis length beyond them (markers,
  // text, y of lines), `ppad`: pixels beyond that (markers' radii)
  include(values, padded = false, ppad = 0) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of values) {
      const l = this.d2l(v);
      if (Number.isNaN(l)) continue;
      if (l < lo) lo = l;
      if (l > hi) hi = l;
    }
    if (lo <= hi) this.extremes.push({ lo, hi, padded, ppad });
  }

  // the range in linear units: the layout's own, or the autorange: as Plotly, the narrowest range in which every
  // group's extremes keep their room in pixels (the pair of lowest and highest that needs most units per pixel)
  settle(offset, length) {
    this.offset = offset;
    this.length = length;
    const given = this.spec.range;
    if (Array.isArray(given) && given.length === 2 && finite(given[0]) && finite(given[1]) &&
        this.spec.autorange !== true) {
      [this.r0, this.r1] = [+given[0], +given[1]];  // Plotly gives log ranges in log10 units already
      return;
    }
    const pad = (e) => e.ppad + (e.padded ? 0.05 * length : 0);
    const lows = this.extremes.map((e) => ({ v: e.lo, pad: pad(e) }));
    const highs = this.extremes.map((e) => ({ v: e.hi, pad: pad(e) }));
    if (!lows.length) {
      [this.r0, this.r1] = this.log ? [0, 1] : [-1, 1];
    } else {
      let best = null;
      for (const a of lows) {
        for (const b of highs) {
          const units = (b.v - a.v) / Math.max(length - a.pad - b.pad, 1);
          if (!best || units > best.units) best = { a, b, units };
        }
      }
      const { a, b } = best;
      let units = best.units;
      if (!(units > 0)) {  // a single value: Plotly shows ±5% of it (or ±1) around it
        const w = Math.abs(a.v) > 0 ? Math.abs(a.v) * 0.05 : 1;
        units = 2 * w / Math.max(length - a.pad - b.pad, 1);
        [this.r0, this.r1] = [a.v - w - units * a.pad, b.v + w + units * b.pad];
      } else [this.r0, this.r1] = [a.v - units * a.pad, b.v + units * b.pad];
    }
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

  // ticks: [{l, text, small}] inside the range, chosen by Plotly's autotick rules (nticks, else one per 80 px of
  // x / 40 px of y, 5 to 10; steps 2, 5, 10 × 10^k; log axes: whole decades, 1-2-5 or every digit, or linear
  // steps within less than a decade)
  ticks() {
    const lo = Math.min(this.r0, this.r1);
    const hi = Math.max(this.r0, this.r1);
    const inside = (t) => t.l >= lo - 1e-9 * (hi - lo) && t.l <= hi + 1e-9 * (hi - lo);
    if (Array.isArray(this.spec.tickvals)) {
      const text = this.spec.ticktext || [];
      return this.spec.tickvals.map((v, i) => ({ l: this.d2l(v), text: i < text.length ? String(text[i]) : fmt(+v) }))
        .filter(inside);
    }
    if (this.categories) {  // every dtick-th category, dtick = ⌈span / nticks⌉ (else one per 15 px)
      const dtick = Math.ceil(Math.max((hi - lo) / (this.spec.nticks || this.length / 15), 1));
      const out = [];
      for (let k = Math.max(0, Math.ceil(lo)); k <= Math.min(hi, this.categories.length - 1); k++) {
        if (k % dtick === 0) out.push({ l: k, text: this.categories[k] });
      }
      return out;
    }
    const count = this.spec.nticks || Math.min(Math.max(this.length / (this.letter === "y" ? 40 : 80), 4), 9) + 1;
    if (this.log) return logTicks(lo, hi, count).filter(inside);
    return linearTicks(lo, hi, this.spec.dtick > 0 ? +this.spec.dtick : niceStep((hi - lo) / count))
      .map((t) => ({ l: t.v, text: t.text }));
  }
}

// Plotly's roundDTick: 2, 5 or 10 × 10^k, the first above `rough`
export function niceStep(rough) {
  if (!(rough > 0)) return 1;
  const base = 10 ** Math.floor(Math.log10(rough));
  return base * NICE.find((m) => m * base > rough * (1 + 1e-9));
}

function linearTicks(lo, hi, step) {
  const out = [];
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; k++) {
    const v = +(k * step).toFixed(Math.min(decimals + 1, 15));
    out.push({ v, text: fmt(v, decimals) });
  }
  return out;
}

function logTicks(lo, hi, count) {
  const rough = (hi - lo) / count;
  const out = [];
  if (rough > 0.7) {  // powers of ten only, every dtick-th
    const dtick = Math.ceil(rough);
    for (let k = Math.ceil(lo); k <= hi; k++) if (k % dtick === 0) out.push({ l: k, text: fmtPow(k) });
    return out;
  }
  if (hi - lo < 1) {  // less than a decade: linear steps, fully labelled
    const step = niceStep((10 ** hi - 10 ** lo) / (1.5 * count));
    return linearTicks(10 ** lo, 10 ** hi, step).filter((t) => t.v > 0).map((t) => ({ l: Math.log10(t.v), text: t.text }));
  }
  const digits = rough > 0.3 ? [1, 2, 5] : [1, 2, 3, 4, 5, 6, 7, 8, 9];  // Plotly's "D2" and "D1"
  for (let k = Math.floor(lo); k <= Math.ceil(hi); k++) {
    for (const m of digits) out.push(m === 1 ? { l: k, text: fmtPow(k) } : { l: k + Math.log10(m), text: String(m), small: true });
  }
  return out;
}

// 10^k as Plotly writes it: plain from 0.001 to 1000, else with an SI prefix ("10μ", "100k", "1B")
const PREFIX = { "-15": "f", "-12": "p", "-9": "n", "-6": "μ", 3: "k", 6: "M", 9: "B", 12: "T" };
function fmtPow(k) {
  if (Math.abs(k) <= 3) return String(+(10 ** k).toPrecision(1));
  const e3 = 3 * Math.floor(k / 3);
  return PREFIX[e3] ? `${10 ** (k - e3)}${PREFIX[e3]}` : `1e${k < 0 ? "−" : ""}${Math.abs(k)}`;
}

// a tick label: fixed decimals when given, else 4 significant digits; Plotly's minus sign and SI suffixes
export function fmt(v, decimals) {
  const a = Math.abs(v);
  let s;
  if (a >= 1e4 && decimals === undefined || a >= 1e6) {
    const [div, suffix] = a >= 1e9 ? [1e9, "B"] : a >= 1e6 ? [1e6, "M"] : [1e3, "k"];
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
