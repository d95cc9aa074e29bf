// One run on screen: its panels, a time slider with play/pause (playback.js), variant choice, panel toggles, job
// controls and exports. Frames come from /api/runs/{id}/frames and are cached (frames.js); the frame under the
// slider is fetched first, its neighbourhood afterwards, so scrubbing over fetched frames only redraws. Frame panels
// are drawn by the canvas renderer (canvas_plot.js) when it can draw them, else by Plotly.react; series panels by
// Plotly. Only panels on screen are redrawn (an IntersectionObserver draws the others when they scroll in); the
// time cursor of the series panels is an HTML line placed over the plot (series.js), so moving it costs no Plotly
// relayout. Plot sizes are measured once, not per redraw (reading them between redraws would force a page layout
// each time).
import { api } from "./api.js";
import { canDraw, draw as drawCanvas, release } from "./canvas_plot.js";
import { el } from "./dom.js";
import { exportRun } from "./export.js";
import { FrameCache } from "./frames.js";
import { Player } from "./playback.js";
import { plot, plotlyReady } from "./plotly.js";
import { nearestIndex, placeCursor } from "./series.js";

// ?renderer=plotly draws every panel with Plotly (to compare the two renderers)
const CANVAS = new URLSearchParams(location.search).get("renderer") !== "plotly";

export class Viewer {
  constructor(app, pane) {
    this.app = app;
    this.pane = pane;
    this.runId = null;
    this.meta = null;
    this.variant = 0;
    this.cache = new FrameCache();
    this.target = 0;
    this.drawn = null;
    this.pumping = null;
    this.prefetching = false;
    this.seriesFigures = {};
    this.divs = {};
    this.generation = 0;
    this.onscreen = new Set();
    this.sizes = new Map();
    this.observer = new IntersectionObserver((entries) => this.onVisibility(entries), { rootMargin: "150px" });
    this.build();
  }

  // -- DOM ------------------------------------------------------------------------------------------
  build() {
    const p = this.pane;
    this.title = el("b", { class: "vtitle" }, "no run");
    this.status = el("span", { class: "badge vstatus" });
    this.variantSelect = el("select", { class: "variant", title: "seed / activation / figure panel" });
    this.buttons = {};
    for (const [action, text] of [["pause", "Pause"], ["continue", "Continue"], ["stop", "Stop"], ["resume", "Resume"]]) {
      this.buttons[action] = el("button", { type: "button", class: `control ${action}`, hidden: true }, text);
      this.buttons[action].addEventListener("click", () => this.control(action));
    }
    const close = el("button", { type: "button", class: "close", title: "close this pane" }, "×");
    close.addEventListener("click", () => this.app.close(this));
    this.notes = el("div", { class: "vnotes note" });
    this.play = el("button", { type: "button", class: "play", title: "play / pause" }, "▶");
    this.slider = el("input", { type: "range", class: "slider", min: 0, max: 0, value: 0, step: 1 });
    this.step = el("span", { class: "step" }, "—");
    this.follow = el("input", { type: "checkbox", class: "follow", checked: true });
    this.toggles = el("div", { class: "toggles" });
    this.grid = el("div", { class: "grid" });
    this.exportKind = el("select", { class: "export-kind" },
      new Option("PNG of this view", "view"), new Option("PNG (offline renderer)", "png"),
      new Option("GIF of frames", "gif"), new Option("MP4 of frames", "mp4"));
    this.exportFrom = el("input", { type: "number", class: "export-from", min: 0, value: 0, title: "first frame" });
    this.exportTo = el("input", { type: "number", class: "export-to", min: 0, value: 0, title: "last frame" });
    this.exportEvery = el("input", { type: "number", class: "export-every", min: 1, value: 1, title: "every n-th" });
    this.exportButton = el("button", { type: "button", class: "export" }, "Export");
    this.exportNote = el("span", { class: "export-note note" });
    this.root = el("section", { class: "viewer", "data-pane": p },
      el("div", { class: "vhead" }, this.title, this.status, this.variantSelect, ...Object.values(this.buttons), close),
      this.notes,
      el("div", { class: "timebar" }, this.play, this.slider, this.step,
        el("label", { class: "follow-label", title: "jump to the newest snapshot while the run trains" },
          this.follow, " follow live")),
      el("details", { class: "panel-toggles" }, el("summary", {}, "panels"), this.toggles),
      el("div", { class: "exports" }, this.exportKind, " frames ", this.exportFrom, "–", this.exportTo, " every ",
        this.exportEvery, this.exportButton, this.exportNote),
      this.grid);
    this.slider.addEventListener("input", () => {
      this.follow.checked = Number(this.slider.value) === Number(this.slider.max);  // moving back stops following
      this.show(Number(this.slider.value));
    });
    this.player = new Player(this, this.play);
    this.play.addEventListener("click", () => this.player.toggle());
    this.variantSelect.addEventListener("change", () => this.setVariant(Number(this.variantSelect.value)));
    this.exportButton.addEventListener("click", () => exportRun(this));
  }

