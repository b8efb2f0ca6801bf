// "Add a connection": a form generated from each connector's declared fields (GET
// /api/connectors), OAuth sign-in started here and returning to #sources, token paste,
// the server's reason shown beside the form when it refuses; and removing a connection.

import { $, api, confirmAction, el, oneAtATime, serviceLabel, startLoad, state } from "./api.js";
import { loadSources } from "./sources.js";

const INPUT_TYPES = { folder: "text", url: "url", text: "text", secret: "password", number: "number", boolean: "checkbox" };
const PLACEHOLDERS = { folder: "/home/me/Documents", url: "https://" };

export async function loadConnectors() {
  const newest = startLoad("connectors");
  const { connectors } = await api("/api/connectors");
  if (!newest()) return;
  state.connectors = connectors;
  const select = $("#new-service");
  const chosen = select.value;
  select.replaceChildren(...connectors.map((c) => el("option", { value: c.service }, c.label || c.service)));
  if (chosen && connectors.some((c) => c.service === chosen)) select.value = chosen;
  renderConnectForm();
}

function visibleFields(connector) {
  const sysadmin = state.me && state.me.role === "sysadmin";
  return (connector.fields || []).filter((f) => sysadmin || !f.serverOnly);
}

function fieldInput(field) {
  const id = `connect-${field.key}`;
  const kind = INPUT_TYPES[field.kind] ? field.kind : "text";
  const attrs = { id, name: field.key, type: INPUT_TYPES[kind], "data-kind": kind, required: field.required && kind !== "boolean" };
  if (kind === "secret") attrs.autocomplete = "off";
  if (PLACEHOLDERS[kind]) attrs.placeholder = PLACEHOLDERS[kind];
  if (field.help) attrs["aria-describedby"] = `${id}-help`;
  const input = el("input", attrs);
  if (kind === "boolean") input.checked = Boolean(field.default);
  else if (field.default !== undefined && field.default !== null && kind !== "secret") input.value = String(field.default);
  const label = `${field.label || field.key}${field.required ? "" : " (optional)"}`;
  return el("div", { class: `field${kind === "boolean" ? " check" : ""}` },
    el("label", { for: id }, label, field.serverOnly ? el("span", { class: "badge", title: "Only a system administrator may set this" }, "admin") : null),
    input,
    field.help ? el("p", { id: `${id}-help`, class: "muted small help" }, field.help[0].toUpperCase() + field.help.slice(1)) : null);
}

function renderConnectForm() {
  const connector = state.connectors.find((c) => c.service === $("#new-service").value);
  $("#connect-error").textContent = "";
  if (!connector) return $("#connect-fields").replaceChildren();
  const name = connector.label || connector.service;
  const fields = [el("div", { class: "field" },
    el("label", { for: "connect-label" }, "Name (optional)"),
    el("input", { id: "connect-label", name: "label", placeholder: name, maxlength: "200" }))];
  fields.push(...visibleFields(connector).map(fieldInput));
  if (connector.auth === "token") {
    fields.push(fieldInput({ key: "token", label: `${name} API token`, kind: "secret", required: true, help: `Create a personal API token in ${name} and paste it here; it is stored encrypted.` }));
  }
  $("#connect-fields").replaceChildren(...fields);
  const actions = [];
  const reserved = (connector.fields || []).filter((f) => f.serverOnly && f.required && !visibleFields(connector).includes(f));
  if (reserved.length) {
    // the server would refuse it: say so instead of offering a form that cannot succeed
    $("#connect-actions").replaceChildren(el("p", { class: "muted" }, `Only a system administrator can connect ${name}: its ${reserved.map((f) => f.label.toLowerCase()).join(", ")} points the server at a place of their choosing.`));
    return;
  }
  if (connector.auth === "oauth") {
    const off = connector.oauthConfigured === false;
    actions.push(el("button", { type: "submit", class: "primary", id: "connect-submit", disabled: off }, `Sign in with ${name}`));
    if (connector.adminConsent) {
      actions.push(el("button", { type: "submit", id: "connect-admin", value: "admin", disabled: off, title: "For an administrator of your organisation: approve the app for everyone once" }, "Grant admin consent"));
    }
    if (off) actions.push(el("p", { class: "muted small" }, `Signing in with ${name} needs the app's client id on the server; ask your administrator.`));
  } else {
    actions.push(el("button", { type: "submit", class: "primary", id: "connect-submit" }, "Connect"));
  }
  $("#connect-actions").replaceChildren(...actions);
}

