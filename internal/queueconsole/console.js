// The queue console's actions on archived tasks: each sends the admin
// token typed on the page as a bearer token, then reloads the list.
"use strict";
document.addEventListener("click", async (ev) => {
  const button = ev.target.closest("button[data-action]");
  if (!button) return;
  const row = button.closest("tr[data-key]");
  const queue = button.closest("table[data-queue]").dataset.queue;
  const token = document.getElementById("admin-token").value;
  const result = document.getElementById("action-result");
  const url = "/queues/" + encodeURIComponent(queue) + "/archived/" + row.dataset.key + "/" + button.dataset.action;
  const resp = await fetch(url, { method: "POST", headers: { Authorization: "Bearer " + token } });
  if (resp.ok) {
    location.reload();
    return;
  }
  const body = await resp.json().catch(() => ({}));
  result.textContent = resp.status + ": " + (body.error?.message ?? "failed");
});
