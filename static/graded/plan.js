// Campaign page, graded campaigns: "Plan the budget" replays campaigns on the uploaded runs
// (POST .../plan/) and leads with the answer in one sentence, then a chart of each strategy's
// typical error (with the replays' noise as a band) against the budget, the campaign's budget
// marked; the table of every figure and the notes on its empty cells are folded below.
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
  // One colour per strategy, in the planner's order (simplest first).
  const COLOURS = ["#6b7280", "#b45309", "#2563eb", "#059669", "#9333ea"];

  /** Typical error against budget, one line per strategy with a band of 2 Monte-Carlo
      standard errors (what another set of replays could move it by); the budget the advice is
      for marked. Budgets are spaced evenly (a quarter, half, once, twice: a log axis). */
  function errorChart(plan) {
    const { svg, titled, scale, ticks, extent, axes } = window.Charts;
    const figure = document.createElement("figure");
    figure.className = "plan-chart";
    const width = 560;
    const root = svg("svg", { viewBox: "0 0 " + width + " 260", class: "chart fits", role: "img",
      "aria-label": "Typical error against budget for each strategy; the advice is for " + plan.budget + " judgments" });
    const box = { left: 62, right: width - 16, top: 12, bottom: 212 };
    const budgets = [...new Set(plan.rows.map((row) => row.budget))].sort((a, b) => a - b);
    // A log axis: a quarter, half, once and twice the budget sit evenly apart.
    const position = new Map(budgets.map((budget) => [budget, Math.log(budget)]));
    const logs = [...position.values()];
    const x = scale(Math.min(...logs), Math.max(...logs) + (logs.length > 1 ? 0 : 1), box.left + 20, box.right - 20);
    const known = plan.rows.filter((row) => row.rmse !== null);
    const spread = (row) => 2 * (row.rmse_se || 0);
    const yDomain = extent(known.flatMap((row) => [row.rmse - spread(row), row.rmse + spread(row)]), true);
    const y = scale(yDomain[0], yDomain[1], box.bottom, box.top);
    axes(root, (value) => x(value), y, box, [], ticks(yDomain[0], yDomain[1], 5), { x: "budget (judgments)", y: "typical error (RMSE)" });
    for (const budget of budgets) {
      root.append(svg("text", { x: x(position.get(budget)), y: box.bottom + 17, class: "tick", "text-anchor": "middle", text: String(budget) }));
    }
    if (position.has(plan.budget)) {
      const at = x(position.get(plan.budget));
      // Where the plan stops at the pool (the budget is larger), the line says so.
      const words = plan.campaign_budget !== null && plan.campaign_budget > plan.budget
        ? "the pool's size (" + plan.budget + ")" : "your budget";
      const right = at > (box.left + box.right) / 2;
      root.append(svg("line", { x1: at, x2: at, y1: box.top, y2: box.bottom, class: "budget-line" }));
      root.append(svg("text", { x: right ? at - 4 : at + 4, y: box.top + 10, "text-anchor": right ? "end" : "start", class: "tick", text: words }));
    }
    const legend = document.createElement("div");
    legend.className = "legend";
    Object.keys(plan.strategies).forEach((strategy, index) => {
      const rows = known.filter((row) => row.strategy === strategy).sort((a, b) => a.budget - b.budget);
      if (!rows.length) return;
      const colour = COLOURS[index % COLOURS.length];
      const words = plan.strategies[strategy].label;
      const group = svg("g", { class: "series", "data-strategy": strategy });
      const band = rows.map((row) => x(position.get(row.budget)) + "," + y(row.rmse + spread(row)))
        .concat(rows.slice().reverse().map((row) => x(position.get(row.budget)) + "," + y(Math.max(yDomain[0], row.rmse - spread(row)))));
      group.append(svg("polygon", { points: band.join(" "), fill: colour, opacity: 0.22 }));
      group.append(svg("polyline", { points: rows.map((row) => x(position.get(row.budget)) + "," + y(row.rmse)).join(" "), fill: "none", stroke: colour, "stroke-width": 2 }));
      for (const row of rows) {
        const dot = svg("circle", { cx: x(position.get(row.budget)), cy: y(row.rmse), r: 3.2, fill: colour });
        group.append(titled(dot, words + " at " + row.budget + " judgments: typical error " + fixed(row.rmse, 3) + " (± " + fixed(spread(row), 3) + " from the replays' noise)"));
      }
      root.append(group);
      const item = document.createElement("span");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = colour;
      item.append(swatch, words);
      legend.append(item);
    });
    root.dataset.series = String(root.querySelectorAll("g.series").length);
    const caption = document.createElement("figcaption");
    caption.className = "small muted";
    caption.textContent = "Lower is better; budgets on a log scale. Bands: what another " + plan.repetitions + " replays could move each line by (2 standard errors). The advice calls two strategies tied when their errors differ by less than 2 of their combined standard errors.";
    figure.append(root, legend, caption);
    return figure;
  }

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
    output.append(errorChart(plan));

    const details = document.createElement("details");
    details.className = "plan-details";
    const summary = document.createElement("summary");
    summary.textContent = "Every figure of the replays" + (plan.unplanned.length ? ", and why some cells are empty" : "");
    details.append(summary);

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
    details.append(scroll);

    const needs = document.createElement("p");
    needs.className = "small muted";
    const below = plan.budget_for_width.fewer_than_smallest || [];
    const parts = Object.entries(plan.budget_for_width.budgets).map(([strategy, budget]) =>
      plan.strategies[strategy].label + ": " +
      (below.includes(strategy) ? "fewer than " + plan.budget_for_width.smallest + " (the smallest budget replayed)"
        : budget === null ? "—" : Math.round(budget)));
    needs.textContent = "Judgments needed for an interval " + fixed(plan.budget_for_width.width, 3) +
      " wide (what random topics give at " + plan.budget_for_width.at + "): " + parts.join(" · ") + ". " +
      plan.repetitions + " replayed campaigns per strategy; " + plan.assumption + ".";
    details.append(needs);

    if (plan.unplanned.length) {
      const list = document.createElement("ul");
      list.className = "small muted plan-unplanned";
      for (const note of plan.unplanned) {
        const item = document.createElement("li");
        item.textContent = note + ".";
        list.append(item);
      }
      details.append(list);
    }
    output.append(details);
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