  // -- opening and live refresh ---------------------------------------------------------------------
  async open(runId, variant = 0, { follow = true } = {}) {
    const t0 = performance.now();
    const gen = ++this.generation;
    this.player.stop();
    this.runId = runId;
    this.variant = variant;
    this.cache.clear();
    this.drawn = null;
    this.follow.checked = follow;
    this.root.dataset.run = runId;
    const meta = await api.run(runId);
    if (gen !== this.generation) return;
    this.setMeta(meta, true);
    if (!meta.view) return;
    const n = meta.view.times.length;
    await Promise.all([this.loadSeries(), this.show(n - 1)]);
    if (gen !== this.generation) return;
    this.app.recordOpen(this, performance.now() - t0);
  }

  async refresh() {
    if (!this.runId) return;
    const gen = this.generation;
    const meta = await api.run(this.runId);
    if (gen !== this.generation) return;
    const before = this.meta && this.meta.view ? this.meta.view.times.length : 0;
    this.setMeta(meta, false);
    if (!meta.view) return;
    await this.loadSeries();
    const n = meta.view.times.length;
    if (this.follow.checked || !before) await this.show(n - 1);
    else this.moveCursor(this.target);
  }

  setMeta(meta, fresh) {
    const oldPanels = this.meta && this.meta.view ? JSON.stringify(this.meta.view.panels) : null;
    const oldVariants = this.meta && this.meta.view ? JSON.stringify(this.meta.view.variants) : null;
    this.meta = meta;
    this.title.textContent = `${meta.experiment} · ${meta.id}`;
    this.updateStatus(meta.status, meta.error);
    const view = meta.view;
    if (!view) {
      this.notes.textContent = meta.reason || "nothing to show yet";
      this.grid.replaceChildren();
      this.divs = {};
      this.slider.max = 0;
      return;
    }
    this.notes.textContent = view.notes.join(" · ");
    if (fresh || JSON.stringify(view.variants) !== oldVariants) {
      this.variantSelect.replaceChildren();
      view.variants.forEach((v, i) => this.variantSelect.append(new Option(v, i, false, i === this.variant)));
      this.variantSelect.hidden = view.variants.length < 2;
    }
    if (fresh || JSON.stringify(view.panels) !== oldPanels) this.buildPanels(view.panels, fresh);
    this.slider.max = view.times.length - 1;
    this.exportTo.max = this.exportFrom.max = view.times.length - 1;
    if (fresh) this.exportTo.value = view.times.length - 1;
  }

