// Service access: what the signed-in person may use (the agent, the knowledge store, each
// connector) and, for a system or organisation admin, the rules that decide it — list, grant,
// revoke, remove (GET/PUT/DELETE /api/access/rules; the server decides who may change what).

import { $, api, el, oneAtATime, permissionText, startLoad, state } from "./api.js";

const KINDS = { user: "User", mandate: "Organisation", role: "Role" };
const ROLES = { user: "users", mandateAdmin: "organisation admins", sysadmin: "system admins" };

export async function loadAccess({ keepNotice = false } = {}) {
  $("#access-error").textContent = "";
  if (!keepNotice) $("#access-done").textContent = "";
  const newest = startLoad("access");
  const me = await api("/api/access/me");
  if (!newest()) return;
  state.permissions = me.permissions.map((p) => p.permission);
  $("#access-mine").replaceChildren(...me.permissions.map((p) => el("li", { "data-permission": p.permission, "data-allowed": String(p.allowed) },
    el("span", { class: p.allowed ? "yes" : "no" }, p.allowed ? "✓ " : "✗ "),
    `You ${p.allowed ? "may" : "may not"} ${permissionText(p.permission)}`,
    el("span", { class: "muted small" }, ` (${p.permission})`))));
  const admin = state.me.role !== "user";
  $("#access-admin").hidden = !admin;
  $("#access-not-admin").hidden = admin;
  if (!admin) return;
  $("#access-permission").replaceChildren(...state.permissions.map((p) => el("option", { value: p }, `${permissionText(p)} (${p})`)));
  const kinds = state.me.role === "sysadmin" ? Object.keys(KINDS) : ["mandate"];
  $("#access-kind").replaceChildren(...kinds.map((k) => el("option", { value: k }, KINDS[k])));
  if (state.me.role !== "sysadmin") $("#access-subject").value = state.me.mandateId || "";
  const { rules } = await api("/api/access/rules");
  if (newest()) showRules(rules);
}

function showRules(rules) {
  const rows = rules.map((r) => el("tr", { "data-kind": r.kind, "data-subject": r.subject, "data-permission": r.permission },
    el("td", {}, `${KINDS[r.kind]} ${r.kind === "role" ? ROLES[r.subject] || r.subject : r.subject}`),
    el("td", {}, permissionText(r.permission), el("span", { class: "muted small" }, ` (${r.permission})`)),
    el("td", { class: r.allowed ? "yes" : "no" }, r.allowed ? "may" : "may not"),
    el("td", {}, el("button", { type: "button", class: "link", onclick: oneAtATime(() => removeRule(r)) }, "Remove"))));
  $("#access-rules tbody").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: "4", class: "muted" }, "No rules: everyone may use every service."))]));
}

const saveRule = oneAtATime(async (event) => {
  event.preventDefault();
  const allowed = event.submitter?.value !== "revoke";
  const body = { kind: $("#access-kind").value, subject: $("#access-subject").value.trim(), permission: $("#access-permission").value, allowed };
  if (!body.subject) return report(new Error("Name the user, organisation or role the rule is for."));
  try {
    const rule = await api("/api/access/rules", { method: "PUT", body });
    $("#access-done").textContent = `${KINDS[rule.kind]} ${rule.subject} ${rule.allowed ? "may" : "may not"} ${permissionText(rule.permission)} now.`;
  } catch (error) {
    return report(error);
  }
  loadAccess({ keepNotice: true }).catch(report);
});

async function removeRule(rule) {
  const query = new URLSearchParams({ kind: rule.kind, subject: rule.subject, permission: rule.permission });
  try {
    await api(`/api/access/rules?${query}`, { method: "DELETE" });
    $("#access-done").textContent = `Rule removed: ${KINDS[rule.kind]} ${rule.subject} follows the broader rule again for ${rule.permission}.`;
  } catch (error) {
    return report(error);
  }
  loadAccess({ keepNotice: true }).catch(report);
}

function report(error) {
  $("#access-error").textContent = error.message;
}

export function wireAccess() {
  $("#access-form").addEventListener("submit", saveRule);
}
