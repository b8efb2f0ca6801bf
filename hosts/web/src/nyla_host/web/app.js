// nyla's web page: plain JavaScript, no build step, no third-party assets.
// Every request carries the API token and the browser's IANA timezone (X-User-Timezone).
"use strict";

const $ = (sel) => document.querySelector(sel);
const TZ = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const MB = 1024 * 1024;
const state = { me: null, connections: [], run: null, jobsTimer: null, modal: null };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    // through the CSSOM: the Content-Security-Policy refuses style attributes
    else if (key === "style") node.style.cssText = value;
    else if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${localStorage.getItem("nyla.token") || ""}`, "X-User-Timezone": TZ, ...extra };
}

async function api(path, { method = "GET", body } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  if (response.status === 401 && state.me) signOut();
  const data = response.headers.get("content-type")?.includes("json") ? await response.json() : null;
  if (!response.ok) throw new Error((data && (data.detail?.[0]?.msg || data.detail)) || response.statusText);
  return data;
}

function fmtBytes(n) {
  if (n >= MB) return `${(n / MB).toFixed(1)} MB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} kB`;
  return `${n} B`;
}

function fmtTime(iso) {
  return iso ? new Date(iso).toLocaleString(undefined, { timeZone: TZ }) : "–";
}

// ---- sign-in and navigation ---------------------------------------------------------

async function signIn(token) {
  localStorage.setItem("nyla.token", token);
  try {
    state.me = await api("/api/me");
  } catch (error) {
    localStorage.removeItem("nyla.token");
    $("#signin-error").textContent = `Sign-in failed: ${error.message}`;
    return false;
  }
  $("#who").textContent = `${state.me.userId} · ${state.me.role} · ${state.me.timezone}`;
  $("#nav").hidden = false;
  $("#signout").hidden = false;
  pollJobs();
  show(location.hash.slice(1) || "chat");
  return true;
}

function signOut() {
  localStorage.removeItem("nyla.token");
  localStorage.removeItem("nyla.run");
  localStorage.removeItem("nyla.workflow");
  state.me = null;
  clearTimeout(state.jobsTimer);
  location.hash = "";
  location.reload();
}

function show(view) {
  if (!["chat", "sources", "inventory"].includes(view)) view = "chat";
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${view}`;
  for (const tab of document.querySelectorAll(".tab")) {
    if (tab.dataset.view === view) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  if (location.hash.slice(1) !== view) history.replaceState(null, "", `#${view}`);
  if (view === "sources") loadSources();
  if (view === "inventory") loadInventory();
  if (view === "chat") resumeRun();
}

// ---- chat: runs streamed over SSE (fetch, so the token stays in a header) -------------

function assistantBubble() {
  const bubble = el("div", { class: "msg assistant" }, el("div", { class: "tools" }), el("div", { class: "answer" }), el("div", { class: "summary" }));
  $("#transcript").append(bubble);
  return bubble;
}

function render(bubble, event) {
  const answer = bubble.querySelector(".answer");
  if (event.type === "CHUNK") answer.textContent += event.text;
  else if (event.type === "TOOL_CALL") {
    const args = event.data.arguments && event.data.arguments !== "{}" ? ` ${event.data.arguments}` : "";
    bubble.querySelector(".tools").append(el("div", { class: "tool call", "data-call": event.data.callId || "" }, `🔧 ${event.data.toolName}${args}`));
  } else if (event.type === "TOOL_RESULT") {
    const ok = event.data.success;
    bubble.querySelector(".tools").append(el("div", { class: `tool ${ok ? "ok" : "failed"}` }, `${event.data.toolName}${ok ? "" : `: ${event.data.error}`}`));
  } else if (event.type === "FINAL") {
    answer.innerHTML = markdown(event.text);
    answer.classList.add("final");
  } else if (event.type === "AGENT_SUMMARY") {
    const d = event.data;
    bubble.querySelector(".summary").textContent = `${d.status} · CHF ${Number(d.costChf).toFixed(6)} · ${d.rounds} round(s) · ${d.model || ""}`;
  } else if (event.type === "ERROR") {
    bubble.append(el("div", { class: "run-error" }, event.text));
  }
}

