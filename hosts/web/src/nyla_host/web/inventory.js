// "What is indexed": the inventory per level with the partial banner, and the running-jobs
// badge in the corner.

import { $, api, el, fmtBytes, fmtTime, startLoad, state } from "./api.js";
import { openSettings } from "./sources.js";

const LEVELS = { me: "Mine", mandate: "My organisation", platform: "Platform" };
const jobs = { timer: null };
const SCOPES = { personal: "Only the owner", mandate: "Organisation", platform: "Everyone" };
const owner = (name) => (name ? String(name).replace(/^(personal|mandate):/, "") : "–");

export async function loadInventory(level = "me") {
  const levels = ["me"];
  if (state.me.role !== "user") levels.push("mandate");
  if (state.me.role === "sysadmin") levels.push("platform");
  $("#levels").replaceChildren(...levels.map((name) => el("button", { type: "button", class: "tab", "aria-pressed": String(name === level), onclick: () => loadInventory(name) }, LEVELS[name])));
  const newest = startLoad("inventory");
  const inventory = await api(`/api/rag/inventory/${level}`);
  if (!newest()) return; // another level was chosen meanwhile
  const rows = inventory.rows.map((r) => el("tr", {}, el("td", {}, SCOPES[r.scope] || r.scope), el("td", {}, owner(r.owner)), el("td", {}, String(r.files)), el("td", {}, String(r.failedFiles)), el("td", {}, String(r.chunks)), el("td", {}, fmtBytes(r.bytes)), el("td", {}, fmtTime(r.lastIndexed))));
  $("#inventory-table tbody").replaceChildren(...rows);
  const t = inventory.totals;
  $("#inventory-table tfoot").replaceChildren(el("tr", {}, el("td", {}, "Total"), el("td", {}), el("td", { class: "total-files" }, String(t.files)), el("td", {}, String(t.failedFiles)), el("td", {}, String(t.chunks)), el("td", {}, fmtBytes(t.bytes)), el("td", {}, fmtTime(t.lastIndexed))));
  $("#partial").replaceChildren(...inventory.partial.map((p) => el("div", { class: "banner", role: "alert" },
    el("span", {}, `Partly indexed: ${p.label || "a data source"} stopped at a limit (${p.itemsIndexed} items, ${fmtBytes(p.bytesIndexed)}).`),
    el("button", { type: "button", onclick: () => openSettings(p.dataSourceId) }, "Adjust limit"))));
}

export async function pollJobs() {
  clearTimeout(jobs.timer);
  if (!state.me) return;
  const newest = startLoad("jobs"); // a later call takes over: one polling loop at a time
  try {
    const { jobs: running } = await api("/api/rag/inventory/jobs");
    const badge = $("#jobs-badge");
    badge.hidden = running.length === 0;
    badge.textContent = running.length === 1
      ? `Indexing: ${running[0].message || running[0].kind} (${running[0].progress}${running[0].total ? ` of ${running[0].total}` : ""})`
      : `${running.length} indexing jobs running`;
    if (Number(badge.dataset.count || 0) > 0 && running.length === 0 && !$("#view-inventory").hidden) loadInventory();
    badge.dataset.count = String(running.length);
  } catch (error) { /* the next poll tries again */ }
  if (newest()) jobs.timer = setTimeout(pollJobs, 2000);
}

export function stopJobs() {
  clearTimeout(jobs.timer);
}

export function wireInventory() {
  $("#settings-modal").addEventListener("close", () => { if (!$("#view-inventory").hidden) loadInventory(); });
}
