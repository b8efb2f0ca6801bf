// Data sources: each connection's tree with 🧠 (indexing on/off, purge asked first), the
// running sync's progress with "Sync now" and "Stop", the connector's own browse tree, and
// the settings modal (consent, limits in human units, the cost estimate).

import { $, GB, MB, api, confirmAction, el, fmtBytes, fmtTime, oneAtATime, serviceLabel, startLoad, state } from "./api.js";
import { pollJobs } from "./inventory.js";
import { removeConnection } from "./connect.js";

const sync = { states: new Map(), timer: null, modal: null, browsing: new Set() };

// ---- the tree ----------------------------------------------------------------------------

export async function loadSources() {
  $("#sources-error").textContent = "";
  const newest = startLoad("sources");
  try {
    const { connections } = await api("/api/datasources");
    if (!newest()) return; // a later load (a switch, a closed modal) shows the tree as it is now
    state.connections = connections;
    $("#tree").replaceChildren(...(connections.length ? connections.map(connectionCard) : [el("p", { class: "muted" }, "No connections yet: add one below.")]));
    refreshSync();
  } catch (error) {
    if (newest()) $("#sources-error").textContent = error.message;
  }
}

function connectionCard(connection) {
  const name = connection.label || serviceLabel(connection.service);
  const pathInput = el("input", { placeholder: "/folder", "aria-label": `Folder of ${name} to add` });
  const root = connection.dataSources.find((s) => s.path === "/");
  const nodes = connection.dataSources.map((source) => sourceRow(connection, source));
  if (!root) {
    // the whole connection as one switch: its first 🧠 makes the root a data source
    const whole = { path: "/", label: name, ragIndexEffective: false, ragIndexEnabled: null };
    nodes.unshift(el("div", { class: "node root" },
      el("span", { class: "path" }, `All of ${name}`), ragButton(connection, whole, async () => ensureSource(connection, whole))));
  }
  const browseTree = el("ul", { class: "browse", "aria-label": `Folders of ${name}` });
  loadBrowse(connection, "", browseTree);
  return el("article", { class: "connection", "data-id": connection.id, "aria-label": name },
    el("div", { class: "connection-head" },
      el("h2", {}, name),
      el("span", { class: "muted small" }, serviceLabel(connection.service), connection.knowledgeIngestionEnabled ? "" : " · indexing consent off"),
      el("span", { class: "grow" }),
      el("button", { type: "button", class: "remove danger-text", "aria-label": `Remove ${name}`, onclick: oneAtATime(() => removeConnection(connection)) }, "Remove")),
    ...nodes,
    el("form", { class: "add-source", onsubmit: oneAtATime((e) => { e.preventDefault(); return addSource(connection.id, pathInput.value); }) }, pathInput, el("button", { type: "submit" }, "Add folder")),
    el("details", { class: "browse-box", open: sync.browsing.has(connection.id), ontoggle: (e) => {
      if (e.target.open) sync.browsing.add(connection.id); else sync.browsing.delete(connection.id);
    } }, el("summary", {}, "Browse folders"), browseTree));
}

function sourceRow(connection, source) {
  const depth = source.path.split("/").filter(Boolean).length;
  const title = source.path === "/" ? `All of ${connection.label || serviceLabel(connection.service)}` : source.label ? `${source.label} (${source.path})` : source.path;
  const gear = el("button", { type: "button", class: "gear", title: "Settings", "aria-label": `Settings of ${title}`, onclick: () => openSettings(source.id) }, "⚙️");
  const status = el("div", { class: "sync", "data-source": source.id, "aria-live": "polite" });
  paintSync(status, source, sync.states.get(source.id));
  const badges = [
    source.scopeEffective === "mandate" ? el("span", { class: "badge", title: "Found by everyone in your organisation" }, "shared") : null,
    source.neutralizeEffective ? el("span", { class: "badge", title: "Personal data is hidden before any AI call" }, "neutralized") : null,
  ];
  return el("div", { class: "node", "data-id": source.id, "data-path": source.path, style: `padding-left:${depth}rem` },
    el("span", { class: "path" }, title, ...badges), ragButton(connection, source, async () => source.id), gear, status);
}

