// MCP servers (the host's settings section "mcp"): the signed-in person's own servers and
// their organisation's, listed, added (the server is started once to list its tools) and
// removed; only an organisation admin changes the organisation's (the server decides).

import { $, api, el, state } from "./api.js";

const BASE = "/api/settings/sections/mcp";

function row(server, scope, mayRemove) {
  const how = server.transport === "stdio" ? [server.command, ...server.args].join(" ") : server.url;
  return el("tr", { "data-name": server.name, "data-scope": scope },
    el("td", {}, server.name),
    el("td", { class: "small" }, how),
    el("td", {}, `${server.tools.length} tools`),
    el("td", {}, mayRemove ? el("button", { type: "button", class: "link", onclick: () => remove(scope, server.name) }, "Remove") : ""));
}

function fill(selector, rows, empty) {
  $(selector).replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: "4", class: "muted" }, empty))]));
}

export async function loadMcp({ keepNotice = false } = {}) {
  $("#mcp-error").textContent = "";
  if (!keepNotice) $("#mcp-done").textContent = "";
  const admin = state.me.role !== "user";
  const mine = await api(`${BASE}/user`);
  fill("#mcp-mine tbody", mine.map((s) => row(s, "user", true)), "No servers of your own.");
  const org = state.me.mandateId ? await api(`${BASE}/mandate`) : [];
  fill("#mcp-org tbody", org.map((s) => row(s, "mandate", admin)), "No servers of your organisation.");
  const scope = $("#mcp-scope");
  scope.replaceChildren(el("option", { value: "user" }, "Only me"));
  if (admin && state.me.mandateId) scope.append(el("option", { value: "mandate" }, "Everyone in my organisation"));
}

async function add(event) {
  event.preventDefault();
  const scope = $("#mcp-scope").value;
  const where = $("#mcp-where").value.trim();
  const body = { name: $("#mcp-name").value.trim() };
  if (/^https?:\/\//.test(where)) body.url = where;
  else {
    const [command, ...args] = where.split(/\s+/).filter(Boolean);
    Object.assign(body, { command, args });
  }
  $("#mcp-add").disabled = true;
  $("#mcp-done").textContent = `Starting ${body.name} to list its tools…`;
  try {
    const server = await api(`${BASE}/${scope}`, { method: "POST", body });
    $("#mcp-done").textContent = `${server.name} added with ${server.tools.length} tools; the agent can use it as ${server.toolbox}.`;
    $("#mcp-form").reset();
  } catch (error) {
    $("#mcp-done").textContent = "";
    return report(error);
  } finally {
    $("#mcp-add").disabled = false;
  }
  loadMcp({ keepNotice: true }).catch(report);
}

async function remove(scope, name) {
  try {
    await api(`${BASE}/${scope}/${encodeURIComponent(name)}`, { method: "DELETE" });
    $("#mcp-done").textContent = `${name} removed.`;
  } catch (error) {
    return report(error);
  }
  loadMcp({ keepNotice: true }).catch(report);
}

function report(error) {
  $("#mcp-error").textContent = error.message;
}

export function wireMcp() {
  $("#mcp-form").addEventListener("submit", add);
}
