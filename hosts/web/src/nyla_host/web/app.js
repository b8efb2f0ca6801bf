// nyla's web page: plain JavaScript modules, no build step, no third-party assets. This one
// signs in and routes: #chat[/<conversationId>], #sources[?connected=…|?oauthError=…],
// #files, #inventory, #teams, #access, #mcp[?signedIn=…|?signInError=…].

import { loadAccess, wireAccess } from "./access.js";
import { $, api, oneAtATime, state, whenUnauthorized } from "./api.js";
import { resetChat, showChat, wireChat } from "./chat.js";
import { loadConnectors, readReturn, wireConnect } from "./connect.js";
import { loadMcp, wireMcp } from "./mcp.js";
import { loadFiles } from "./files.js";
import { loadInventory, pollJobs, stopJobs, wireInventory } from "./inventory.js";
import { loadSources, wireSources } from "./sources.js";
import { loadTeams, wireTeams } from "./teams.js";

const VIEWS = ["chat", "sources", "files", "inventory", "teams", "access", "mcp"];

async function signIn(token) {
  localStorage.setItem("nyla.token", token);
  try {
    state.me = await api("/api/me");
  } catch (error) {
    localStorage.removeItem("nyla.token");
    $("#signin-error").textContent = `Sign-in failed: ${error.message}`;
    return;
  }
  const role = { sysadmin: " · system admin", mandateAdmin: " · organisation admin" }[state.me.role] || "";
  $("#who").textContent = `${state.me.userId}${role} · ${state.me.timezone}`;
  $("#nav").hidden = false;
  $("#signout").hidden = false;
  $("#token").value = "";
  await loadConnectors().catch((error) => { $("#sources-error").textContent = error.message; });
  pollJobs();
  route();
}

function signOut() {
  localStorage.removeItem("nyla.token");
  state.me = null;
  stopJobs();
  resetChat();
  history.replaceState(null, "", "/");
  location.reload();
}

async function route() {
  if (!state.me) return;
  const [head, query = ""] = location.hash.slice(1).split("?");
  const [name, ...rest] = head.split("/");
  const view = VIEWS.includes(name) ? name : "chat";
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${view}`;
  for (const tab of document.querySelectorAll("#nav .tab")) {
    if (tab.dataset.view === view) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  if (!location.hash) history.replaceState(null, "", `#${view}`);
  if (view === "chat") return showChat(rest.length ? decodeURIComponent(rest.join("/")) : null);
  if (view === "sources") {
    await loadSources();
    if (query) readReturn(query);
  } else {
    $("#sources-message").hidden = true;
  }
  if (view === "files") loadFiles();
  if (view === "inventory") loadInventory();
  if (view === "teams") loadTeams().catch((error) => { $("#teams-error").textContent = error.message; });
  if (view === "access") loadAccess().catch((error) => { $("#access-error").textContent = error.message; });
  if (view === "mcp") loadMcp({ query }).catch((error) => { $("#mcp-error").textContent = error.message; });
}

whenUnauthorized(signOut);
wireChat();
wireConnect();
wireSources();
wireInventory();
wireTeams();
wireAccess();
wireMcp();
$("#signin-form").addEventListener("submit", oneAtATime((e) => { e.preventDefault(); return signIn($("#token").value.trim()); }));
$("#signout").addEventListener("click", signOut);
// the skip link moves the focus, not the address (the hash names the view)
$(".skip").addEventListener("click", (e) => { e.preventDefault(); $("#main").focus(); });
window.addEventListener("hashchange", route);

const saved = localStorage.getItem("nyla.token");
if (saved) signIn(saved);