  buildPanels(panels, fresh) {
    const before = new Set(Object.keys(this.divs));
    const shown = fresh ? null : new Set([...before].filter((n) => !this.divs[n].parentElement.hidden));
    this.toggles.replaceChildren();
    this.observer.disconnect();
    this.onscreen.clear();
    this.sizes.clear();
    this.grid.replaceChildren();
    this.divs = {};
    this.panelKinds = {};
    for (const p of panels) {
      const on = shown && before.has(p.name) ? shown.has(p.name) : p.default;
      const box = el("input", { type: "checkbox", checked: on, name: p.name });
      box.addEventListener("change", () => this.toggle(p.name, box.checked));
      this.toggles.append(el("label", { class: "toggle" }, box, ` ${p.title}`));
      const div = el("div", { class: "plot", id: `${this.pane}-${p.name}`, "data-panel": p.name, "data-kind": p.kind });
      const cell = el("div", { class: `cell ${p.kind}`, hidden: !on }, div);
      if (p.kind === "series") cell.append(el("div", { class: "cursor", hidden: true }));
      this.observer.observe(div);
      this.grid.append(cell);
      this.divs[p.name] = div;
      this.panelKinds[p.name] = p.kind;
    }
  }

  visible(kind) {
    return Object.keys(this.divs).filter((n) => this.panelKinds[n] === kind && !this.divs[n].parentElement.hidden);
  }

  updateStatus(status, error) {
    this.status.textContent = status;
    this.status.dataset.status = status;
    this.status.title = error || "";
    const show = { pause: status === "running", continue: status === "paused",
      stop: ["running", "paused", "queued"].includes(status), resume: ["interrupted", "failed"].includes(status) };
    for (const [a, b] of Object.entries(this.buttons)) b.hidden = !show[a];
  }

  async control(action) {
    try {
      const res = await api.control(this.runId, action);
      this.updateStatus(res.status, res.error);
    } catch (e) {
      this.notes.textContent = e.message;
    }
  }

  // -- frames ---------------------------------------------------------------------------------------
  // frame ``index`` of the shown variant if cached with every panel of ``names``, else null
  entry(index, names) {
    return this.cache.get(this.variant, index, names);
  }

  // Show frame ``index``: the latest request wins while earlier ones are fetched or drawn.
  show(index) {
    const n = this.meta && this.meta.view ? this.meta.view.times.length : 0;
    if (!n) return Promise.resolve();
    this.target = Math.max(0, Math.min(n - 1, index));
    this.slider.value = this.target;
    this.label(this.target, !this.entry(this.target, this.visible("frame")));
    if (!this.pumping) {  // prefetching starts once the shown frame is drawn (it yields to every new request)
      this.pumping = this.pump().finally(() => {
        this.pumping = null;
        this.prefetch();
      });
    }
    return this.pumping;
  }

  async pump() {
    const gen = this.generation;
    while (this.drawn !== this.target && gen === this.generation) {
      const index = this.target;
      const names = this.visible("frame");
      let e = this.entry(index, names);
      const cached = !!e;
      const t0 = performance.now();
      if (!e && names.length) {
        try {
          this.cache.put(this.variant, (await api.frames(this.runId, index, index + 1, this.variant, names)).frames);
        } catch (err) {
          this.notes.textContent = err.message;
          return;
        }
        if (gen !== this.generation) return;
        if (this.target !== index) continue;
        e = this.entry(index, names);
      }
      const t1 = performance.now();
      await this.draw(index, e, names);
      await new Promise((r) => requestAnimationFrame(() => r()));
      const t2 = performance.now();
      this.drawn = index;
      this.app.recordRedraw(this, { index, cached, fetch_ms: t1 - t0, draw_ms: t2 - t1, total_ms: t2 - t0 });
    }
  }

  async draw(index, e, names) {
    this.measure(names);
    const jobs = [];
    for (const n of names) {
      const div = this.divs[n];
      if (!this.onscreen.has(n) && div.layout) {
        div.dataset.stale = index;  // drawn when it scrolls into view
        continue;
      }
      jobs.push(this.drawPanel(div, e.figures[n], index));
    }
    await Promise.all(jobs);
    this.moveCursor(index);
    const time = this.meta.view.times[index];
    this.root.dataset.index = index;
    this.root.dataset.time = time;
    this.label(index, false);
    this.app.onDrawn(this, time, index);
  }

