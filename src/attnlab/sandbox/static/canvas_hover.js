// Hover of the canvas renderer: the nearest point within Plotly's hover distance, else the heatmap cell under
// the mouse, labelled as Plotly labels it (hovertemplate with %{x} %{y} %{z} %{customdata} %{text} and
// d3-style ".3f" / ".3g" formats; hoverinfo "text" → hovertext; otherwise the point's coordinates).
import { textLines } from "./canvas_marks.js";

export function hoverAt(s, [mx, my], distance) {
  let best = null;
  let bestD = distance * distance;
  for (const p of s.points) {
    const d = (p.x - mx) ** 2 + (p.y - my) ** 2;
    if (d <= bestD) {
      bestD = d;
      best = p;
    }
  }
  if (best) {
    const t = s.fig.data[best.trace];
    const k = best.point;
    return { x: best.x, y: best.y, color: best.color, lines: label(t, { x: t.x ? t.x[k] : k, y: t.y[k] }, k) };
  }
  for (const c of s.cells) {
    const i = findCell(c.xe, mx);
    const j = findCell(c.ye, my);
    if (i < 0 || j < 0) continue;
    const t = s.fig.data[c.trace];
    if (t.hoverinfo === "skip" || t.hoverinfo === "none") continue;
    const z = t.z[j][i];
    if (z === null || z === undefined) continue;
    const x = Array.isArray(t.x) ? t.x[i] : (t.x0 ?? 0) + i * (t.dx ?? 1);
    const y = Array.isArray(t.y) ? t.y[j] : (t.y0 ?? 0) + j * (t.dy ?? 1);
    const pick = (v) => Array.isArray(v) && Array.isArray(v[j]) ? v[j][i] : undefined;
    const vals = { x, y, z, customdata: pick(t.customdata), text: pick(t.text), hovertext: pick(t.hovertext) };
    return { x: mx, y: my, color: "#444", lines: label(t, vals, null) };
  }
  return null;
}

// index of the interval of sorted-or-reversed `edges` holding p, or -1
function findCell(edges, p) {
  for (let k = 0; k + 1 < edges.length; k++) {
    if ((p - edges[k]) * (p - edges[k + 1]) <= 0) return k;
  }
  return -1;
}

// the hover text of point `point` of trace t (null: a heatmap cell, whose values are all in `vals`)
function label(t, vals, point) {
  const pick = (v) => Array.isArray(v) ? (point === null ? undefined : v[point]) : v;  // a cell: scalars only
  if (t.hovertemplate) {
    const all = { text: pick(t.text), hovertext: pick(t.hovertext), customdata: pick(t.customdata), ...vals };
    const tpl = pick(t.hovertemplate) ?? "";
    return textLines(tpl.replace(/<extra>.*?<\/extra>/g, "").replace(/%\{(\w+)(?::([^}]*))?\}/g,
      (_, name, f) => format(all[name], f)));
  }
  const hover = pick(t.hovertext) ?? pick(t.text);
  if (t.hoverinfo === "text" && hover !== undefined) return textLines(hover);
  const lines = [`(${format(vals.x)}, ${format(vals.y)}${vals.z !== undefined ? `, ${format(vals.z)}` : ""})`];
  if (hover !== undefined) lines.push(...textLines(hover));
  if (t.name) lines.push(t.name);
  return lines;
}

function format(v, f) {
  if (v === undefined || v === null) return "";
  if (typeof v !== "number") return String(v);
  const m = /^\.(\d+)([fg])$/.exec(f || "");
  if (m) return m[2] === "f" ? v.toFixed(+m[1]) : String(+v.toPrecision(+m[1]));
  return String(+v.toPrecision(6));
}

// the label box next to the point, inside the plot div, in the point's colour (as Plotly's hover label)
export function showHover(s, h) {
  const tip = s.tip;
  if (!h) {
    tip.hidden = true;
    return;
  }
  tip.replaceChildren();
  h.lines.forEach((ln, i) => {
    if (i) tip.append(document.createElement("br"));
    tip.append(ln);
  });
  tip.style.borderColor = h.color;
  tip.hidden = false;
  const w = s.canvas.clientWidth;
  const left = h.x + 10 + tip.offsetWidth > w ? h.x - 10 - tip.offsetWidth : h.x + 10;
  tip.style.left = `${Math.max(0, left)}px`;
  tip.style.top = `${Math.max(0, h.y - tip.offsetHeight / 2)}px`;
}