/** The 🧠 switch of a tree element: asks before a purge and for the consent it needs. */
function ragButton(connection, item, sourceId) {
  const on = Boolean(item.ragIndexEffective) && connection.knowledgeIngestionEnabled;
  const where = item.label || item.title || item.path;
  return el("button", {
    type: "button",
    class: `rag${item.ragIndexEnabled === null ? " inherited" : ""}`,
    "aria-pressed": String(on),
    "aria-label": `Index ${where}`,
    title: item.ragIndexEnabled === null ? "inherited from the folder above" : "set on this element",
    onclick: oneAtATime(async () => {
      if (on && !(await confirmAction(`Stop indexing ${where}? What is indexed from it is removed from the knowledge store (the files themselves stay where they are).`, "Stop and remove"))) return;
      if (!on && !connection.knowledgeIngestionEnabled) {
        if (!(await confirmAction(`Indexing ${where} needs your consent to copy ${connection.label}'s data into the knowledge store. Give it?`, "Give consent"))) return;
        if (!(await setConsent(connection, true))) return;
      }
      try {
        await api(`/api/datasources/${await sourceId()}/rag-index`, { method: "PATCH", body: { enabled: !on } });
      } catch (error) {
        $("#sources-error").textContent = error.message;
      }
      await loadSources();
      pollJobs();
    }),
  }, on ? "🧠 on" : "🧠 off");
}

async function ensureSource(connection, item) {
  if (item.dataSourceId) return item.dataSourceId;
  const source = await api("/api/datasources", { method: "POST", body: { connectionId: connection.id, path: item.nodePath || item.path, label: item.title || item.label || "" } });
  item.dataSourceId = source.id;
  return source.id;
}

async function addSource(connectionId, path) {
  if (!path.trim()) return;
  try {
    await api("/api/datasources", { method: "POST", body: { connectionId, path: path.trim() } });
    await loadSources();
  } catch (error) {
    $("#sources-error").textContent = error.message;
  }
}

// The connection's own tree (the connector's browse): 🧠 and ⚙️ on any folder; a folder
// without a data source gets one when it is first switched or configured.
async function loadBrowse(connection, path, list) {
  const newest = startLoad(list); // closed and opened again: the last opening fills it
  try {
    const page = await api(`/api/connections/${connection.id}/browse?path=${encodeURIComponent(path)}`);
    if (!newest()) return;
    const items = page.items.map((item) => browseNode(connection, item));
    list.replaceChildren(...(items.length ? items : [el("li", { class: "muted small" }, "(empty)")]));
  } catch (error) {
    if (newest()) list.replaceChildren(el("li", { class: "error" }, error.message));
  }
}

function browseNode(connection, item) {
  if (!item.isFolder) return el("li", { class: "browse-file muted" }, `${item.title} · ${fmtBytes(item.size || 0)}`);
  const children = el("ul", { class: "browse" });
  const expand = el("button", { type: "button", class: "expand", "aria-expanded": "false", "aria-label": `Open ${item.title}`, onclick: () => {
    const open = expand.getAttribute("aria-expanded") === "true";
    expand.setAttribute("aria-expanded", String(!open));
    expand.textContent = open ? "▸" : "▾";
    if (open) {
      startLoad(children); // a listing still under way must not fill a closed folder
      children.replaceChildren();
    } else loadBrowse(connection, item.nodePath, children);
  } }, "▸");
  const rag = ragButton(connection, item, () => ensureSource(connection, item));
  const gear = el("button", { type: "button", class: "gear", "aria-label": `Settings of ${item.nodePath}`, onclick: async () => openSettings(await ensureSource(connection, item)) }, "⚙️");
  return el("li", { class: "browse-node", "data-path": item.nodePath },
    el("div", { class: "node" }, expand, el("span", { class: "path" }, item.title), rag, gear), children);
}

// ---- sync progress, "Sync now", "Stop" ----------------------------------------------------

function paintSync(box, source, info) {
  if (!source.ragIndexEffective && !(info && info.running)) return box.replaceChildren();
  const running = info && info.running;
  const text = !info ? "…"
    : running ? `Indexing… ${info.indexedItems ?? 0} indexed${running.message ? ` · ${running.message}` : ""}`
      : `${info.indexedItems ?? 0} items indexed · last sync ${fmtTime(info.lastSyncAt)}${info.nextSyncAt ? ` · next ${fmtTime(info.nextSyncAt)}` : ""}`;
  box.dataset.indexed = String(info ? info.indexedItems ?? 0 : "");
  box.dataset.running = running ? "true" : "false";
  box.replaceChildren(
    el("span", { class: "progress small" }, text),
    running
      ? el("button", { type: "button", class: "stop", onclick: oneAtATime(() => syncAction(source.id, "stop")) }, "Stop")
      : el("button", { type: "button", class: "sync-now", onclick: oneAtATime(() => syncAction(source.id, "sync")) }, "Sync now"));
}