  // plot sizes, read in one pass before drawing
  measure(names) {
    const missing = names.filter((n) => !this.sizes.has(n));
    for (const n of missing) this.sizes.set(n, [this.divs[n].clientWidth, this.divs[n].clientHeight]);
  }

  async drawPanel(div, fig, index) {
    const [width, height] = this.sizes.get(div.dataset.panel) || [div.clientWidth, div.clientHeight];
    delete div.dataset.stale;
    if (CANVAS && canDraw(fig)) {
      await drawCanvas(div, fig, width, height);
      div.dataset.renderer = "canvas";
    } else {
      release(div);
      await plotlyReady;
      await plot(div, fig, width, height);
      div.dataset.renderer = "plotly";
    }
    div.dataset.index = index;
  }

  resized() {
    this.sizes.clear();
    if (!this.meta || !this.meta.view) return;
    this.drawn = null;
    this.show(this.target);
    this.loadSeries();
  }

  onVisibility(entries) {
    for (const entry of entries) {
      const name = entry.target.dataset.panel;
      if (!entry.isIntersecting) {
        this.onscreen.delete(name);
        continue;
      }
      this.onscreen.add(name);
      const div = entry.target;
      if (div.dataset.stale !== undefined && this.drawn !== null) {
        const e = this.entry(this.drawn, [name]);
        if (e) this.drawPanel(div, e.figures[name], this.drawn);
      }
    }
  }

  label(index, loading) {
    const v = this.meta.view;
    const t = v.times[index];
    this.step.textContent = `${v.time_label} ${+t.toPrecision(6)} (frame ${index}/${v.times.length - 1})` +
      (loading ? " …" : "");
    this.step.dataset.index = index;
  }

  // Fetch the frames around the shown one, nearest chunk first, re-centred on the slider after every request.
  async prefetch() {
    if (this.prefetching || !this.runId) return;
    this.prefetching = true;
    const gen = this.generation;
    try {
      while (gen === this.generation && !this.pumping) {
        const names = this.visible("frame");
        const variant = this.variant;
        const chunk = this.cache.missing(variant, this.target, this.meta.view.times.length, names);
        if (!chunk) break;
        const res = await api.frames(this.runId, chunk[0], chunk[1], variant, names);
        if (gen === this.generation) this.cache.put(variant, res.frames);
      }
    } catch (err) {
      console.warn("prefetch", err);
    } finally {
      this.prefetching = false;
    }
  }

  // -- series panels (time on x, cursor at the shown frame, click to jump) ---------------------------
  async loadSeries() {
    const names = this.visible("series");
    if (!names.length) return;
    const res = await api.series(this.runId, this.variant, names);
    await plotlyReady;
    for (const [n, fig] of Object.entries(res.figures)) {
      const div = this.divs[n];
      this.measure([n]);
      const [width, height] = this.sizes.get(n);
      await plot(div, fig, width, height);
      if (!div.dataset.clickable) {
        div.on("plotly_click", (ev) => ev.points.length && this.jumpTo(ev.points[0].x));
        div.on("plotly_relayout", () => this.moveCursor(this.target));
        div.dataset.clickable = "1";
      }
    }
    this.moveCursor(this.target);
  }

  // the dashed time cursor over each series panel
  moveCursor(index) {
    const t = this.meta.view.times[index];
    for (const n of this.visible("series")) placeCursor(this.divs[n], t);
  }

  nearest(time) {
    return nearestIndex(this.meta.view.times, time);
  }

  jumpTo(time) {
    this.follow.checked = false;
    return this.show(this.nearest(time));
  }

  // -- controls -------------------------------------------------------------------------------------
  async toggle(name, on) {
    this.divs[name].parentElement.hidden = !on;
    if (!on) return;
    if (this.panelKinds[name] === "series") await this.loadSeries();
    else {
      this.drawn = null;
      await this.show(this.target);
    }
  }

  async setVariant(v) {
    this.variant = v;
    this.drawn = null;
    await Promise.all([this.loadSeries(), this.show(this.target)]);
  }
}
