// MCP servers (the host's settings section "mcp"): the signed-in person's own servers and
// their organisation's, listed, added (the server is started once to list its tools) and
// removed; only an organisation admin changes the organisation's (the server decides).
// A server that signs in with OAuth offers "Sign in": the browser goes to its
// authorization server and comes back to #mcp?signedIn=<name> (or ?signInError=<text>).
// Below them, the apps the person connected to nyla's own MCP endpoint (apps.js).

import { $, api, el, oneAtATime, startLoad, state } from "./api.js";
import { loadApps, reportApps } from "./apps.js";

const BASE = "/api/settings/sections/mcp";

function signInCell(server, scope, signIns) {
  if (!server.oauth) return "";
  const mine = signIns[server.name] || { signedIn: false };
  if (!mine.signedIn) {
    return el("button", { type: "button", class: "link", "data-action": "sign-in", onclick: oneAtATime(() => signIn(scope, server.name)) }, "Sign in");
  }
  const expired = mine.expired && !mine.refreshable;
  return el("span", {}, expired ? "Sign-in expired · " : "Signed in · ",
    el("button", { type: "button", class: "link", "data-action": "sign-out", onclick: oneAtATime(() => signOut(scope, server.name)) }, "Sign out"));
}

function row(server, scope, mayRemove, signIns) {
  const how = server.transport === "stdio" ? [server.command, ...server.args].join(" ") : server.url;
  return el("tr", { "data-name": server.name, "data-scope": scope },
    el("td", {}, server.name),
    el("td", { class: "small" }, how),
    el("td", {}, `${server.tools.length} tools`),
    el("td", { class: "sign-in" }, signInCell(server, scope, signIns)),
    el("td", {}, mayRemove ? el("button", { type: "button", class: "link", "data-action": "remove", onclick: oneAtATime(() => remove(scope, server.name)) }, "Remove") : ""));
}

function fill(selector, rows, empty) {
  $(selector).replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: "5", class: "muted" }, empty))]));
}

/** `#mcp?signedIn=<name>` or `?signInError=<text>`: what the sign-in callback reports. */
function readReturn(query) {
  const params = new URLSearchParams(query);
  if (params.has("signInError")) report(new Error(`Sign-in failed: ${params.get("signInError")}`));
  else if (params.has("signedIn")) $("#mcp-done").textContent = `Signed in to ${params.get("signedIn")}.`;
  history.replaceState(null, "", "#mcp");
}

export async function loadMcp({ keepNotice = false, query = "" } = {}) {
  const newest = startLoad("mcp");
  $("#mcp-error").textContent = "";
  if (!keepNotice) $("#mcp-done").textContent = "";
  if (query) readReturn(query);
  loadApps({ keepNotice }).catch(reportApps);  // its own list: a servers' failure leaves it
  const admin = state.me.role !== "user";
  const mine = await api(`${BASE}/user`);
  const mySignIns = await api(`${BASE}/user/sign-in`);
  const org = state.me.mandateId ? await api(`${BASE}/mandate`) : [];
  const orgSignIns = state.me.mandateId ? await api(`${BASE}/mandate/sign-in`) : {};
  if (!newest()) return;
  fill("#mcp-mine tbody", mine.map((s) => row(s, "user", true, mySignIns)), "No servers of your own.");
  fill("#mcp-org tbody", org.map((s) => row(s, "mandate", admin, orgSignIns)), "No servers of your organisation.");
  const scope = $("#mcp-scope");
  const chosen = scope.value;
  scope.replaceChildren(el("option", { value: "user" }, "Only me"));
  if (admin && state.me.mandateId) scope.append(el("option", { value: "mandate" }, "Everyone in my organisation"));
  if (chosen === "mandate" && scope.length > 1) scope.value = chosen;
}

const add = oneAtATime(async (event) => {
  event.preventDefault();
  const scope = $("#mcp-scope").value;
  const where = $("#mcp-where").value.trim();
  const body = { name: $("#mcp-name").value.trim() };
  if (/^https?:\/\//.test(where)) {
    body.url = where;
    if ($("#mcp-oauth").checked) body.oauth = true;
  } else {
    const [command, ...args] = where.split(/\s+/).filter(Boolean);
    Object.assign(body, { command, args });
  }
  $("#mcp-add").disabled = true;
  $("#mcp-done").textContent = `Starting ${body.name} to list its tools…`;
  try {
    const server = await api(`${BASE}/${scope}`, { method: "POST", body });
    $("#mcp-done").textContent = server.oauth && !server.tools.length
      ? `${server.name} added; sign in to it to list its tools.`
      : `${server.name} added with ${server.tools.length} tools; the agent can use it as ${server.toolbox}.`;
    $("#mcp-form").reset();
  } catch (error) {
    $("#mcp-done").textContent = "";
    return report(error);
  } finally {
    $("#mcp-add").disabled = false;
  }
  loadMcp({ keepNotice: true }).catch(report);
});

async function remove(scope, name) {
  try {
    await api(`${BASE}/${scope}/${encodeURIComponent(name)}`, { method: "DELETE" });
    $("#mcp-done").textContent = `${name} removed.`;
  } catch (error) {
    return report(error);
  }
  loadMcp({ keepNotice: true }).catch(report);
}

async function signIn(scope, name) {
  try {
    const begun = await api(`${BASE}/${scope}/${encodeURIComponent(name)}/sign-in`, { method: "POST" });
    location.assign(begun.authorizationUrl);  // back at #mcp once the server signed you in
  } catch (error) {
    report(error);
  }
}

async function signOut(scope, name) {
  try {
    const done = await api(`${BASE}/${scope}/${encodeURIComponent(name)}/sign-in`, { method: "DELETE" });
    $("#mcp-done").textContent = `Signed out of ${name}${done.revoked ? " (its tokens revoked)" : ""}.`;
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
