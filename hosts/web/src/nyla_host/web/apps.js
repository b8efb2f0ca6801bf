// Connected apps (the MCP servers tab): the MCP clients the signed-in person allowed to use
// nyla's own MCP endpoint through OAuth, each with a Revoke that cuts it off at once. Every
// value shown is text (a client names itself at registration: its name is hostile input).

import { $, api, confirmAction, el, fmtTime, oneAtATime, startLoad } from "./api.js";

/** The address a person gives an MCP client to connect it to nyla. */
export function mcpUrl() {
  return `${location.origin}/mcp`;
}

function expiry(iso) {
  if (!iso) return "–";
  return new Date(iso) <= new Date() ? `Expired ${fmtTime(iso)}` : fmtTime(iso);
}

function row(grant) {
  const hosts = (grant.redirectHosts || []).join(", ") || "–";
  return el("tr", { "data-grant": grant.id },
    el("td", {}, el("span", { class: "app-name" }, grant.clientName), el("span", { class: "muted small app-id" }, grant.clientId)),
    el("td", { class: "small" }, hosts),
    el("td", {}, fmtTime(grant.createdAt)),
    el("td", {}, grant.lastUsedAt ? fmtTime(grant.lastUsedAt) : "Not yet"),
    el("td", {}, expiry(grant.expiresAt)),
    el("td", {}, el("button", { type: "button", class: "link", "data-action": "revoke", onclick: oneAtATime(() => revoke(grant)) }, "Revoke")));
}

function empty() {
  return [
    "No app is connected. To connect one, give it nyla's MCP address ",
    el("code", {}, mcpUrl()),
    ": it sends you to a page of nyla where you allow it, signed in as you are here.",
  ];
}

export async function loadApps({ keepNotice = false } = {}) {
  $("#apps-error").textContent = "";
  if (!keepNotice) $("#apps-done").textContent = "";
  const newest = startLoad("apps");
  const grants = await api("/api/oauth/grants");
  if (!newest()) return;
  $("#apps-table tbody").replaceChildren(...grants.map(row));
  $("#apps-table").closest(".scroll-x").hidden = !grants.length;
  $("#apps-empty").replaceChildren(...(grants.length ? [] : empty()));
  $("#apps-empty").hidden = Boolean(grants.length);
}

async function revoke(grant) {
  const sure = await confirmAction(
    `Revoke ${grant.clientName}? It loses access to nyla at once; to use it again, you allow it again.`, "Revoke");
  if (!sure) return;
  try {
    await api(`/api/oauth/grants/${encodeURIComponent(grant.id)}`, { method: "DELETE" });
    $("#apps-done").textContent = `${grant.clientName} revoked.`;
  } catch (error) {
    $("#apps-error").textContent = error.message;
    return;
  }
  loadApps({ keepNotice: true }).catch(reportApps);
}

export function reportApps(error) {
  $("#apps-error").textContent = error.message;
}
