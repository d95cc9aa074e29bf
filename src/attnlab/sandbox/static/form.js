// The start form: fields from /api/form, validated by the server (the CLI's config model) as the user types;
// each problem is shown next to its field and nothing starts until the config is valid.
import { api, ApiError } from "./api.js";

const fmt = (v) => (v === null || v === undefined ? "" : Array.isArray(v) ? `[${v.join(", ")}]` : String(v));

export class StartForm {
  constructor(app) {
    this.app = app;
    this.form = document.getElementById("form");
    this.experiment = document.getElementById("experiment");
    this.scale = document.getElementById("scale");
    this.error = document.getElementById("form-error");
    this.note = document.getElementById("start-note");
    this.button = document.getElementById("start-run");
    this.fields = [];
    this.timer = null;
    this.seq = 0;
    this.loading = null;
    this.form.dataset.loaded = "";
    this.experiment.addEventListener("change", () => this.load());
    this.scale.addEventListener("change", () => this.load());
    this.button.addEventListener("click", () => this.start());
  }

  setExperiments(studies, scales) {
    this.experiment.replaceChildren();
    for (const s of studies) {
      const group = document.createElement("optgroup");
      group.label = s.study;
      for (const e of s.experiments.filter((e) => e.startable)) {
        const o = new Option(`${e.key} (${e.ref})`, e.key);
        o.title = e.title;
        group.append(o);
      }
      if (group.children.length) this.experiment.append(group);
    }
    this.scale.replaceChildren(...scales.map((s) => new Option(s, s)));
    return this.load();
  }

  async load() {
    const key = `${this.experiment.value}@${this.scale.value}`;
    this.loading = key;
    this.form.dataset.loaded = "";
    const spec = await api.form(this.experiment.value, this.scale.value);
    if (this.loading !== key) return; // a later choice is loading: this answer is stale
    this.fields = spec.fields;
    this.form.replaceChildren();
    for (const f of spec.fields) {
      const row = document.createElement("div");
      row.className = "field";
      row.dataset.field = f.name;
      const label = document.createElement("label");
      label.textContent = f.name;
      label.title = f.description;
      let input;
      if (f.kind === "choice") {
        input = document.createElement("select");
        for (const c of f.choices) input.append(new Option(c, c, false, c === f.default));
      } else if (f.kind === "bool") {
        input = document.createElement("input");
        input.type = "checkbox";
        input.checked = !!f.default;
      } else {
        input = document.createElement("input");
        input.type = "text";
        input.value = fmt(f.default);
        input.placeholder = f.default === null ? "default" : "";
      }
      input.name = f.name;
      input.id = `field-${f.name}`;
      input.title = `${f.description}${f.hint ? ` (${f.hint})` : ""}`;
      input.addEventListener("input", () => this.schedule());
      input.addEventListener("change", () => this.schedule());
      label.htmlFor = input.id;
      const hint = document.createElement("span");
      hint.className = "hint";
      hint.textContent = f.hint;
      const err = document.createElement("span");
      err.className = "field-error";
      err.id = `error-${f.name}`;
      row.append(label, input, hint, err);
      this.form.append(row);
    }
    this.showErrors([]);
    this.note.textContent = spec.title;
    this.form.dataset.loaded = key; // the fields now on the page belong to this experiment and scale
  }

  values() {
    const out = {};
    for (const f of this.fields) {
      const input = this.form.elements[f.name];
      out[f.name] = f.kind === "bool" ? input.checked : input.value;
    }
    return { experiment: this.experiment.value, scale: this.scale.value, config: out };
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.check(), 250);
  }

  async check() {
    const seq = ++this.seq;
    try {
      const res = await api.validate(this.values());
      if (seq !== this.seq) return null;
      this.showErrors(res.errors);
      if (res.ok) {
        const m = res.memory, gib = (b) => (b / 2 ** 30).toPrecision(3);
        this.note.textContent = `run ${res.run_id}` + (res.existing ? ` exists (${res.existing})` : " (new)") +
          (m && m.need ? ` · needs ~${gib(m.need)} GiB of ${gib(m.free)} GiB free` : "");
      }
      return res;
    } catch (e) {
      if (seq === this.seq) this.showErrors([{ field: "<form>", message: e.message }]);
      return null;
    }
  }

  showErrors(errors) {
    this.form.querySelectorAll(".field").forEach((row) => row.classList.remove("invalid"));
    this.form.querySelectorAll(".field-error").forEach((el) => (el.textContent = ""));
    const orphans = [];
    for (const e of errors) {
      const el = document.getElementById(`error-${e.field}`);
      if (el) {
        el.textContent = e.message;
        el.parentElement.classList.add("invalid");
      } else orphans.push(e.message);
    }
    this.error.textContent = orphans.join("\n");
    this.button.disabled = errors.length > 0;
  }

  async start() {
    clearTimeout(this.timer);
    this.button.disabled = true;
    try {
      const res = await api.start(this.values());
      this.showErrors([]);
      this.note.textContent = res.reused ? `run ${res.run_id} already finished: opened` :
        `run ${res.run_id} ${res.status}` + (res.queue_position ? ` (queue position ${res.queue_position})` : "");
      await this.app.refreshRuns();
      this.app.open(res.run_id, 0, { follow: true });
    } catch (e) {
      if (e instanceof ApiError && e.body.errors) this.showErrors(e.body.errors);
      else this.showErrors([{ field: "<form>", message: e.message }]);
    } finally {
      this.button.disabled = !!this.form.querySelector(".invalid");
    }
  }
}
