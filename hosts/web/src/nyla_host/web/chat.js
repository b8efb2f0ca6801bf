// The chat: one conversation at a time (its id in the URL hash, so a reload restores it),
// runs streamed over SSE through fetch (the token stays in a header) and resumed after the
// last event seen, the model picker, attached files and the empty-chat welcome.

import { $, api, el, fmtBytes, headers, oneAtATime, serviceLabel, startLoad, state, upload } from "./api.js";
import { conversationHref, loadConversations, markActive } from "./conversations.js";
import { link, render as markdown } from "./markdown.js";

const chat = { id: null, shown: false, run: null, abort: null, pending: [], uploads: 0 };

// ---- the open conversation -------------------------------------------------------------

export async function showChat(id, { again = false } = {}) {
  if (!state.models.length) loadModels();
  if (chat.shown && id === chat.id && !again) {
    if (!id && !$("#transcript").childElementCount) showWelcome(); // connections may have changed
    return;
  }
  chat.shown = true;
  stopFollowing();
  chat.id = id;
  $("#nav .tab[data-view=chat]").setAttribute("href", id ? conversationHref(id) : "#chat");
  $("#transcript").replaceChildren();
  $("#chat-error").textContent = "";
  markActive(id);
  loadConversations(id);
  if (!id) {
    $("#conversation-title").textContent = "New conversation";
    showWelcome();
    return;
  }
  $("#welcome").hidden = true;
  const newest = startLoad("conversation"); // opened again (a link to itself): the last answer
  try {
    const conversation = await api(`/api/conversations/${encodeURIComponent(id)}`);
    if (chat.id !== id || !newest()) return;
    renderConversation(conversation);
  } catch (error) {
    if (chat.id === id && newest()) $("#chat-error").textContent = `This conversation could not be opened: ${error.message}`;
  }
}

function renderConversation(conversation) {
  $("#conversation-title").textContent = conversation.title || "Untitled conversation";
  const answered = new Set();
  const asked = new Set();
  const interrupted = new Set((conversation.runs || []).filter((r) => r.status === "interrupted").map((r) => r.runId));
  let last = null;
  for (const message of conversation.messages || []) {
    last = null; // only the conversation's last answer offers to run again
    if (message.role === "user") {
      $("#transcript").append(userBubble(message.content, message.files || []));
      if (message.runId) asked.add(message.runId);
    } else if (message.role === "assistant") {
      const bubble = assistantBubble(message.runId);
      if (message.status === "error") bubble.append(el("div", { class: "run-error", role: "alert" }, message.content));
      else showAnswer(bubble, message.content, message.citations || []);
      if (message.runId) answered.add(message.runId);
      last = { bubble, runId: message.runId };
    }
  }
  if (last && interrupted.has(last.runId)) offerResume(last.bubble, last.runId);
  const running = (conversation.runs || []).find((r) => ["running", "queued", "pending"].includes(r.status) && !answered.has(r.runId));
  if (running) resume(running.runId, asked.has(running.runId));
  else $("#transcript").lastElementChild?.scrollIntoView({ block: "end" });
  if (!(conversation.messages || []).length && !running) showWelcome();
}

async function resume(runId, asked) {
  if (!asked) {
    try {
      const run = await api(`/api/runs/${encodeURIComponent(runId)}`);
      $("#transcript").append(userBubble(run.prompt, []));
    } catch (error) {
      $("#chat-error").textContent = error.message;
      return;
    }
  }
  follow(runId, assistantBubble(runId)); // replays from the first event, then goes on live
}

function userBubble(text, files) {
  return el("div", { class: "msg user" },
    el("div", { class: "text" }, text),
    files.length ? el("div", { class: "chips" }, files.map((f) => el("span", { class: "chip" }, f.name))) : null);
}

function assistantBubble(runId) {
  const bubble = el("div", { class: "msg assistant", "data-run": runId || null },
    el("div", { class: "tools" }), el("div", { class: "answer" }), el("div", { class: "citations" }), el("div", { class: "summary" }));
  $("#transcript").append(bubble);
  return bubble;
}

function showAnswer(bubble, text, citations) {
  const answer = bubble.querySelector(".answer");
  answer.replaceChildren(markdown(text));
  answer.classList.add("final");
  const box = bubble.querySelector(".citations");
  if (!citations.length) return box.replaceChildren();
  box.replaceChildren(el("span", { class: "muted small" }, "Sources"), el("ol", {}, citations.map((c) => {
    const title = c.title || c.path || "source";
    const where = c.path && ![title, `/${title}`].includes(c.path) ? el("span", { class: "muted small" }, ` ${c.path}`) : null;
    return el("li", {}, c.url ? link(c.url, title) : title, where);
  })));
}

// ---- the welcome of an empty chat: what the agent can do with the person's data ---------

