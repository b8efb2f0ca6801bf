// The page's plumbing: DOM helpers, the API client (token in a header, never in a URL, and
// the browser's IANA timezone in X-User-Timezone), formatting and the shared state.

export const $ = (sel, root = document) => root.querySelector(sel);
export const TZ = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
export const MB = 1024 * 1024;
export const GB = 1024 * MB;

export const state = { me: null, connectors: [], connections: [], models: [], defaultModel: null, permissions: [] };

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    // through the CSSOM: the Content-Security-Policy refuses style attributes
    else if (key === "style") node.style.cssText = value;
    else if (value === true) node.setAttribute(key, "");
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

export function token() {
  return localStorage.getItem("nyla.token") || "";
}

export function headers(extra = {}) {
  return { Authorization: `Bearer ${token()}`, "X-User-Timezone": TZ, ...extra };
}

/** An API error: the server's human `detail` as the message, the status beside it. */
export class ApiError extends Error {
  constructor(message, status, data = null) {
    super(message);
    this.status = status;
    this.data = data; // the answer's body (a 409 of a resume lists the unfinished writes)
  }
}

/** What a service permission lets a person do, in words (`service.agent` → "run the agent"). */
export function permissionText(permission) {
  const known = { "service.agent": "run the agent", "service.knowledge": "use the knowledge store", "service.connector": "use connectors" };
  if (known[permission]) return known[permission];
  if (permission.startsWith("service.connector.")) return `use the ${serviceLabel(permission.slice(18))} connector`;
  return permission;
}

function detailOf(data, fallback) {
  if (data && data.error === "ServiceAccessDenied" && data.permission) {
    // a refused service, in plain words (the server's detail names the command an admin runs)
    return `You may not ${permissionText(data.permission)}: you have not been given access to this (${data.permission}). Ask an administrator to grant it on the Access page.`;
  }
  const detail = data && data.detail;
  if (Array.isArray(detail)) return detail.map((d) => `${(d.loc || []).slice(1).join(".")}: ${d.msg}`).join("; ");
  if (detail && typeof detail.message === "string") return detail.message;
  return (typeof detail === "string" && detail) || fallback;
}

let onUnauthorized = () => {};
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

async function send(path, init) {
  const response = await fetch(path, init);
  if (response.status === 401 && state.me) onUnauthorized();
  const data = response.headers.get("content-type")?.includes("json") ? await response.json() : null;
  if (!response.ok) throw new ApiError(detailOf(data, `${response.status} ${response.statusText}`), response.status, data);
  return data;
}

export function api(path, { method = "GET", body } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  return send(path, init);
}

export function upload(file) {
  const form = new FormData();
  form.append("file", file, file.name);
  return send("/api/files", { method: "POST", headers: headers(), body: form });
}

export function fmtBytes(n) {
  n = Number(n) || 0;
  if (n >= GB) return `${+(n / GB).toFixed(1)} GB`;
  if (n >= MB) return `${+(n / MB).toFixed(1)} MB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} kB`;
  return `${n} B`;
}

export function fmtTime(iso) {
  return iso ? new Date(iso).toLocaleString(undefined, { timeZone: TZ, dateStyle: "medium", timeStyle: "short" }) : "–";
}

// ---- requests that overlap -----------------------------------------------------------------

const newestLoads = new Map();

/** Starts a load named `name` (a string for a view or a polling loop, or the element a load
 * fills, where there are many) and returns its check: true
 * while no later load of that name has started. A load paints its answer only while it is
 * the newest, so a request that answers after a later one cannot put back what that one
 * showed (the tab opened, then a row added before the first list came back). */
export function startLoad(name) {
  const number = (newestLoads.get(name) || 0) + 1;
  newestLoads.set(name, number);
  return () => newestLoads.get(name) === number;
}

/** `handler` (a listener of a form's submit or a button's click) one call at a time: an event
 * that comes while the last call is still under way (a double click, Enter twice) is dropped
 * instead of sending its request twice. */
export function oneAtATime(handler) {
  let running = false;
  return async (event, ...rest) => {
    if (running) {
      event?.preventDefault?.(); // a dropped submit must not navigate either
      return undefined;
    }
    running = true;
    try {
      return await handler(event, ...rest);
    } finally {
      running = false;
    }
  };
}

/** Ask before something that cannot be undone; resolves true when the person agreed. */
export function confirmAction(text, okLabel = "OK") {
  const modal = $("#confirm-modal");
  $("#confirm-text").textContent = text;
  $("#confirm-ok").textContent = okLabel;
  modal.returnValue = "";
  return new Promise((resolve) => {
    modal.addEventListener("close", () => resolve(modal.returnValue === "ok"), { once: true });
    modal.showModal();
  });
}

/** The label a person reads for a connector's service (`msft` → "Microsoft 365"). */
export function serviceLabel(service) {
  const connector = state.connectors.find((c) => c.service === service);
  return (connector && connector.label) || service;
}

/** Open a URL the server signed (no token in it) as a download. */
export function download(url, name) {
  const link = el("a", { href: url, download: name || "" });
  document.body.append(link);
  link.click();
  link.remove();
}
