// The Teams bot's control panel: its status, the tenants it serves, the conversations it is
// in with their transcript, the operator's persistent directives and director prompts
// (one-shot: the agent answers in the chat now; persistent: kept for every answer).

import { $, api, confirmAction, el, fmtTime, oneAtATime, startLoad, state } from "./api.js";

const KINDS = { personal: "Chat", groupChat: "Group chat", channel: "Channel", meeting: "Meeting" };
const SOURCES = { user: "", fastPath: "fast answer", agent: "agent", director: "director prompt" };
const panel = { conversation: null, timer: null };

export async function loadTeams() {
  $("#teams-error").textContent = "";
  const newest = startLoad("teams");
  let status;
  try {
    status = await api("/api/teams/status");
  } catch (error) {
    if (!newest()) return;
    $("#teams-status").textContent = error.status === 404 ? "The Teams bot is not installed on this server." : error.message;
    $("#teams-panel").hidden = true;
    return;
  }
  if (!newest()) return;
  $("#teams-panel").hidden = false;
  $("#teams-status").textContent = status.configured
    ? `Connected as Azure bot ${status.appId}.`
    : `Not configured: ${status.missing.join("; ")}`;
  $("#teams-refusal").textContent = status.lastRefusal ? `Last refused activity: ${status.lastRefusal}` : "";
  showBindings(status.bindings);
  $("#teams-bind").hidden = state.me.role === "user";
  for (const node of document.querySelectorAll("#teams-bind .sysadmin-only")) node.hidden = state.me.role !== "sysadmin";
  await loadConversations();
}

function showBindings(bindings) {
  const rows = bindings.map((b) => el("li", {},
    el("span", {}, `Tenant ${b.tenantId} → organisation ${b.mandateId}, answering as ${b.userId}`),
    state.me.role === "user" ? null : el("button", { type: "button", class: "link", onclick: oneAtATime(() => unbind(b)) }, "Remove")));
  $("#teams-bindings").replaceChildren(...(rows.length ? rows : [el("li", { class: "muted" }, "No Microsoft Entra tenant is bound yet.")]));
}

async function unbind(binding) {
  if (!(await confirmAction(`Stop serving tenant ${binding.tenantId}? Its directives are removed.`, "Remove"))) return;
  await api(`/api/teams/bindings/${encodeURIComponent(binding.id)}`, { method: "DELETE" }).catch(report);
  loadTeams();
}

async function loadConversations() {
  const newest = startLoad("teams-conversations");
  const conversations = await api("/api/teams/conversations");
  if (!newest()) return;
  const items = conversations.map((c) => el("li", {},
    el("button", {
      type: "button", class: "teams-conv", "data-id": c.id,
      "aria-pressed": String(panel.conversation?.id === c.id), onclick: () => openConversation(c),
    }, `${KINDS[c.kind] || c.kind}: ${c.title || shortId(c.id)}`, el("span", { class: "muted small" }, ` · ${fmtTime(c.lastActivityAt)}`))));
  $("#teams-conversations").replaceChildren(...(items.length ? items : [el("li", { class: "muted" }, "The bot has not been in a conversation yet.")]));
  const still = conversations.find((c) => c.id === panel.conversation?.id);
  if (still) openConversation(still);
  else $("#teams-conversation").hidden = true;
}

function shortId(id) {
  return id.length > 28 ? `${id.slice(0, 25)}…` : id;
}

async function openConversation(conversation) {
  panel.conversation = conversation;
  for (const b of document.querySelectorAll("#teams-conversations .teams-conv")) b.setAttribute("aria-pressed", String(b.dataset.id === conversation.id));
  $("#teams-conversation").hidden = false;
  $("#teams-conversation-title").textContent = `${KINDS[conversation.kind] || conversation.kind}: ${conversation.title || shortId(conversation.id)}`;
  await Promise.all([loadTranscript(), loadDirectives()]);
}

async function loadTranscript() {
  const id = encodeURIComponent(panel.conversation.id);
  const newest = startLoad("teams-transcript"); // another conversation opened meanwhile: its own
  const lines = await api(`/api/teams/conversations/${id}/messages`);
  if (!newest()) return lines;
  $("#teams-transcript").replaceChildren(...lines.map((line) => el("li", { class: `teams-line ${line.direction}`, "data-source": line.source },
    el("span", { class: "muted small" }, `${fmtTime(line.sentAt)} · ${line.direction === "out" ? "nyla" : line.senderName || "someone"}${SOURCES[line.source] ? ` (${SOURCES[line.source]})` : ""}`),
    el("p", {}, line.text))));
  return lines;
}

async function loadDirectives() {
  const id = encodeURIComponent(panel.conversation.id);
  const newest = startLoad("teams-directives");
  const directives = await api(`/api/teams/directives?conversationId=${id}`);
  if (!newest()) return;
  $("#teams-directives").replaceChildren(...(directives.length ? directives.map((d) => el("li", {},
    el("span", {}, d.text),
    el("span", { class: "muted small" }, d.conversationId ? " · this conversation" : " · every conversation"),
    el("button", { type: "button", class: "link", onclick: oneAtATime(() => removeDirective(d)) }, "Remove"))) : [el("li", { class: "muted" }, "No persistent directives.")]));
}

async function removeDirective(directive) {
  await api(`/api/teams/directives/${encodeURIComponent(directive.id)}`, { method: "DELETE" }).catch(report);
  loadDirectives();
}

const direct = oneAtATime(async (event) => {
  event.preventDefault();
  const prompt = $("#teams-prompt").value.trim();
  if (!prompt || !panel.conversation) return;
  const persistent = $("#teams-persistent").checked;
  const body = { prompt, persistent };
  if (persistent && $("#teams-everywhere").checked) body.bindingId = panel.conversation.bindingId;
  else body.conversationId = panel.conversation.id;
  try {
    await api("/api/teams/director", { method: "POST", body });
  } catch (error) {
    return report(error);
  }
  $("#teams-prompt").value = "";
  if (persistent) return loadDirectives();
  $("#teams-sent").textContent = "Sent: the agent is working on it; its answer appears in the chat and below.";
  waitForAnswer((await loadTranscript()).length);
});

function waitForAnswer(before, newest = startLoad("teams-answer"), tries = 0) {
  clearTimeout(panel.timer);
  panel.timer = setTimeout(async () => {
    if (!newest() || $("#view-teams").hidden) return;
    const lines = await loadTranscript().catch(() => []);
    if (lines.length > before && lines[lines.length - 1].source === "director") {
      $("#teams-sent").textContent = "Delivered to the chat.";
      return;
    }
    if (tries < 120) waitForAnswer(before, newest, tries + 1);
  }, 1000);
}

const bind = oneAtATime(async (event) => {
  event.preventDefault();
  const body = { tenantId: $("#teams-tenant").value.trim(), userId: $("#teams-runas").value.trim() };
  const mandate = $("#teams-mandate").value.trim();
  if (mandate) body.mandateId = mandate;
  try {
    await api("/api/teams/bindings", { method: "POST", body });
  } catch (error) {
    return report(error);
  }
  for (const field of ["#teams-tenant", "#teams-runas", "#teams-mandate"]) $(field).value = "";
  loadTeams();
});

function report(error) {
  $("#teams-error").textContent = error.message;
}

export function wireTeams() {
  $("#teams-director").addEventListener("submit", direct);
  $("#teams-bind").addEventListener("submit", bind);
  $("#teams-persistent").addEventListener("change", () => { $("#teams-everywhere-row").hidden = !$("#teams-persistent").checked; });
  $("#teams-refresh").addEventListener("click", () => loadTeams().catch(report));
}