// A small Markdown subset for answers: everything is escaped first, so only the tags made
// here reach the page (headings, lists, code, bold, italics, paragraphs).
function markdown(text) {
  const escape = (t) => t.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const inline = (t) => escape(t)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
  const out = [];
  let list = null;
  const closeList = () => { if (list) { out.push(`</${list}>`); list = null; } };
  const blocks = text.replace(/\r/g, "").split(/```/);
  blocks.forEach((block, i) => {
    if (i % 2 === 1) { closeList(); out.push(`<pre><code>${escape(block.replace(/^\w*\n/, ""))}</code></pre>`); return; }
    for (const line of block.split("\n")) {
      const heading = line.match(/^(#{1,4})\s+(.*)$/);
      const item = line.match(/^\s*(?:[-*]|(\d+)\.)\s+(.*)$/);
      if (heading) { closeList(); out.push(`<h4>${inline(heading[2])}</h4>`); }
      else if (item) {
        const kind = item[1] ? "ol" : "ul";
        if (list !== kind) { closeList(); out.push(`<${kind}>`); list = kind; }
        out.push(`<li>${inline(item[2])}</li>`);
      } else if (line.trim()) { closeList(); out.push(`<p>${inline(line)}</p>`); }
      else closeList();
    }
  });
  closeList();
  return out.join("");
}

function parseFrames(buffer, onMessage) {
  let index;
  while ((index = buffer.indexOf("\n\n")) >= 0) {
    const block = buffer.slice(0, index);
    buffer = buffer.slice(index + 2);
    const message = { data: "" };
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue; // ": ping"
      const colon = line.indexOf(": ");
      const key = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 2);
      if (key === "data") message.data += value;
      else message[key] = value;
    }
    if (message.event) onMessage(message);
  }
  return buffer;
}

async function follow(runId, bubble) {
  let last = 0;
  let ended = false;
  state.run = runId;
  setRunning(true);
  while (!ended && state.run === runId) {
    try {
      const response = await fetch(`/api/runs/${runId}/events`, { headers: headers({ "Last-Event-ID": String(last) }) });
      if (response.status === 404 || response.status === 401) break;
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer = parseFrames(buffer + decoder.decode(value, { stream: true }), (message) => {
          if (message.event === "end") { ended = true; return; }
          const event = JSON.parse(message.data);
          last = event.seq;
          render(bubble, event);
          bubble.scrollIntoView({ block: "end" });
        });
      }
    } catch (error) {
      await new Promise((resolve) => setTimeout(resolve, 1000)); // dropped: resume after `last`
    }
  }
  if (state.run === runId) {
    state.run = null;
    localStorage.removeItem("nyla.run");
    setRunning(false);
  }
}

function setRunning(running) {
  $("#send").disabled = running;
  $("#cancel").hidden = !running;
  $("#transcript").dataset.running = running ? "true" : "false";
}

async function sendPrompt(event) {
  event.preventDefault();
  const prompt = $("#prompt").value.trim();
  if (!prompt || state.run) return;
  $("#transcript").append(el("div", { class: "msg user" }, prompt));
  $("#prompt").value = "";
  const bubble = assistantBubble();
  try {
    // one chat workflow per signed-in browser: round memory and files accumulate across prompts
    let workflowId = localStorage.getItem("nyla.workflow");
    if (!workflowId) {
      workflowId = `chat:${crypto.randomUUID ? crypto.randomUUID() : Date.now().toString(36)}`;
      localStorage.setItem("nyla.workflow", workflowId);
    }
    const run = await api("/api/runs", { method: "POST", body: { prompt, workflowId } });
    localStorage.setItem("nyla.run", run.runId);
    bubble.dataset.run = run.runId;
    follow(run.runId, bubble);
  } catch (error) {
    bubble.append(el("div", { class: "run-error" }, error.message));
  }
}

async function resumeRun() {
  const runId = localStorage.getItem("nyla.run");
  if (!runId || state.run === runId) return;
  try {
    const run = await api(`/api/runs/${runId}`);
    $("#transcript").append(el("div", { class: "msg user" }, run.prompt));
    const bubble = assistantBubble();
    bubble.dataset.run = runId;
    follow(runId, bubble); // replays from the first event, then goes on live
  } catch (error) {
    localStorage.removeItem("nyla.run");
  }
}

// ---- data sources: the tree with 🧠 and ⚙️ -------------------------------------------

async function loadSources() {
  $("#sources-error").textContent = "";
  try {
    const [{ connections }, { connectors }] = await Promise.all([api("/api/datasources"), api("/api/connectors")]);
    state.connections = connections;
    const select = $("#new-service");
    select.replaceChildren(...connectors.map((c) => el("option", { value: c.service }, c.service)));
    $("#tree").replaceChildren(...(connections.length ? connections.map(connectionCard) : [el("p", { class: "muted" }, "No connections yet.")]));
  } catch (error) {
    $("#sources-error").textContent = error.message;
  }
}

function connectionCard(connection) {
  const pathInput = el("input", { placeholder: "/folder", "aria-label": `New path in ${connection.label}` });
  const nodes = connection.dataSources.map((source) => {
    const depth = source.path.split("/").filter(Boolean).length;
    const explicit = source.ragIndexEnabled;
    const rag = el("button", {
      class: `rag${explicit === null ? " inherited" : ""}`,
      "aria-pressed": String(source.ragIndexEffective),
      title: explicit === null ? "inherited from the parent" : "set on this element",
      onclick: () => toggleRag(source),
    }, `🧠 ${source.ragIndexEffective ? "on" : "off"}`);
    const gear = el("button", { class: "gear", title: "Settings", "aria-label": `Settings of ${source.path}`, onclick: () => openSettings(source.id) }, "⚙️");
    return el("div", { class: "node", "data-id": source.id, style: `padding-left:${depth}rem` }, el("span", { class: "path" }, source.label ? `${source.label} (${source.path})` : source.path), rag, gear);
  });
  const browseTree = el("ul", { class: "browse", "aria-label": `Browse ${connection.label}` });
  loadBrowse(connection, "", browseTree);
  return el("div", { class: "connection", "data-id": connection.id },
    el("h2", {}, connection.label || connection.service, el("span", { class: "muted small" }, `${connection.service}${connection.knowledgeIngestionEnabled ? "" : " · consent off"}`)),
    ...nodes,
    el("form", { class: "add-source", onsubmit: (e) => { e.preventDefault(); addSource(connection.id, pathInput.value); } }, pathInput, el("button", { type: "submit" }, "Add folder")),
    el("details", { class: "browse-box", open: "" }, el("summary", {}, "Browse"), browseTree));
}

// The connection's own tree (the connector's browse): 🧠 and ⚙️ on any folder; a folder
// without a data source gets one when it is first switched or configured.
async function loadBrowse(connection, path, list) {
  try {
    const page = await api(`/api/connections/${connection.id}/browse?path=${encodeURIComponent(path)}`);
    list.replaceChildren(...page.items.map((item) => browseNode(connection, item)));
  } catch (error) {
    list.replaceChildren(el("li", { class: "error" }, error.message));
  }
}

function browseNode(connection, item) {
  if (!item.isFolder) return el("li", { class: "browse-file muted" }, `${item.title} · ${fmtBytes(item.size || 0)}`);
  const children = el("ul", { class: "browse" });
  const expand = el("button", { class: "expand", "aria-expanded": "false", onclick: () => {
    const open = expand.getAttribute("aria-expanded") === "true";
    expand.setAttribute("aria-expanded", String(!open));
    expand.textContent = open ? "▸" : "▾";
    if (open) children.replaceChildren(); else loadBrowse(connection, item.nodePath, children);
  } }, "▸");
  const rag = el("button", {
    class: `rag${item.ragIndexEnabled === null ? " inherited" : ""}`,
    "aria-pressed": String(item.ragIndexEffective),
    onclick: async () => {
      const id = await ensureSource(connection, item);
      await toggleRag({ id, ragIndexEffective: item.ragIndexEffective });
    },
  }, `🧠 ${item.ragIndexEffective ? "on" : "off"}`);
  const gear = el("button", { class: "gear", "aria-label": `Settings of ${item.nodePath}`, onclick: async () => openSettings(await ensureSource(connection, item)) }, "⚙️");
  return el("li", { class: "browse-node", "data-path": item.nodePath },
    el("div", { class: "node" }, expand, el("span", { class: "path" }, item.title), rag, gear), children);
}

async function ensureSource(connection, item) {
  if (item.dataSourceId) return item.dataSourceId;
  const source = await api("/api/datasources", { method: "POST", body: { connectionId: connection.id, path: item.nodePath, label: item.title } });
  item.dataSourceId = source.id;
  return source.id;
}

async function toggleRag(source) {
  try {
    await api(`/api/datasources/${source.id}/rag-index`, { method: "PATCH", body: { enabled: !source.ragIndexEffective } });
    await loadSources();
    pollJobs();
  } catch (error) {
    $("#sources-error").textContent = error.message;
  }
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

async function addConnection(event) {
  event.preventDefault();
  try {
    await api("/api/connections", { method: "POST", body: { service: $("#new-service").value, label: $("#new-label").value } });
    $("#new-label").value = "";
    await loadSources();
  } catch (error) {
    $("#sources-error").textContent = error.message;
  }
}

// ---- the settings modal: consent, RAG limits (MB in the UI, bytes on the wire), estimate -----

async function openSettings(sourceId) {
  const modal = $("#settings-modal");
  $("#settings-error").textContent = "";
  const source = await api(`/api/datasources/${sourceId}`);
  const { connections } = await api("/api/connections");
  const connection = connections.find((c) => c.id === source.connectionId);
  state.modal = { source, connection };
  $("#settings-source").textContent = `${connection ? connection.label : ""} ${source.path}`;
  $("#consent").checked = connection ? connection.knowledgeIngestionEnabled : false;
  $("#limits").replaceChildren(...Object.entries(source.ragLimits).map(([key, value]) => limitField(key, value, (source.ragLimitRanges || {})[key])));
  await refreshEstimate();
  if (!modal.open) modal.showModal();
}

function limitField(key, value, range) {
  const inBytes = /bytes|size/i.test(key);
  // MB with one decimal, or two significant digits for limits below 0.1 MB
  const shown = inBytes ? (value >= MB / 10 ? +(value / MB).toFixed(1) : +(value / MB).toPrecision(2)) : value;
  const max = range ? String(inBytes ? Math.floor(range.max / MB) : range.max) : undefined;
  const input = el("input", { type: "number", min: inBytes ? "0" : "1", max, step: inBytes ? "any" : "1", name: key, "aria-label": key, value: shown });
  let timer = null;
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => saveLimit(key, input.value, inBytes), 300);
  });
  return el("label", { class: "limit" }, el("span", {}, key), input, el("span", { class: "muted" }, inBytes ? "MB" : ""));
}

async function saveLimit(key, raw, inBytes) {
  const number = Number(raw);
  if (!raw || !(number > 0)) return;
  const value = inBytes ? Math.round(number * MB) : Math.round(number);
  try {
    await api(`/api/datasources/${state.modal.source.id}/settings`, { method: "PATCH", body: { ragLimits: { [key]: value } } });
    $("#settings-error").textContent = "";
    await refreshEstimate();
  } catch (error) {
    $("#settings-error").textContent = error.message;
  }
}

async function refreshEstimate() {
  const estimate = await api(`/api/datasources/${state.modal.source.id}/cost-estimate`);
  $("#estimate").textContent = `≈ CHF ${estimate.estimatedChf.toFixed(4)} · ${estimate.estimatedTokens.toLocaleString()} tokens`;
  $("#estimate").dataset.tokens = String(estimate.estimatedTokens);
}

async function setConsent() {
  const { connection } = state.modal;
  if (!connection) return;
  try {
    const result = await api(`/api/connections/${connection.id}/knowledge-consent`, { method: "PATCH", body: { enabled: $("#consent").checked } });
    connection.knowledgeIngestionEnabled = result.enabled;
    if (!$("#view-sources").hidden) loadSources();
  } catch (error) {
    $("#settings-error").textContent = error.message;
    $("#consent").checked = !$("#consent").checked;
  }
}

// ---- the inventory page with its partial banner, and the running-jobs badge ---------------

async function loadInventory(level) {
  const levels = ["me"];
  if (state.me.role !== "user") levels.push("mandate");
  if (state.me.role === "sysadmin") levels.push("platform");
  level = level || "me";
  $("#levels").replaceChildren(...levels.map((name) => el("button", { class: "tab", "aria-current": name === level ? "page" : null, onclick: () => loadInventory(name) }, name)));
  const inventory = await api(`/api/rag/inventory/${level}`);
  const rows = inventory.rows.map((r) => el("tr", {}, el("td", {}, r.scope), el("td", {}, r.owner || "–"), el("td", {}, String(r.files)), el("td", {}, String(r.failedFiles)), el("td", {}, String(r.chunks)), el("td", {}, fmtBytes(r.bytes)), el("td", {}, fmtTime(r.lastIndexed))));
  $("#inventory-table tbody").replaceChildren(...rows);
  const t = inventory.totals;
  $("#inventory-table tfoot").replaceChildren(el("tr", {}, el("td", {}, "total"), el("td", {}), el("td", { class: "total-files" }, String(t.files)), el("td", {}, String(t.failedFiles)), el("td", {}, String(t.chunks)), el("td", {}, fmtBytes(t.bytes)), el("td", {}, fmtTime(t.lastIndexed))));
  $("#partial").replaceChildren(...inventory.partial.map((p) => el("div", { class: "banner", role: "alert" },
    el("span", {}, `Partial: indexing of ${p.label || "a data source"} stopped at a limit (${p.itemsIndexed} items, ${fmtBytes(p.bytesIndexed)}).`),
    el("button", { onclick: () => openSettings(p.dataSourceId) }, "Adjust limit"))));
}

async function pollJobs() {
  clearTimeout(state.jobsTimer);
  if (!state.me) return;
  try {
    const { jobs } = await api("/api/rag/inventory/jobs");
    const badge = $("#jobs-badge");
    badge.hidden = jobs.length === 0;
    badge.textContent = jobs.length === 1
      ? `⏳ indexing: ${jobs[0].message || jobs[0].kind} (${jobs[0].progress}${jobs[0].total ? `/${jobs[0].total}` : ""})`
      : `⏳ ${jobs.length} indexing jobs running`;
    if (Number(badge.dataset.count || 0) > 0 && jobs.length === 0 && !$("#view-inventory").hidden) loadInventory();
    badge.dataset.count = String(jobs.length);
  } catch (error) { /* the next poll tries again */ }
  state.jobsTimer = setTimeout(pollJobs, 2000);
}

// ---- wiring ---------------------------------------------------------------------------

$("#signin-form").addEventListener("submit", (e) => { e.preventDefault(); signIn($("#token").value.trim()); });
$("#signout").addEventListener("click", signOut);
$("#chat-form").addEventListener("submit", sendPrompt);
$("#prompt").addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("#chat-form").requestSubmit(); } });
$("#cancel").addEventListener("click", () => state.run && api(`/api/runs/${state.run}/cancel`, { method: "POST" }));
$("#add-connection").addEventListener("submit", addConnection);
$("#consent").addEventListener("change", setConsent);
$("#settings-modal").addEventListener("close", () => { if (!$("#view-inventory").hidden) loadInventory(); if (!$("#view-sources").hidden) loadSources(); });
for (const tab of document.querySelectorAll("#nav .tab")) tab.addEventListener("click", () => show(tab.dataset.view));
window.addEventListener("hashchange", () => state.me && show(location.hash.slice(1)));

const saved = localStorage.getItem("nyla.token");
if (saved) signIn(saved);
