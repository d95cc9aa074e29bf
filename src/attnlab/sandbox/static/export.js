// Exports of a viewer: the current view as one PNG (every shown panel, composed in the browser from the canvas
// renderer's and Plotly's own images), or a frame range as PNG / GIF / MP4 through the study's offline renderer on
// the server.
import { api } from "./api.js";
import { toDataURL } from "./canvas_plot.js";

export async function exportRun(viewer) {
  const kind = viewer.exportKind.value;
  viewer.exportNote.textContent = "exporting…";
  try {
    if (kind === "view") return await exportView(viewer);
    const start = kind === "png" ? viewer.target : Number(viewer.exportFrom.value);
    const stop = kind === "png" ? viewer.target + 1 : Number(viewer.exportTo.value) + 1;
    const panels = [...viewer.visible("frame"), ...viewer.visible("series")];
    const req = { format: kind, start, stop, every: Number(viewer.exportEvery.value), variant: viewer.variant, panels };
    const blob = await api.exportFile(viewer.runId, req);
    download(viewer, blob, `sandbox-${viewer.runId}-${start}-${stop - 1}.${kind}`);
  } catch (e) {
    viewer.exportNote.textContent = e.message;
  }
}

async function exportView(viewer) {
  const divs = Object.values(viewer.divs).filter((d) => !d.parentElement.hidden && d.layout);
  const w = Math.max(...divs.map((d) => d.clientWidth));
  const h = Math.max(...divs.map((d) => d.clientHeight));
  const cols = Math.min(4, divs.length);
  const rows = Math.ceil(divs.length / cols);
  const canvas = document.createElement("canvas");
  canvas.width = cols * w;
  canvas.height = rows * h + 28;
  const g = canvas.getContext("2d");
  g.fillStyle = "white";
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.fillStyle = "#222";
  g.font = "14px sans-serif";
  g.fillText(`${viewer.title.textContent} · ${viewer.step.textContent}`, 8, 19);
  const urls = await Promise.all(divs.map((d) => d._canvasplot ? toDataURL(d)
    : Plotly.toImage(d, { format: "png", width: d.clientWidth, height: d.clientHeight })));
  await Promise.all(urls.map(async (url, i) => {
    const img = new Image();
    img.src = url;
    await img.decode();
    g.drawImage(img, (i % cols) * w, 28 + Math.floor(i / cols) * h);
  }));
  const blob = await new Promise((r) => canvas.toBlob(r, "image/png"));
  download(viewer, blob, `sandbox-${viewer.runId}-frame${viewer.target}.png`);
}

function download(viewer, blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  viewer.exportNote.textContent = `${name} (${Math.round(blob.size / 1024)} kB)`;
}
