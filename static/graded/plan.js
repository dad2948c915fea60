// Campaign page, graded campaigns: "Plan the budget" replays campaigns on the uploaded runs
// (POST .../plan/) and shows, per strategy and budget, the expected error and interval width,
// and which strategy needs the least budget, in plain words (the papers in tooltips).
(function () {
  "use strict";

  const panel = document.getElementById("plan");
  if (!panel) return;
  const button = panel.querySelector("button");
  const status = panel.querySelector(".plan-status");
  const output = panel.querySelector(".plan-output");

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : panel.dataset.csrf;
  }

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  const fixed = (value, digits) => (value === null || value === undefined ? "—" : Number(value).toFixed(digits));

  function render(plan) {
    output.replaceChildren();
    const advice = document.createElement("p");
    advice.className = "notice ok plan-advice";
    advice.textContent = plan.recommendation.text;
    advice.title = plan.recommendation.paper;
    output.append(advice);

    const scope = document.createElement("p");
    scope.className = "small plan-scope";
    scope.textContent = "Planned for " + plan.planned_for + ": " + plan.systems.join(" − ") + " (" + plan.metric + ").";
    output.append(scope);

    const table = document.createElement("table");
    table.className = "plan-table";
    const head = document.createElement("tr");
    for (const title of ["Strategy", "Budget (judgments)", "Typical error (RMSE)", "95 % interval width", "Interval held the truth", "Topics touched"]) {
      const th = document.createElement("th");
      th.textContent = title;
      head.append(th);
    }
    table.append(head);
    for (const row of plan.rows) {
      const words = plan.strategies[row.strategy];
      const tr = document.createElement("tr");
      tr.dataset.strategy = row.strategy;
      const name = cell(words.label);
      name.title = words.help + " (" + words.paper + ")";
      tr.append(name, cell(fixed(row.budget, 0), "num"), cell(fixed(row.rmse, 3), "num"),
        cell(fixed(row.mean_width, 3), "num"),
        cell(row.coverage === null ? "—" : Math.round(100 * row.coverage) + " %", "num"),
        cell(fixed(row.topics_judged, 1), "num"));
      table.append(tr);
    }
    const scroll = document.createElement("div");
    scroll.className = "table-scroll";
    scroll.append(table);
    output.append(scroll);

    const needs = document.createElement("p");
    needs.className = "small muted";
    const parts = Object.entries(plan.budget_for_width.budgets).map(([strategy, budget]) =>
      plan.strategies[strategy].label + ": " + (budget === null ? "—" : Math.round(budget)));
    needs.textContent = "Judgments needed for an interval " + fixed(plan.budget_for_width.width, 3) +
      " wide (what random topics give at " + plan.budget_for_width.at + "): " + parts.join(" · ") + ". " +
      plan.repetitions + " replayed campaigns per strategy; " + plan.assumption + ".";
    output.append(needs);

    if (plan.unplanned.length) {
      const list = document.createElement("ul");
      list.className = "small muted plan-unplanned";
      for (const note of plan.unplanned) {
        const item = document.createElement("li");
        item.textContent = note + ".";
        list.append(item);
      }
      output.append(list);
    }
  }

  button.addEventListener("click", async () => {
    button.disabled = true;
    status.hidden = false;
    status.textContent = "Replaying campaigns on your runs…";
    try {
      const response = await fetch(panel.dataset.url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Accept": "application/json", "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: "{}",
      });
      const data = await response.json().catch(() => null);
      if (response.status !== 200 || !data) {
        status.textContent = "Could not plan: " + ((data && data.detail) || "the server answered " + response.status) + ".";
        return;
      }
      status.hidden = true;
      render(data);
    } catch (error) {
      status.textContent = "Could not reach the server.";
    } finally {
      button.disabled = false;
    }
  });
})();
