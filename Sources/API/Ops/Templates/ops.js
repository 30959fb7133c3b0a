// CarbScan ops: live numbers without reloading, select-all checkboxes, and confirmations. No framework, no build.
"use strict";
(function () {
  const samples = []; // {at, queues: {name: {succeededTotal, failedTotal}}} of the last minute

  function formatSeconds(seconds) {
    if (seconds < 1) return "0 s";
    if (seconds < 120) return Math.round(seconds) + " s";
    if (seconds < 7200) return Math.round(seconds / 60) + " min";
    return Math.round(seconds / 3600) + " h";
  }

  function perMinute(name, field, now) {
    const first = samples.find((s) => s.queues[name] !== undefined);
    if (!first || now.at - first.at < 1000) return "…";
    const delta = now.queues[name][field] - first.queues[name][field];
    return String(Math.max(0, Math.round((delta * 60000) / (now.at - first.at))));
  }

  function apply(data) {
    const now = { at: data.at, queues: {} };
    data.queues.forEach((q) => { now.queues[q.name] = { succeededTotal: q.succeededTotal, failedTotal: q.failedTotal }; });
    samples.push(now);
    while (samples.length > 1 && now.at - samples[0].at > 60000) samples.shift();
    const totals = {};
    data.queues.forEach((q) => {
      ["queued", "running", "scheduled", "retrying", "dead", "succeededTotal", "failedTotal"].forEach((k) => { totals[k] = (totals[k] || 0) + q[k]; });
      const row = document.querySelector('tr[data-queue="' + CSS.escape(q.name) + '"]');
      if (!row) return;
      const set = (field, text) => { const cell = row.querySelector('[data-live="' + field + '"]'); if (cell) cell.textContent = text; };
      ["queued", "running", "scheduled", "retrying", "dead"].forEach((k) => set(k, String(q[k])));
      set("permits", q.permits);
      set("latency", formatSeconds(q.latencySeconds));
      set("donePerMinute", perMinute(q.name, "succeededTotal", now));
      set("failedPerMinute", perMinute(q.name, "failedTotal", now));
      const badge = row.querySelector('[data-live="paused"]');
      if (badge) badge.hidden = !q.paused;
      row.classList.toggle("paused", q.paused);
    });
    document.querySelectorAll("[data-live-total]").forEach((el) => {
      const value = totals[el.dataset.liveTotal];
      if (value !== undefined) el.textContent = String(value);
    });
    const status = document.getElementById("live-status");
    if (status) status.textContent = "Live · updated " + new Date(data.at).toLocaleTimeString();
  }

  function poll() {
    fetch("/ops/live.json", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((response) => { if (!response.ok) throw new Error(response.status); return response.json(); })
      .then(apply)
      .catch(() => { const status = document.getElementById("live-status"); if (status) status.textContent = "Live updates paused (no answer)"; })
      .finally(() => setTimeout(poll, 2000));
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (document.getElementById("queue-table")) poll();
    document.querySelectorAll("[data-select-all]").forEach((box) => {
      box.addEventListener("change", () => {
        box.closest("form").querySelectorAll('input[name="id"]').forEach((item) => { item.checked = box.checked; });
      });
    });
    document.querySelectorAll("[data-confirm]").forEach((button) => {
      button.addEventListener("click", (event) => { if (!window.confirm(button.dataset.confirm)) event.preventDefault(); });
    });
  });
})();
