// Calls to the sandbox's JSON API and its event stream. Every error response carries {"error": one line}.
// The token travels in the HttpOnly cookie that the first page load set; the browser adds this page's Origin to
// every POST and DELETE, which is what the server checks against cross-site requests.

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.error ? body.error : `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

async function call(method, url, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(url, init);
  const type = res.headers.get("Content-Type") || "";
  const data = type.includes("application/json") ? await res.json() : await res.blob();
  if (!res.ok) throw new ApiError(res.status, data instanceof Blob ? null : data);
  return data;
}

const q = (params) => new URLSearchParams(params).toString();

export const api = {
  studies: () => call("GET", "/api/studies"),
  form: (experiment, scale) => call("GET", `/api/form?${q({ experiment, scale })}`),
  validate: (req) => call("POST", "/api/validate", req),
  start: (req) => call("POST", "/api/runs", req),
  runs: () => call("GET", "/api/runs"),
  run: (id) => call("GET", `/api/runs/${id}`),
  frames: (id, start, stop, variant, panels) =>
    call("GET", `/api/runs/${id}/frames?${q({ start, stop, variant, panels: panels.join(",") })}`),
  series: (id, variant, panels) => call("GET", `/api/runs/${id}/series?${q({ variant, panels: panels.join(",") })}`),
  control: (id, action) => call("POST", `/api/runs/${id}/${action}`),
  remove: (id) => call("DELETE", `/api/runs/${id}`),
  bulk: (action, ids) => call("POST", "/api/runs/bulk", { action, ids }),
  exportFile: (id, req) => call("POST", `/api/runs/${id}/export`, req),
};

// Server-sent events: onState({runs, live}) on every change; onStatus(text) for the connection badge.
export function subscribe(onState, onStatus) {
  const source = new EventSource("/api/events");
  source.addEventListener("state", (ev) => onState(JSON.parse(ev.data)));
  source.onopen = () => onStatus("live");
  source.onerror = () => onStatus("reconnecting…");
  return source;
}
