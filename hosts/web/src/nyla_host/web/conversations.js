// The conversation list in the chat's sidebar: reopen (a link to #chat/<id>), rename, delete.

import { $, api, confirmAction, el, fmtTime, oneAtATime, startLoad } from "./api.js";

const list = { conversations: [], active: null };

export function conversationHref(id) {
  return `#chat/${encodeURIComponent(id)}`;
}

export async function loadConversations(active = list.active) {
  list.active = active;
  const newest = startLoad("conversations");
  try {
    const { conversations } = await api("/api/conversations");
    if (!newest()) return; // a rename or a new run listed them again meanwhile
    list.conversations = conversations;
    renderList();
  } catch (error) {
    if (newest()) $("#conversations").replaceChildren(el("li", { class: "error" }, error.message));
  }
}

export function markActive(id) {
  list.active = id;
  renderList();
}

function renderList() {
  const shown = list.conversations.find((c) => c.id === list.active);
  if (shown) $("#conversation-title").textContent = shown.title || "Untitled conversation";
  const items = list.conversations.map((c) => {
    const current = c.id === list.active;
    const title = c.title || "Untitled conversation";
    const open = el("a", { href: conversationHref(c.id), class: "open", "aria-current": current ? "page" : null, title }, title);
    const when = el("span", { class: "muted small when" }, fmtTime(c.updatedAt || c.createdAt));
    const rename = el("button", { type: "button", class: "icon", "aria-label": `Rename ${title}`, title: "Rename", onclick: () => startRename(item, c) }, "✎");
    const remove = el("button", { type: "button", class: "icon", "aria-label": `Delete ${title}`, title: "Delete", onclick: oneAtATime(() => deleteConversation(c)) }, "✕");
    const item = el("li", { class: `conversation${current ? " current" : ""}`, "data-id": c.id }, el("div", { class: "line" }, open, rename, remove), when);
    return item;
  });
  $("#conversations").replaceChildren(...(items.length ? items : [el("li", { class: "muted small" }, "No conversations yet.")]));
}

function startRename(item, conversation) {
  const input = el("input", { value: conversation.title || "", "aria-label": "New title", maxlength: "200", required: true });
  const form = el("form", { class: "rename", onsubmit: oneAtATime(async (event) => {
    event.preventDefault();
    const title = input.value.trim();
    if (!title) return;
    try {
      await api(`/api/conversations/${encodeURIComponent(conversation.id)}`, { method: "PATCH", body: { title } });
      if (conversation.id === list.active) $("#conversation-title").textContent = title;
      await loadConversations();
    } catch (error) {
      form.append(el("p", { class: "error", role: "alert" }, error.message));
    }
  }) }, input, el("button", { type: "submit" }, "Save"), el("button", { type: "button", onclick: () => renderList() }, "Cancel"));
  input.addEventListener("keydown", (e) => { if (e.key === "Escape") renderList(); });
  item.replaceChildren(form);
  input.focus();
  input.select();
}

async function deleteConversation(conversation) {
  const title = conversation.title || "this conversation";
  if (!(await confirmAction(`Delete “${title}” with all its messages? This cannot be undone.`, "Delete"))) return;
  try {
    await api(`/api/conversations/${encodeURIComponent(conversation.id)}`, { method: "DELETE" });
    if (conversation.id === list.active) location.hash = "#chat";
    await loadConversations();
  } catch (error) {
    $("#chat-error").textContent = error.message;
  }
}
