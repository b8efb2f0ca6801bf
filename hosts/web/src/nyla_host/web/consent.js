// The consent page of nyla's OAuth authorization server: the person signs in as on the main
// page (the same API token in localStorage), sees which application asks, where the answer
// goes and what it gets, and allows or denies. Both calls carry the bearer header, which no
// other site can send, so a forged page cannot decide for them.

import { $, api, el } from "./api.js";

const requestId = new URLSearchParams(location.search).get("request") || "";

function fail(message) {
  $("#consent-error").textContent = message;
}

async function show() {
  if (!localStorage.getItem("nyla.token")) {
    $("#consent-signin").hidden = false;
    return;
  }
  let ask;
  try {
    const me = await api("/api/me");
    $("#who").textContent = me.userId;
    ask = await api(`/api/oauth/requests/${encodeURIComponent(requestId)}`);
  } catch (error) {
    if (error.status === 401) {
      localStorage.removeItem("nyla.token");
      $("#consent-signin").hidden = false;
    }
    return fail(error.message);
  }
  $("#consent-signin").hidden = true;
  $("#consent-client").textContent = ask.clientName;
  $("#consent-name").textContent = ask.clientName;
  $("#consent-host").textContent = ask.redirectHost;
  $("#consent-redirect").textContent = ask.redirectUri;
  $("#consent-user").textContent = ask.userId;
  $("#consent-resource").textContent = ask.resource;
  $("#consent-grants").replaceChildren(...ask.grants.map((text) => el("li", {}, text)));
  $("#consent-ask").hidden = false;
  $("#consent-approve").focus();
}

async function decide(approve) {
  for (const button of document.querySelectorAll("#consent-ask button")) button.disabled = true;
  try {
    const answer = await api(`/api/oauth/requests/${encodeURIComponent(requestId)}`, { method: "POST", body: { approve } });
    $("#consent-ask").hidden = true;
    $("#consent-done").textContent = approve ? "Allowed. Returning to the application…" : "Denied. Returning to the application…";
    $("#consent-done").hidden = false;
    location.assign(answer.redirect);
  } catch (error) {
    fail(error.message);
  }
}

$("#consent-signin-form").addEventListener("submit", (e) => {
  e.preventDefault();
  localStorage.setItem("nyla.token", $("#consent-token").value.trim());
  $("#consent-token").value = "";
  fail("");
  show();
});
$("#consent-approve").addEventListener("click", () => decide(true));
$("#consent-deny").addEventListener("click", () => decide(false));
show();