async function syncAction(sourceId, action) {
  try {
    await api(`/api/datasources/${sourceId}/${action}`, { method: "POST" });
  } catch (error) {
    $("#sources-error").textContent = error.message;
  }
  refreshSync();
  pollJobs();
}

/** Reads each shown source's sync state; polls again while one runs and the view is open. */
async function refreshSync() {
  clearTimeout(sync.timer);
  const newest = startLoad("sync"); // a later call takes over: one polling loop at a time
  const boxes = [...document.querySelectorAll("#tree .sync[data-source]")];
  const sources = new Map(state.connections.flatMap((c) => c.dataSources).map((s) => [s.id, s]));
  let busy = false;
  await Promise.all(boxes.map(async (box) => {
    const source = sources.get(box.dataset.source);
    if (!source || !source.ragIndexEffective) return;
    try {
      const detail = await api(`/api/datasources/${source.id}`);
      if (!detail.sync) return;
      sync.states.set(source.id, detail.sync);
      busy ||= Boolean(detail.sync.running);
      if (box.isConnected) paintSync(box, source, detail.sync);
    } catch (error) { /* a removed source: the next load drops it */ }
  }));
  if (newest() && !$("#view-sources").hidden && boxes.length) sync.timer = setTimeout(refreshSync, busy ? 700 : 5000);
}

// ---- the settings modal -----------------------------------------------------------------

const LIMITS = {
  maxBytes: ["Max. data per sync", "bytes"],
  maxFileSize: ["Max. size per file", "bytes"],
  maxItems: ["Max. files per sync", "files"],
  maxDepth: ["Max. folder depth", "levels"],
  maxTasks: ["Max. tasks per sync", "tasks"],
  maxWorkspaces: ["Max. workspaces", "workspaces"],
  maxListsPerWorkspace: ["Max. lists per workspace", "lists"],
};

export async function openSettings(sourceId) {
  const modal = $("#settings-modal");
  $("#settings-error").textContent = "";
  const newest = startLoad("settings"); // two gears clicked: the last one's settings are shown
  const source = await api(`/api/datasources/${sourceId}`);
  const { connections } = await api("/api/connections");
  if (!newest()) return;
  const connection = connections.find((c) => c.id === source.connectionId);
  sync.modal = { source, connection };
  $("#settings-source").textContent = `${connection ? connection.label : ""} · ${source.path === "/" ? "whole connection" : source.path}`;
  $("#consent").checked = connection ? connection.knowledgeIngestionEnabled : false;
  showPolicy(source);
  $("#limits").replaceChildren(...Object.entries(source.ragLimits).map(([key, value]) => limitField(key, value, (source.ragLimitRanges || {})[key])));
  await refreshEstimate();
  if (!modal.open) modal.showModal();
}

function limitField(key, value, range) {
  const [label, unit] = LIMITS[key] || [key, ""];
  const bytes = unit === "bytes";
  const inGb = bytes && value >= GB && value % (GB / 10) === 0;
  const factor = bytes ? (inGb ? GB : MB) : 1;
  // one decimal, or two significant digits for limits below a tenth of the unit
  const shown = bytes ? (value >= factor / 10 ? +(value / factor).toFixed(1) : +(value / factor).toPrecision(2)) : value;
  const id = `limit-${key}`;
  const input = el("input", { id, type: "number", min: bytes ? "0" : "1", step: bytes ? "any" : "1", name: key, value: shown, inputmode: "decimal" });
  const unitBox = bytes
    ? el("select", { "aria-label": `Unit of ${label}` }, el("option", { value: String(MB), selected: !inGb }, "MB"), el("option", { value: String(GB), selected: inGb }, "GB"))
    : el("span", { class: "muted" }, unit);
  const max = range && range.max;
  if (max) input.title = `at most ${bytes ? fmtBytes(max) : max.toLocaleString()}`;
  let timer = null;
  const save = () => {
    clearTimeout(timer);
    timer = setTimeout(() => saveLimit(key, input.value, bytes ? Number(unitBox.value) : 1), 300);
  };
  input.addEventListener("input", save);
  if (bytes) unitBox.addEventListener("change", save);
  return el("div", { class: "limit" }, el("label", { for: id }, label), input, unitBox);
}

async function saveLimit(key, raw, factor) {
  const number = Number(raw);
  if (!raw || !(number > 0)) return;
  try {
    await api(`/api/datasources/${sync.modal.source.id}/settings`, { method: "PATCH", body: { ragLimits: { [key]: Math.round(number * factor) } } });
    $("#settings-error").textContent = "";
    await refreshEstimate();
  } catch (error) {
    $("#settings-error").textContent = error.message;
  }
}

