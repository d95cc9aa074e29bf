// The page: start form, runs list (kept current by server-sent events), one viewer or two side by side.
// URL parameters ?run=ID&compare=ID open runs directly. window.sandbox exposes state and timings (the browser
// tests read them; they are also handy in the developer console).
import { api, subscribe } from "./api.js";
import { whyNot } from "./canvas_plot.js";
import { el } from "./dom.js";
import { StartForm } from "./form.js";
import { Viewer } from "./viewer.js";

const ACTIVE = ["queued", "running", "paused", "stopping"];

class App {
  constructor() {
    this.viewers = [];
    this.runs = [];
    this.listSeq = 0;  // bumped by every runs list shown (refreshRuns, onState)
    this.live = {};
    this.filter = document.getElementById("runs-filter");
    this.list = document.getElementById("runs");
    this.main = document.getElementById("viewers");
    this.linkTime = document.getElementById("link-time");
    this.form = new StartForm(this);
    this.stats = { firstPaint: null, opens: [], redraws: [], ready: false, errors: [] };
    window.sandbox = { app: this, stats: this.stats, whyNot };  // whyNot(fig): why Plotly, not the canvas, draws it
    this.filter.addEventListener("input", () => this.renderRuns());
    document.getElementById("stop-shown").onclick = () => this.bulk("stop", (r) => ACTIVE.includes(r.status));
    document.getElementById("delete-shown").onclick = () =>
      this.bulk("delete", (r) => ["interrupted", "failed"].includes(r.status));
    let resizeTimer = null;
    window.addEventListener("resize", () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => this.viewers.forEach((v) => v.resized()), 200);
    });
  }

  async init() {
    const params = new URLSearchParams(location.search);
    const work = [api.studies().then((s) => this.form.setExperiments(s.studies, s.scales)), this.refreshRuns()];
    if (params.get("run")) work.push(this.open(params.get("run")));  // the run first: it is what the user asked for
    if (params.get("compare")) work.push(this.open(params.get("compare"), 1));
    subscribe((s) => this.onState(s), (text) => {
      const badge = document.getElementById("connection");
      if (text === "live" && badge.dataset.state === "reconnecting…") this.refreshRuns().catch((e) => console.warn(e));
      badge.textContent = text;
      badge.dataset.state = text;
    });
    await Promise.all(work);
    this.stats.ready = true;
  }

  // -- runs list ----------------------------------------------------------------------------------
  // The runs list from the API. A list that a newer one (a later refresh, or a live state from the event stream)
  // replaced while this request was in flight is dropped: shown, it would take the page back in time (a run just
  // stopped shown as "stopping" again until the next event).
  async refreshRuns() {
    const seq = ++this.listSeq;
    const runs = (await api.runs()).runs;
    if (seq !== this.listSeq) return;
    this.runs = runs;
    this.renderRuns();
  }

  onState(state) {
    this.listSeq++;
    const before = new Map(this.runs.map((r) => [r.id, r]));
    this.runs = state.runs.map((r) => ({ ...(before.get(r.id) || {}), ...r }));
    this.renderRuns();
    for (const v of this.viewers) {
      if (!v.runId) continue;
      const row = this.runs.find((r) => r.id === v.runId);
      const old = before.get(v.runId);
      const version = state.live[v.runId];
      if (row) v.updateStatus(row.status, row.error);
      const statusChanged = row && old && row.status !== old.status;
      if ((version && version !== this.live[v.runId]) || statusChanged) v.refresh().catch((e) => console.warn(e));
    }
    this.live = state.live;
  }

  shown() {
    const words = this.filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    return this.runs.filter((r) => words.every((w) =>
      `${r.experiment} ${r.status} ${r.label || ""} ${r.id}`.toLowerCase().includes(w)));
  }

  // stop or delete every shown run that ``pick`` selects (deleting asks first: it removes the run's files)
  async bulk(action, pick) {
    const ids = this.shown().filter(pick).map((r) => r.id);
    if (!ids.length) return;
    if (action === "delete" && !confirm(`Delete ${ids.length} run(s) and their files from the run store?`)) return;
    try {
      const res = await api.bulk(action, ids);
      if (action === "delete") this.closeDeleted(res.results.filter((r) => r.ok).map((r) => r.run_id));
      const failed = res.results.filter((r) => !r.ok);
      if (failed.length) alert(`${failed.length} run(s) could not be ${action === "stop" ? "stopped" : "deleted"}: ` +
        failed[0].error);
    } catch (e) {
      alert(e.message);
    }
    await this.refreshRuns();
  }

  async remove(runId) {
    if (!confirm(`Delete run ${runId} and its files from the run store?`)) return;
    try {
      await api.remove(runId);
      this.closeDeleted([runId]);
    } catch (e) {
      alert(e.message);
    }
    await this.refreshRuns();
  }

  closeDeleted(ids) {
    for (const v of [...this.viewers]) if (ids.includes(v.runId)) this.close(v);
  }

  renderRuns() {
    const rows = this.shown();
    document.getElementById("runs-count").textContent = `(${rows.length}/${this.runs.length})`;
    document.getElementById("stop-shown").disabled = !rows.some((r) => ACTIVE.includes(r.status));
    document.getElementById("delete-shown").disabled = !rows.some((r) => ["interrupted", "failed"].includes(r.status));
    this.list.replaceChildren();
    for (const r of rows) {
      const item = document.createElement("div");
      item.className = "run";
      item.dataset.run = r.id;
      item.dataset.status = r.status;
      const when = r.created ? new Date(r.created * 1000).toLocaleString() : "";
      // everything below comes from the run store, which others may write: text nodes only, never HTML
      const badge = el("span", { class: "badge" }, r.status);
      badge.dataset.status = r.status;
      const head = el("div", {}, badge, " ", el("b", {}, r.experiment), " ", el("code", {}, r.id.slice(0, 8)));
      const queued = r.queue_position ? ` · queue #${r.queue_position}` : "";
      const label = el("div", { class: "note" }, `${r.label || ""}${queued}`);
      const last = el("div", { class: "note" }, r.error ? String(r.error) : when);
      last.title = when;
      item.append(head, label, last);
      const actions = document.createElement("div");
      actions.className = "actions";
      if (r.openable !== false) {
        const a = document.createElement("button");
        a.textContent = "open";
        a.className = "open";
        a.onclick = () => this.open(r.id, 0);
        const b = document.createElement("button");
        b.textContent = "side by side";
        b.className = "compare";
        b.title = "open in a second pane, next to the first";
        b.onclick = () => this.open(r.id, 1);
        actions.append(a, b);
      }
      if (ACTIVE.includes(r.status) && r.status !== "stopping") {
        const s = document.createElement("button");
        s.textContent = "stop";
        s.className = "stop";
        s.onclick = () => api.control(r.id, "stop").catch((e) => alert(e.message));
        actions.append(s);
      } else if (!ACTIVE.includes(r.status)) {
        const d = document.createElement("button");
        d.textContent = "delete";
        d.className = "delete";
        d.title = "remove this run and its files from the run store";
        d.onclick = () => this.remove(r.id);
        actions.append(d);
      }
      item.append(actions);
      this.list.append(item);
    }
  }

  // -- viewers ------------------------------------------------------------------------------------
  async open(runId, pane = 0, opts = {}) {
    document.getElementById("empty").hidden = true;
    while (this.viewers.length <= pane) {
      const v = new Viewer(this, "AB"[this.viewers.length]);
      this.viewers.push(v);
      this.main.append(v.root);
    }
    this.layout();
    try {
      await this.viewers[pane].open(runId, 0, opts);
    } catch (e) {
      this.viewers[pane].notes.textContent = e.message;
      this.stats.errors.push(e.message);
    }
  }

  close(viewer) {
    viewer.generation++;
    viewer.root.remove();
    this.viewers = this.viewers.filter((v) => v !== viewer);
    this.viewers.forEach((v, i) => { v.pane = "AB"[i]; v.root.dataset.pane = v.pane; });
    this.layout();
    if (!this.viewers.length) document.getElementById("empty").hidden = false;
  }

  layout() {
    const compare = this.viewers.length > 1;
    const changed = compare !== this.main.classList.contains("compare");
    this.main.classList.toggle("compare", compare);
    if (changed) this.viewers.forEach((v) => v.resized());
    document.querySelector(".link-time").hidden = this.viewers.length < 2;
  }

  // a drawn frame of one viewer moves the other to the nearest time when "link time" is on
  onDrawn(viewer, time, index) {
    if (viewer.linkedTo === index) {  // this draw followed the other pane: do not echo it back
      viewer.linkedTo = null;
      return;
    }
    if (this.viewers.length < 2 || !this.linkTime.checked) return;
    const other = this.viewers.find((v) => v !== viewer && v.meta && v.meta.view);
    if (!other) return;
    const near = other.nearest(time);
    if (near === other.target && near === other.drawn) return;
    other.linkedTo = near;
    other.show(near);
  }

  recordOpen(viewer, ms) {
    this.stats.opens.push({ pane: viewer.pane, run: viewer.runId, ms });
    if (this.stats.firstPaint === null) this.stats.firstPaint = performance.now();
  }

  recordRedraw(viewer, r) {
    this.stats.redraws.push({ pane: viewer.pane, ...r });
    if (this.stats.redraws.length > 5000) this.stats.redraws.splice(0, 1000);
  }
}

new App().init().catch((e) => {
  document.getElementById("form-error").textContent = `could not start: ${e.message}`;
  window.sandbox.stats.errors.push(e.message);
});