async function showWelcome() {
  const box = $("#welcome");
  box.hidden = false;
  box.replaceChildren(el("h2", {}, "What can I help with?"), el("p", { class: "muted" }, "Loading your connections…"));
  const newest = startLoad("welcome");
  const [{ connections }, { toolboxes }] = await Promise.all([
    api("/api/connections").catch(() => ({ connections: [] })),
    api("/api/toolboxes").catch(() => ({ toolboxes: [] })),
  ]);
  if (box.hidden || chat.id || !newest()) return;
  const mine = new Set(connections.map((c) => c.service));
  const tools = toolboxes.filter((t) => t.defaultActive || (t.requiresConnection && mine.has(t.requiresConnection)));
  box.replaceChildren(
    el("h2", {}, "What can I help with?"),
    connections.length
      ? el("div", {}, el("p", {}, "I can search, read and summarise what you connected:"),
        el("ul", { class: "welcome-connections" }, connections.map((c) => el("li", {}, el("strong", {}, c.label || serviceLabel(c.service)), ` · ${serviceLabel(c.service)}${c.knowledgeIngestionEnabled ? "" : " (not indexed)"}`))))
      : el("p", {}, "Nothing is connected yet. ", el("a", { href: "#sources" }, "Add a connection"), " (a folder, Microsoft 365, Google, …) and I can answer from your own files, mail and tasks."),
    tools.length ? el("p", { class: "muted small" }, `Tools at hand: ${tools.map((t) => t.label || t.id).join(", ")}.`) : null,
    el("p", { class: "muted small" }, "Attach files to ask about them. Answers name their sources."));
}

// ---- models and attachments ------------------------------------------------------------

async function loadModels() {
  const newest = startLoad("models");
  try {
    const data = await api("/api/models");
    if (!newest()) return;
    state.models = data.models.filter((m) => !m.operationTypes || m.operationTypes.includes("agent"));
    state.defaultModel = data.default || null;
  } catch (error) {
    $("#chat-error").textContent = `Models: ${error.message}`;
    return;
  }
  const select = $("#model");
  select.replaceChildren(...state.models.map((m) => el("option", { value: m.id }, m.label || m.name || m.id)));
  if (state.defaultModel && state.models.some((m) => m.id === state.defaultModel)) select.value = state.defaultModel;
  select.closest("label").hidden = state.models.length < 2;
}

function renderChips() {
  $("#attachments").replaceChildren(...chat.pending.map((file) => el("span", { class: "chip", "data-id": file.id },
    `${file.name} · ${fmtBytes(file.size)}`,
    el("button", { type: "button", class: "icon", "aria-label": `Remove ${file.name}`, onclick: () => {
      chat.pending = chat.pending.filter((f) => f !== file);
      renderChips();
    } }, "✕"))));
  if (chat.uploads) $("#attachments").append(el("span", { class: "chip muted" }, `Uploading ${chat.uploads}…`));
  $("#send").disabled = Boolean(chat.run || chat.uploads);
}

async function attach(files) {
  $("#chat-error").textContent = "";
  for (const file of files) {
    chat.uploads++;
    renderChips();
    try {
      const item = await upload(file);
      chat.pending.push({ id: item.id, name: item.name, size: item.size });
    } catch (error) {
      $("#chat-error").textContent = `${file.name}: ${error.message}`;
    } finally {
      chat.uploads--;
      renderChips();
    }
  }
}

// ---- runs: send, stream, resume -------------------------------------------------------

function renderEvent(bubble, event) {
  const answer = bubble.querySelector(".answer");
  const data = event.data || {};
  if (event.type === "CHUNK") answer.textContent += event.text;
  else if (event.type === "TOOL_CALL") {
    const args = data.arguments && data.arguments !== "{}" ? ` ${data.arguments}` : "";
    bubble.querySelector(".tools").append(el("div", { class: "tool call", "data-call": data.callId || "" }, `› ${data.toolName}${args}`));
  } else if (event.type === "TOOL_RESULT") {
    const ok = data.success;
    bubble.querySelector(".tools").append(el("div", { class: `tool ${ok ? "ok" : "failed"}` }, `${data.toolName}${ok ? "" : `: ${data.error}`}`));
  } else if (event.type === "FINAL") {
    showAnswer(bubble, event.text, data.citations || event.citations || []);
  } else if (event.type === "AGENT_SUMMARY") {
    const model = state.models.find((m) => m.id === data.model);
    bubble.querySelector(".summary").textContent = `${data.status} · CHF ${Number(data.costChf).toFixed(4)} · ${data.rounds} round(s) · ${model ? model.label || model.id : data.model || ""}`;
  } else if (event.type === "ERROR") {
    bubble.append(el("div", { class: "run-error", role: "alert" }, event.text));
    if (data.status === "interrupted") offerResume(bubble, event.runId || bubble.dataset.run);
  }
}

// ---- an interrupted run: run it again, its unfinished writes confirmed first ------------