async function refreshEstimate() {
  const newest = startLoad("estimate"); // after each saved limit: the last one's estimate
  const estimate = await api(`/api/datasources/${sync.modal.source.id}/cost-estimate`);
  if (!newest()) return;
  const chf = Number(estimate.estimatedChf) || 0;
  const basis = (estimate.basis && estimate.basis.assumptions) || {};
  const free = Number(basis.priceChfPerMTok) === 0;
  const price = chf === 0 ? "≈ CHF 0.00" : chf < 0.01 ? "< CHF 0.01" : `≈ CHF ${chf.toFixed(2)}`;
  $("#estimate").textContent = `${price} (${free ? "free local model" : `priced as ${basis.model || "the embedding model"}`})`;
  $("#estimate").dataset.tokens = String(estimate.estimatedTokens);
  $("#estimate").dataset.chf = String(chf);
  const tokens = Number(estimate.estimatedTokens) || 0;
  const amount = tokens >= 1e6 ? `${+(tokens / 1e6).toFixed(1)} million` : tokens.toLocaleString();
  const files = basis.sourceItems ?? "";
  $("#estimate-basis").textContent = {
    indexed: `About ${amount} tokens: the ${files} files indexed (${fmtBytes(basis.sourceBytes)}).`,
    listed: `About ${amount} tokens: the ${files} files it holds now (${fmtBytes(basis.sourceBytes)}).`,
  }[basis.sizedBy] || `At most ${amount} tokens: up to ${fmtBytes(basis.sourceBytes)}, the limit (the source could not be listed in full).`;
}

// Scope and neutralization of a tree element: set here or inherited (revertible as 🧠 is)
const SCOPES = { personal: "Only me", mandate: "My organisation" };
const NEUTRALIZE = { true: "Hidden before any AI call", false: "Left as they are" };

function policyOptions(select, names, explicit, effective) {
  const inherited = el("option", { value: "" }, `As the folder above (${names[String(effective)]})`);
  select.replaceChildren(inherited, ...Object.entries(names).map(([value, label]) => el("option", { value }, label)));
  select.value = explicit === null || explicit === undefined ? "" : String(explicit);
}

function showPolicy(source) {
  policyOptions($("#policy-scope"), SCOPES, source.scope, source.scopeEffective || "personal");
  policyOptions($("#policy-neutralize"), NEUTRALIZE, source.neutralize, Boolean(source.neutralizeEffective));
  $("#policy-result").textContent = "";
}

async function savePolicy(event) {
  const select = event.target;
  const field = select.dataset.field;
  const value = select.value === "" ? null : field === "neutralize" ? select.value === "true" : select.value;
  try {
    const result = await api(`/api/datasources/${sync.modal.source.id}/policy`, { method: "PATCH", body: { [field]: value } });
    sync.modal.source = { ...sync.modal.source, ...result.dataSource };
    showPolicy(sync.modal.source);
    const files = result.purge ? result.purge.files : 0;
    $("#policy-result").textContent = files ? `Saved. ${files} indexed file(s) are indexed again under the new setting.` : "Saved.";
  } catch (error) {
    $("#settings-error").textContent = error.message;
    showPolicy(sync.modal.source);
  }
}

async function setConsent(connection, enabled) {
  try {
    const result = await api(`/api/connections/${connection.id}/knowledge-consent`, { method: "PATCH", body: { enabled } });
    connection.knowledgeIngestionEnabled = result.enabled;
    return true;
  } catch (error) {
    $("#sources-error").textContent = error.message;
    return false;
  }
}

async function consentChanged() {
  const { connection } = sync.modal;
  const box = $("#consent");
  if (!connection) return;
  if (!box.checked && !(await confirmAction(`Withdraw consent for ${connection.label}? Everything indexed from it is removed from the knowledge store and its syncs stop.`, "Withdraw and remove"))) {
    box.checked = true;
    return;
  }
  if (await setConsent(connection, box.checked)) {
    if (!$("#view-sources").hidden) loadSources();
  } else box.checked = !box.checked;
}

export function wireSources() {
  $("#consent").addEventListener("change", consentChanged);
  $("#policy-scope").addEventListener("change", savePolicy);
  $("#policy-neutralize").addEventListener("change", savePolicy);
  $("#settings-modal").addEventListener("close", () => { if (!$("#view-sources").hidden) loadSources(); });
}
