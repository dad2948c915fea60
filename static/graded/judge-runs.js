// The campaign page's judge runs: while a run is active, read its progress every 2 s from the
// judge's API (GET /api/campaigns/{id}/judges/{j}/) and update the bar, the figures and the
// buttons in place; a finished run stops the polling.
(function () {
  "use strict";
  const PERIOD_MS = 2000;

  function figures(run) {
    const parts = [
      `${run.status_label} (version ${run.version})`,
      `${run.done} of ${run.pairs_total} pairs`,
      `${run.labels} labels` + (run.per_minute && run.requests ? `, ${run.per_minute} per minute` : ""),
      `${run.refusals} refusals`,
      `${run.errors} errors`,
    ];
    if (run.skipped) parts.push(`${run.skipped} not sent`);
    const totals = run.version_totals;
    if (totals && (totals.labels !== run.labels || totals.refusals !== run.refusals)) {
      parts.push(`version ${run.version} in all: ${totals.labels} labels, ${totals.refusals} refusals`);
    }
    if (run.tokens_in || run.cost) {
      parts.push(`${run.tokens_in} + ${run.tokens_out} tokens`, `this run's cost ${Number(run.cost).toFixed(4)}`);
    }
    if (run.last_error) parts.push(`last error: ${run.last_error}`);
    return parts;
  }

  function show(box, run) {
    const percent = run.pairs_total ? Math.round((100 * run.done) / run.pairs_total) : 100;
    const bar = box.querySelector("[data-run-bar]");
    bar.style.width = `${percent}%`;
    bar.parentElement.setAttribute("aria-valuenow", String(percent));
    const text = box.querySelector("[data-run-figures]");
    text.replaceChildren(
      ...figures(run).map((part) => {
        const span = document.createElement("span");
        span.textContent = part;
        return span;
      }),
    );
    const warning = box.querySelector("[data-run-warning]");
    if (warning) {
      warning.textContent = run.warning || "";
      warning.hidden = !run.warning;
    }
    const reasons = box.querySelector("[data-run-reasons]");
    if (reasons) {
      reasons.replaceChildren(
        ...(run.reasons || []).map((reason) => {
          const item = document.createElement("li");
          item.textContent = `${reason.count} ${reason.outcome === "skipped" ? "not sent" : "refused"}: ${reason.reason}`;
          return item;
        }),
      );
      reasons.hidden = !(run.reasons || []).length;
    }
    const start = box.querySelector("[data-run-start]");
    const cancel = box.querySelector("[data-run-cancel]");
    if (start) {
      start.disabled = run.active;
      if (run.active) start.textContent = run.cancel_requested ? "Cancelling…" : "Running…";
      else start.textContent = run.status === "done" ? "Run again" : "Resume run";
    }
    if (cancel) cancel.disabled = !run.active || run.cancel_requested;
    box.dataset.active = run.active ? "1" : "";
    box.dataset.status = run.status;
  }

  function poll(box) {
    fetch(box.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((response) => (response.ok ? response.json() : null))
      .then((judge) => {
        if (judge && judge.run) show(box, judge.run);
        const coverage = judge && document.querySelector(`[data-coverage="${judge.id}"]`);
        if (coverage) coverage.textContent = String(judge.coverage.labelled);
        const cost = judge && document.querySelector(`[data-total-cost="${judge.id}"]`);
        if (cost) cost.textContent = Number(judge.total_cost).toFixed(4);
        if (box.dataset.active) window.setTimeout(() => poll(box), PERIOD_MS);
      })
      .catch(() => window.setTimeout(() => poll(box), PERIOD_MS * 3));
  }

  // After an action on a judge the page opens at it (#judge-N): focus goes there too, so the
  // keyboard carries on from the judge, not from the top of the page.
  const target = window.location.hash.startsWith("#judge-") && document.getElementById(window.location.hash.slice(1));
  if (target) {
    target.scrollIntoView({ block: "start" });
    target.focus({ preventScroll: true });
  }

  document.querySelectorAll("[data-judge-run]").forEach((box) => {
    if (box.dataset.active) window.setTimeout(() => poll(box), PERIOD_MS);
  });
})();

// The add-judge form: a kind's own settings show only while that kind is chosen (each kind
// names its own fields, sampling.judge_kinds; all show without JS).
(function () {
  "use strict";
  const kind = document.getElementById("id_judge-kind");
  const declared = document.getElementById("judge-kind-fields");
  if (!kind || !declared) return;
  const OWN = JSON.parse(declared.textContent);
  const ALL = [...new Set(Object.values(OWN).flat())];
  function toggle() {
    const wanted = OWN[kind.value] || [];
    for (const name of ALL) {
      const input = document.getElementById(`id_judge-${name}`);
      if (input) input.closest("p").hidden = !wanted.includes(name);
    }
  }
  kind.addEventListener("change", toggle);
  toggle();
})();