function formValues(connector) {
  const settings = {};
  const missing = [];
  let token;
  for (const input of $("#connect-fields").querySelectorAll("input[data-kind]")) {
    const field = (connector.fields || []).find((f) => f.key === input.name);
    const kind = input.dataset.kind;
    const value = kind === "boolean" ? input.checked : input.value.trim();
    if (input.required && value === "") missing.push(input.closest(".field").querySelector("label").firstChild.textContent);
    if (input.name === "token" && !field) token = value || undefined;
    else if (value !== "") settings[input.name] = kind === "number" ? Number(value) : value;
  }
  return { settings, missing, token, label: $("#connect-label").value.trim() };
}

const submitConnection = oneAtATime(async (event) => {
  event.preventDefault();
  const connector = state.connectors.find((c) => c.service === $("#new-service").value);
  if (!connector) return;
  const { settings, missing, token, label } = formValues(connector);
  if (missing.length) {
    $("#connect-error").textContent = `Please fill in: ${missing.join(", ")}.`;
    return;
  }
  const button = $("#connect-submit");
  const caption = button.textContent;
  button.disabled = true;
  button.textContent = connector.auth === "oauth" ? "Redirecting…" : "Checking…";
  $("#connect-error").textContent = "";
  try {
    if (connector.auth === "oauth") return await startOauth(connector, label, settings, event.submitter?.value === "admin");
    const body = { service: connector.service, settings };
    if (label) body.label = label;
    if (token) body.token = token;
    const connection = await api("/api/connections", { method: "POST", body });
    renderConnectForm();
    showMessage(`Connected ${connection.label || label || connector.label}. Switch 🧠 on where you want it indexed.`);
    await loadSources();
  } catch (error) {
    $("#connect-error").textContent = error.message; // the values stay in the form
  } finally {
    if (button.isConnected) { button.disabled = false; button.textContent = caption; }
  }
});

async function startOauth(connector, label, settings, adminConsent) {
  const body = { settings };
  if (label) body.label = label;
  const started = await api(`/api/connections/oauth/${encodeURIComponent(connector.service)}/start`, { method: "POST", body });
  const target = adminConsent ? started.adminConsentUrl : started.authorizeUrl;
  if (!/^https?:\/\//i.test(target || "")) throw new Error("the server gave no sign-in address");
  location.assign(target); // the provider sends the browser back to #sources
}

export function showMessage(text, error = false) {
  const box = $("#sources-message");
  box.textContent = text;
  box.classList.toggle("error", error);
  box.hidden = false;
}

/** `#sources?connected=<id>` or `?oauthError=<text>`: what the OAuth callback reports. */
export function readReturn(query) {
  const params = new URLSearchParams(query);
  if (params.has("oauthError")) showMessage(`Sign-in failed: ${params.get("oauthError")}`, true);
  else if (params.get("adminConsent") === "granted") showMessage("Your organisation approved the app. Now sign in to connect your account.");
  else if (params.has("connected")) {
    const connection = state.connections.find((c) => c.id === params.get("connected"));
    showMessage(`Connected${connection ? ` ${connection.label}` : ""}. Switch 🧠 on where you want it indexed.`);
  }
  history.replaceState(null, "", "#sources");
}

export async function removeConnection(connection) {
  const name = connection.label || serviceLabel(connection.service);
  const ok = await confirmAction(`Remove ${name}? Everything indexed from it is deleted from the knowledge store and its syncs stop. The data at ${serviceLabel(connection.service)} itself stays untouched.`, "Remove");
  if (!ok) return;
  try {
    await api(`/api/connections/${connection.id}`, { method: "DELETE" });
    showMessage(`Removed ${name}.`);
  } catch (error) {
    $("#sources-error").textContent = error.message;
  }
  await loadSources();
}

export function wireConnect() {
  $("#new-service").addEventListener("change", renderConnectForm);
  $("#add-connection").addEventListener("submit", submitConnection);
}
