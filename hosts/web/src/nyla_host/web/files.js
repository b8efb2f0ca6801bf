// "My files": the person's uploaded and generated files; a download asks the server for a
// short-lived signed link (the API token never goes into a URL) and opens it.

import { $, api, confirmAction, download, el, fmtBytes, fmtTime, oneAtATime, startLoad } from "./api.js";

export async function loadFiles() {
  $("#files-error").textContent = "";
  const newest = startLoad("files");
  try {
    const { files } = await api("/api/files");
    if (!newest()) return;
    const rows = files.map((file) => el("tr", { "data-id": file.id },
      el("td", { class: "name" }, file.name),
      el("td", {}, fmtBytes(file.size)),
      el("td", {}, fmtTime(file.createdAt)),
      el("td", { class: "actions" },
        el("button", { type: "button", class: "download", "aria-label": `Download ${file.name}`, onclick: () => fetchFile(file) }, "Download"),
        el("button", { type: "button", "aria-label": `Delete ${file.name}`, onclick: oneAtATime(() => deleteFile(file)) }, "Delete"))));
    $("#files-table tbody").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: "4", class: "muted" }, "No files yet: attach one in the chat."))]));
  } catch (error) {
    if (newest()) $("#files-error").textContent = error.message;
  }
}

export async function fetchFile(file) {
  try {
    const { url } = await api(`/api/files/${encodeURIComponent(file.id)}/link`, { method: "POST" });
    download(url, file.name);
  } catch (error) {
    $("#files-error").textContent = `${file.name}: ${error.message}`;
  }
}

async function deleteFile(file) {
  if (!(await confirmAction(`Delete ${file.name}? This cannot be undone.`, "Delete"))) return;
  try {
    await api(`/api/files/${encodeURIComponent(file.id)}`, { method: "DELETE" });
  } catch (error) {
    $("#files-error").textContent = error.message;
  }
  await loadFiles();
}