function offerResume(bubble, runId) {
  if (!runId || bubble.querySelector(".resume")) return;
  const box = el("div", { class: "resume", "data-run": runId });
  box.append(el("button", { type: "button", class: "resume-run", onclick: () => resumeRun(box, runId, false) }, "Run it again"));
  bubble.append(box);
}

async function resumeRun(box, runId, confirmWrites) {
  if (chat.run) return;
  for (const button of box.querySelectorAll("button")) button.disabled = true;
  $("#chat-error").textContent = "";
  try {
    const run = await api(`/api/runs/${encodeURIComponent(runId)}/resume`, { method: "POST", body: { confirmWrites } });
    box.remove();
    if (run.prompt) $("#transcript").append(userBubble(run.prompt, []));
    follow(run.runId, assistantBubble(run.runId));
  } catch (error) {
    const writes = error.status === 409 && !confirmWrites ? error.data?.detail?.unfinishedWrites : null;
    if (writes && writes.length) return askAboutWrites(box, runId, writes);
    for (const button of box.querySelectorAll("button")) button.disabled = false;
    $("#chat-error").textContent = error.message;
  }
}

function askAboutWrites(box, runId, writes) {
  box.replaceChildren(
    el("p", {}, "Before it stopped, the run started these changes. Each may or may not have been made: check them first, so nothing is done twice."),
    el("ul", { class: "unfinished-writes" }, writes.map((w) => el("li", {}, el("strong", {}, w.toolName), ` (call ${w.callId}, round ${w.round})`))),
    el("button", { type: "button", class: "primary confirm-writes", onclick: () => resumeRun(box, runId, true) }, "I checked them: run it again"));
  box.querySelector(".confirm-writes").focus();
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
  chat.run = runId;
  setRunning(true);
  while (!ended && chat.run === runId) {
    chat.abort = new AbortController();
    try {
      const response = await fetch(`/api/runs/${runId}/events`, { headers: headers({ "Last-Event-ID": String(last) }), signal: chat.abort.signal });
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
          renderEvent(bubble, event);
          bubble.scrollIntoView({ block: "end" });
        });
      }
    } catch (error) {
      if (chat.run !== runId) break;
      await new Promise((resolve) => setTimeout(resolve, 1000)); // dropped: resume after `last`
    }
  }
  if (chat.run === runId) {
    chat.run = null;
    setRunning(false);
    loadConversations(chat.id);
  }
}

function stopFollowing() {
  chat.run = null;
  chat.abort?.abort();
  setRunning(false);
}

function setRunning(running) {
  $("#send").disabled = running || Boolean(chat.uploads);
  $("#cancel").hidden = !running;
  $("#transcript").dataset.running = running ? "true" : "false";
}

// one at a time: a second Enter while the first prompt is being posted keeps its text
const sendPrompt = oneAtATime(async (event) => {
  event.preventDefault();
  const prompt = $("#prompt").value.trim();
  if (!prompt || chat.run || chat.uploads) return;
  const files = chat.pending;
  $("#welcome").hidden = true;
  $("#chat-error").textContent = "";
  $("#transcript").append(userBubble(prompt, files));
  $("#prompt").value = "";
  chat.pending = [];
  renderChips();
  const bubble = assistantBubble();
  const body = { prompt, fileIds: files.map((f) => f.id) };
  if (chat.id) body.conversationId = chat.id;
  if ($("#model").value) body.model = $("#model").value;
  try {
    const run = await api("/api/runs", { method: "POST", body });
    bubble.dataset.run = run.runId;
    if (run.conversationId && run.conversationId !== chat.id) {
      chat.id = run.conversationId;
      // the address now names the conversation: a reload reopens it (no hashchange fires)
      history.replaceState(null, "", conversationHref(chat.id));
      $("#nav .tab[data-view=chat]").setAttribute("href", conversationHref(chat.id));
      $("#conversation-title").textContent = prompt.slice(0, 80);
      markActive(chat.id);
      loadConversations(chat.id);
    }
    follow(run.runId, bubble);
  } catch (error) {
    bubble.append(el("div", { class: "run-error", role: "alert" }, error.message));
    chat.pending = files; // nothing is lost: the files stay attached for the next try
    renderChips();
  }
});

export function wireChat() {
  $("#chat-form").addEventListener("submit", sendPrompt);
  $("#prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("#chat-form").requestSubmit(); }
  });
  $("#cancel").addEventListener("click", () => chat.run && api(`/api/runs/${chat.run}/cancel`, { method: "POST" }));
  $("#attach").addEventListener("click", () => $("#attach-input").click());
  $("#attach-input").addEventListener("change", (e) => { attach([...e.target.files]); e.target.value = ""; });
  $("#new-conversation").addEventListener("click", () => {
    if (location.hash === "#chat") showChat(null, { again: true });
    else location.hash = "#chat";
    $("#prompt").focus();
  });
}

export function resetChat() {
  stopFollowing();
  Object.assign(chat, { id: null, shown: false, pending: [] });
}
