/* The coordinator's live dashboard: polls the REST API and redraws tables and inline SVG
   charts in place. No libraries, no build step; every number comes from the API as is. */
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("dashboard-config").textContent);
  const COLOURS = ["#1f5fa8", "#c2410c", "#1c7c45", "#7c3aed", "#b3261e", "#0e7490", "#a16207", "#be185d"];
  const METRIC_ORDER = ["DCG", "ERR", "nDCG"];

  const state = {
    estimates: null,
    history: [],
    historyKey: null,
    metric: null, // the metric the history chart shows
    systems: [], // system names in API order: colours stay stable
    hidden: null, // systems the history chart leaves out (null until its first drawing)
  };
  // Beyond this many series shown, bands of every series would hide each other: error bars only.
  const MAX_BANDS_SHOWN = 2;
  // The estimates' and the arrivals' tables mark a point estimate beyond its (cut) interval.
  const OUTSIDE_NOTE = "† The estimate lies outside its interval: the interval is cut to the values the metric can take, and an unbiased estimate from few draws can fall beyond them (it moves inside as draws arrive).";

  const { fmt, fmtInterval, decimalsFor, fixed, fixedInterval, percent, el, svg, titled, scale, ticks, extent, axes, clear, getJson, csrfToken } =
    window.Charts;

  function metricFamily(name) {
    return String(name).split("@")[0];
  }

  function colourOf(system) {
    let index = state.systems.indexOf(system);
    if (index < 0) {
      state.systems.push(system);
      index = state.systems.length - 1;
    }
    return COLOURS[index % COLOURS.length];
  }

  // ---------- budget gauge ----------

  function drawGauge(progress) {
    const root = document.getElementById("gauge");
    clear(root);
    const fraction = progress.budget > 0 ? Math.min(1, Math.max(0, progress.spent / progress.budget)) : 0;
    const cx = 100;
    const cy = 100;
    const r = 80;
    const point = (f) => [cx - r * Math.cos(Math.PI * f), cy - r * Math.sin(Math.PI * f)];
    const arc = (f0, f1) => {
      const [x0, y0] = point(f0);
      const [x1, y1] = point(f1);
      return "M " + x0 + " " + y0 + " A " + r + " " + r + " 0 0 1 " + x1 + " " + y1;
    };
    const tone = fraction >= 1 ? "var(--bad)" : fraction >= 0.85 ? "var(--warn)" : "var(--ok)";
    root.append(svg("path", { d: arc(0, 1), class: "gauge-track" }));
    if (fraction > 0) root.append(svg("path", { d: arc(0, Math.max(fraction, 0.004)), class: "gauge-fill", stroke: tone }));
    root.append(svg("text", { x: cx, y: cy - 14, "text-anchor": "middle", class: "gauge-value", text: percent(fraction) }));
    root.append(svg("text", { x: cx, y: cy + 4, "text-anchor": "middle", class: "gauge-caption", text: "of the budget spent" }));
    // role=img takes no aria-valuenow: the value is in the name.
    root.setAttribute("aria-label", "Budget spent: " + percent(fraction));
    root.dataset.fraction = String(fraction);
  }

  function showProgress(progress) {
    drawGauge(progress);
    document.getElementById("stat-spent").textContent = fmt(progress.spent);
    document.getElementById("stat-budget").textContent = fmt(progress.budget);
    document.getElementById("stat-judgments").textContent = String(progress.judgments);
    const badge = document.getElementById("status-badge");
    badge.className = "badge " + progress.state;
    badge.textContent = progress.state_label;
    const notice = document.getElementById("state-notice");
    notice.hidden = !progress.message || progress.state === "draft";
    notice.textContent = progress.message || "";
  }

  // ---------- estimates table ----------

  function intervalBar(row, range) {
    const width = 160;
    const height = 18;
    const root = svg("svg", { viewBox: "0 0 " + width + " " + height, class: "bar", width: width, height: height });
    if (row.value === null || row.low === null || row.high === null) return root;
    const x = scale(range[0], range[1], 4, width - 4);
    const colour = colourOf(row.name);
    root.append(svg("line", { x1: x(row.low), x2: x(row.high), y1: 9, y2: 9, stroke: colour, "stroke-width": 2 }));
    for (const end of [row.low, row.high]) {
      root.append(svg("line", { x1: x(end), x2: x(end), y1: 4, y2: 14, stroke: colour, "stroke-width": 2 }));
    }
    root.append(svg("circle", { cx: x(row.value), cy: 9, r: 3.5, fill: colour }));
    return titled(root, row.name + ": " + fmt(row.value) + " [" + fmt(row.low) + ", " + fmt(row.high) + "]");
  }

  function showEstimates(estimates) {
    const presentation = config.levels[estimates.level] || config.levels.query;
    const extraIntervals = presentation.extra_intervals;
    const estimand = document.getElementById("estimand");
    if (estimand && estimates.estimand) {
      estimand.textContent = "Estimates are " + estimates.estimand.rule + ".";
      estimand.hidden = false;
    }
    const table = document.getElementById("estimates-table");
    const head = table.tHead;
    const body = table.tBodies[0];
    clear(head);
    clear(body);
    // Once every pool item is judged, each row's exact value stands beside the sample's estimate.
    const exact = Boolean(estimates.exact);
    const columns = exact ? ["System", "Exact", "Estimate", "SE", presentation.interval_header] : ["System", "Estimate", "SE", presentation.interval_header];
    for (const [, header] of extraIntervals) columns.push(header);
    columns.push("Draws", "Interval");
    head.append(el("tr", {}, columns.map((name, i) => el("th", { class: i > 0 && i < columns.length - 1 ? "num" : null, text: name }))));

    const byMetric = new Map();
    for (const row of estimates.systems || []) {
      colourOf(row.name);
      if (!byMetric.has(row.metric)) byMetric.set(row.metric, []);
      byMetric.get(row.metric).push(row);
    }
    const metrics = [...byMetric.keys()].sort((a, b) => METRIC_ORDER.indexOf(metricFamily(a)) - METRIC_ORDER.indexOf(metricFamily(b)));
    let outsideRows = 0;
    if (!metrics.length) {
      body.append(el("tr", {}, [el("td", { colspan: columns.length, class: "muted", text: "No estimates yet: import topics and runs, then start judging." })]));
    }
    for (const metric of metrics) {
      const rows = byMetric.get(metric);
      const reason = rows.find((r) => r.reason);
      body.append(el("tr", { class: "group" }, [el("th", { colspan: columns.length, scope: "colgroup", text: metric })]));
      if (reason && rows.every((r) => r.value === null) && !exact) {
        body.append(el("tr", {}, [el("td", { colspan: columns.length, class: "muted small", text: "Not reported: " + reason.reason })]));
        continue;
      }
      const range = extent(rows.flatMap((r) => [r.low, r.high, r.value, r.exact ?? null]), true);
      // One number of decimals for the metric's estimates, SEs and bounds.
      const digits = decimalsFor(rows.flatMap((r) => [r.low, r.high, r.value, r.exact ?? null]));
      for (const row of rows) {
        const outside = outsideInterval(row);
        if (outside) outsideRows += 1;
        const cells = [
          el("td", {}, [el("span", { class: "swatch", style: "background:" + colourOf(row.name) }), row.name]),
          ...(exact ? [el("td", { class: "num strong", "data-field": "exact", text: fixed(row.exact, digits) })] : []),
          el("td", { class: "num strong", "data-field": "value", "data-outside": outside ? "1" : null, text: fixed(row.value, digits) + (outside ? " †" : "") }),
          el("td", { class: "num", "data-field": "se", text: fixed(row.se, digits) }),
          el("td", { class: row.reliable === false ? "small muted" : "num", "data-field": "clt", text: intervalText(row, digits) }),
        ];
        for (const [key] of extraIntervals) {
          cells.push(el("td", { class: "num", text: fixedInterval((row.intervals || {})[key], digits) }));
        }
        cells.push(el("td", { class: "num", text: String(row.n ?? 0) }));
        cells.push(el("td", {}, [intervalBar(row, range)]));
        body.append(el("tr", { "data-system": row.name, "data-metric": metric }, cells));
      }
    }
    const note = document.getElementById("estimates-note");
    note.textContent =
      (estimates.exact ? estimates.exact + " " : "") +
      presentation.note +
      "Draws = draws counted so far (with replacement: an item drawn twice counts twice and is judged once, so draws can outnumber judgments); SE = estimated standard error." +
      (estimates.draws_made > estimates.draws
        ? " " + (estimates.draws_made - estimates.draws) + " of the " + estimates.draws_made + " draws made do not count yet: they wait for judgments still open (a drawn topic counts once every one of its documents is judged, those a run that arrived brought too), and count once those are in; a dash is an estimate with no draw counted."
        : "") +
      (outsideRows
        ? " " + OUTSIDE_NOTE
        : "");
    showDifference(estimates.difference);
  }

  /** Whether a row's point estimate lies outside its (cut) interval. */
  function outsideInterval(row) {
    if (row.value === null || row.low === null || row.high === null) return false;
    return row.value < row.low || row.value > row.high;
  }

  /** The interval of a row, or, below the reliability threshold, why none is shown and the any-n bounds. */
  function intervalText(row, digits) {
    if (row.reliable === false) {
      return (
        "fewer than " + row.reliable_from + " topics judged: no interval can be trusted yet; any-n bounds: " +
        fixedInterval([row.any_n_low, row.any_n_high], digits)
      );
    }
    return fixedInterval([row.low, row.high], digits);
  }

  function showDifference(difference) {
    const box = document.getElementById("difference");
    clear(box);
    box.hidden = !difference;
    if (!difference) return;
    const [a, b] = difference.systems;
    const p = difference.p_order_right;
    const leader = difference.value === null ? null : difference.value >= 0 ? a : b;
    const digits = decimalsFor([difference.value, difference.low, difference.high]);
    const text = el("div", {}, [
      el("div", { class: "difference-title", text: a + " − " + b + " on " + difference.metric }),
      el("div", { class: "difference-numbers" }, [
        el("span", { class: "big", id: "difference-value", text: fixed(difference.value, digits) }),
        el("span", { class: "muted", text: " ± " + fixed(difference.se, digits) + " (SE) · 95 % CI " + intervalText(difference, digits) }),
      ]),
      difference.exact === undefined || difference.exact === null
        ? ""
        : el("div", { class: "small", id: "difference-exact", text: "Every pool item is judged: the exact difference is " + fixed(difference.exact, digits) + " (the estimate above is the sample's)." }),
      el("div", { class: "small" }, [
        leader === null
          ? "No draw counted yet."
          : "Probability that " + leader + " is truly better: ",
        leader === null ? "" : el("b", { id: "p-order-right", text: p === null || p === undefined ? "not read yet (too few topics for an interval)" : percent(p) }),
        // A one-sided chance can pass 95 % while the two-sided 95 % interval still holds 0.
        leader !== null && difference.low !== null && difference.low <= 0 && difference.high >= 0
          ? el("span", { id: "difference-unsettled", text: " (one-sided; the 95 % interval still holds 0, so the order is not settled at the 95 % level)" })
          : "",
      ]),
    ]);
    box.append(text);
    // The difference against zero, as an error bar.
    const width = 260;
    const root = svg("svg", { viewBox: "0 0 " + width + " 44", class: "difference-bar", width: width, height: 44 });
    if (difference.value !== null && difference.low !== null) {
      const bound = Math.max(Math.abs(difference.low), Math.abs(difference.high), Math.abs(difference.value)) * 1.15 || 1;
      const x = scale(-bound, bound, 10, width - 10);
      root.append(svg("line", { x1: x(0), x2: x(0), y1: 2, y2: 30, class: "zero" }));
      root.append(svg("line", { x1: x(difference.low), x2: x(difference.high), y1: 16, y2: 16, class: "err" }));
      for (const end of [difference.low, difference.high]) root.append(svg("line", { x1: x(end), x2: x(end), y1: 10, y2: 22, class: "err" }));
      root.append(svg("circle", { cx: x(difference.value), cy: 16, r: 4.5, class: "dot" }));
      root.append(svg("text", { x: x(0), y: 42, "text-anchor": "middle", class: "tick", text: "0" }));
      root.append(svg("text", { x: 10, y: 42, class: "tick", text: b + " better" }));
      root.append(svg("text", { x: width - 10, y: 42, "text-anchor": "end", class: "tick", text: a + " better" }));
    }
    box.append(root);
  }

  // ---------- history chart ----------

  function metricsOf(estimates) {
    const names = [...new Set((estimates.systems || []).filter((r) => r.value !== null || !r.reason).map((r) => r.metric))];
    return names.sort((a, b) => METRIC_ORDER.indexOf(metricFamily(a)) - METRIC_ORDER.indexOf(metricFamily(b)));
  }

  function showTabs(estimates) {
    const tabs = document.getElementById("metric-tabs");
    const metrics = metricsOf(estimates);
    if (!state.metric || !metrics.includes(state.metric)) {
      state.metric = metrics.includes(config.metric) ? config.metric : metrics[0] || null;
    }
    const existing = [...tabs.children].map((b) => b.dataset.metric).join("|");
    if (existing !== metrics.join("|")) {
      clear(tabs);
      for (const metric of metrics) {
        const button = el("button", { type: "button", role: "tab", class: "tab", "data-metric": metric, text: metric });
        button.addEventListener("click", () => {
          state.metric = metric;
          showTabs(state.estimates);
          drawHistory();
        });
        tabs.append(button);
      }
    }
    for (const button of tabs.children) button.setAttribute("aria-selected", String(button.dataset.metric === state.metric));
  }

  /** At most `limit` snapshots, always keeping the first and the last. */
  function thin(points, limit) {
    if (points.length <= limit) return points;
    const step = (points.length - 1) / (limit - 1);
    return Array.from({ length: limit }, (_, i) => points[Math.round(i * step)]);
  }

  // A turned phone or a resized window redraws the history at its new width.
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (state.history.length) drawHistory(); }, 200);
  });

  function drawHistory() {
    const root = document.getElementById("history-chart");
    const legend = document.getElementById("history-legend");
    clear(root);
    clear(legend);
    const metric = state.metric;
    const series = new Map();
    for (const snapshot of state.history) {
      for (const row of snapshot.systems || []) {
        if (row.metric !== metric || row.value === null) continue;
        if (!series.has(row.name)) series.set(row.name, []);
        // An interval from too few topics (any-n bounds, often the whole range) is not drawn.
        const trusted = row.reliable !== false;
        series.get(row.name).push({ spent: snapshot.spent, value: row.value, low: trusted ? row.low : null, high: trusted ? row.high : null, reliable: trusted });
      }
    }
    const allNames = [...series.keys()];
    if (state.hidden === null && allNames.length) {
      // Start with what the campaign is about (the compared pair, or the goal's runs); the
      // others on demand: more series overlap into an unreadable chart.
      const focus = (config.focus || []).filter((name) => series.has(name));
      state.hidden = new Set(focus.length ? allNames.filter((name) => !focus.includes(name)) : []);
    }
    // Drawn at the width it is shown (a laptop's 640 units, or a phone's panel), so its type
    // stays at the size of the page's.
    const width = Math.round(Math.min(640, Math.max(300, root.clientWidth || 640)));
    root.setAttribute("viewBox", "0 0 " + width + " 300");
    root.classList.toggle("fits", true);
    const box = { left: 62, right: width - 14, top: 12, bottom: 252 };
    if (!series.size) {
      root.append(svg("text", { x: width / 2, y: 150, "text-anchor": "middle", class: "empty", text: "No estimate yet: the chart starts with the first fully judged draw." }));
      return;
    }
    const shown = allNames.filter((name) => !state.hidden.has(name));
    const all = shown.flatMap((name) => series.get(name));
    const budget = state.estimates ? state.estimates.budget : 0;
    const xMax = Math.max(...all.map((p) => p.spent), 1e-9);
    // The whole budget on the x axis: how far along the campaign is reads off the chart.
    const xDomain = [0, Math.max(xMax * 1.04, budget || 0)];
    // The axis spans the intervals (cut to the metric's range), not the point estimates: one
    // estimate of -203 after a single draw must not flatten every other series. Intervals from
    // too few topics to trust count only while no other exists.
    const trusted = all.filter((p) => p.reliable && p.low !== null && p.high !== null);
    const spanned = trusted.length ? trusted : all.filter((p) => p.low !== null && p.high !== null);
    const yDomain = extent(spanned.length ? spanned.flatMap((p) => [p.low, p.high]) : all.map((p) => p.value), false);
    const inside = (value) => Math.min(yDomain[1], Math.max(yDomain[0], value));
    const x = scale(xDomain[0], xDomain[1], box.left, box.right);
    const y = scale(yDomain[0], yDomain[1], box.bottom, box.top);
    const xTickCount = Math.max(3, Math.round((box.right - box.left) / 95));
    axes(root, x, y, box, ticks(xDomain[0], xDomain[1], xTickCount), ticks(yDomain[0], yDomain[1], 5), {
      x: "budget spent (" + (state.estimates ? state.estimates.budget_unit : "") + ")",
      y: metric,
    });
    const names = shown;
    // Systems' error bars at one snapshot sit side by side instead of on top of each other,
    // each a little left of the last (never right: no bar past what was spent, or the budget).
    const jitter = (xDomain[1] - xDomain[0]) * 0.009;
    const bands = names.length <= MAX_BANDS_SHOWN;
    names.forEach((name, index) => {
      const colour = colourOf(name);
      const points = series.get(name);
      const shift = -index * jitter;
      const group = svg("g", { class: "series", "data-system": name });
      const bounded = points.filter((p) => p.low !== null && p.high !== null);
      if (bands) {
        const band = bounded.map((p) => x(p.spent) + "," + y(inside(p.high))).concat(bounded.slice().reverse().map((p) => x(p.spent) + "," + y(inside(p.low))));
        group.append(svg("polygon", { points: band.join(" "), fill: colour, opacity: 0.08 }));
      }
      // The line goes through the series' dots, shifted as they are.
      group.append(svg("polyline", { points: points.map((p) => x(Math.max(0, p.spent + shift)) + "," + y(inside(p.value))).join(" "), fill: "none", stroke: colour, "stroke-width": 1.8 }));
      for (const p of thin(points, 40)) {
        const px = x(Math.max(0, p.spent + shift));
        const interval = p.low !== null && p.high !== null ? " [" + fmt(p.low) + ", " + fmt(p.high) + "]" : " (no interval yet)";
        if (p.low !== null && p.high !== null) {
          const bar = svg("g", { stroke: colour, "stroke-width": 1.2 });
          bar.append(svg("line", { x1: px, x2: px, y1: y(inside(p.low)), y2: y(inside(p.high)) }));
          bar.append(svg("line", { x1: px - 3, x2: px + 3, y1: y(inside(p.low)), y2: y(inside(p.low)) }));
          bar.append(svg("line", { x1: px - 3, x2: px + 3, y1: y(inside(p.high)), y2: y(inside(p.high)) }));
          group.append(titled(bar, name + " at " + fmt(p.spent) + " spent: " + fmt(p.value) + interval));
        }
        if (p.value < yDomain[0] || p.value > yDomain[1]) {
          // Beyond the axis: a hollow triangle at the edge, pointing where the value lies.
          const edge = y(inside(p.value));
          const tip = p.value < yDomain[0] ? edge + 5 : edge - 5;
          const marker = svg("polygon", { points: (px - 4) + "," + edge + " " + (px + 4) + "," + edge + " " + px + "," + tip, fill: "none", stroke: colour, "stroke-width": 1.4, class: "beyond-axis" });
          group.append(titled(marker, name + " at " + fmt(p.spent) + " spent: " + fmt(p.value) + interval + ", beyond the axis"));
        } else {
          group.append(svg("circle", { cx: px, cy: y(p.value), r: 2.6, fill: colour }));
        }
      }
      root.append(group);
    });
    for (const name of allNames) {
      const hidden = state.hidden.has(name);
      const button = el("button", { type: "button", class: "legend-item", "aria-pressed": hidden ? "false" : "true", "data-system": name, title: (hidden ? "Show " : "Hide ") + name }, [
        el("span", { class: "swatch", style: "background:" + colourOf(name) }),
        name,
      ]);
      button.addEventListener("click", () => {
        if (state.hidden.has(name)) state.hidden.delete(name);
        else if (allNames.length - state.hidden.size > 1) state.hidden.add(name);
        drawHistory();
        const again = legend.querySelector('[data-system="' + CSS.escape(name) + '"]');
        if (again) again.focus();
      });
      legend.append(button);
    }
    if (state.hidden.size) {
      legend.append(el("span", { class: "small muted", "data-field": "series-shown", text: "Showing " + shown.length + " of " + allNames.length + " systems (the compared ones first); press a name to show or hide it." }));
    }
    const beyond = root.querySelectorAll(".beyond-axis").length;
    root.dataset.beyond = String(beyond);
    if (beyond) {
      legend.append(el("span", { class: "small muted", "data-field": "beyond-note", text: beyond + (beyond === 1 ? " estimate lies" : " estimates lie") + " beyond the axis (hollow triangles at its edge, pointing its way): the axis spans the intervals, so one wild early estimate does not flatten the others." }));
    }
    if (!bands) {
      legend.append(el("span", { class: "small muted", "data-field": "bands-note", text: "With more than " + MAX_BANDS_SHOWN + " systems shown, the intervals are drawn as bars, not bands (bands would hide each other)." }));
    }
    if (budget > 0 && budget <= xDomain[1]) {
      root.append(svg("line", { x1: x(budget), x2: x(budget), y1: box.top, y2: box.bottom, class: "budget-line" }));
      root.append(svg("text", { x: x(budget) - 4, y: box.top + 10, "text-anchor": "end", class: "tick", text: "budget" }));
    }
    root.dataset.points = String(all.length);
  }

  // ---------- sampling distribution ----------

  /** A blue-to-yellow ramp (viridis-like) for t in [0, 1]. */
  function ramp(t) {
    const stops = [
      [68, 1, 84],
      [59, 82, 139],
      [33, 145, 140],
      [94, 201, 98],
      [253, 231, 37],
    ];
    const position = Math.min(0.9999, Math.max(0, t)) * (stops.length - 1);
    const i = Math.floor(position);
    const f = position - i;
    const mix = stops[i].map((c, k) => Math.round(c + f * (stops[i + 1][k] - c)));
    return "rgb(" + mix.join(",") + ")";
  }

  const EXPECTED_LABELS = {
    one: ["E[metric | topic]", "expected metric of the system under the label model"],
    difference: ["E[Δ | topic]", "expected difference of the two systems under the label model"],
    leaderboard: ["E[metric | topic]", "expected metric, averaged over the systems, under the label model"],
    relative: ["E[metric | topic]", "expected metric, averaged over the systems, under the label model"],
  };

  function drawSampling(topics, goal) {
    const [keyTitle, keyText] = EXPECTED_LABELS[goal] || EXPECTED_LABELS.one;
    document.getElementById("sampling-note").textContent =
      "Each dot is a topic: its probability q of being drawn next against its cost; colour = " + keyText +
      ". The dashed line is uniform sampling (1 / topics).";
    const root = document.getElementById("sampling-chart");
    clear(root);
    const box = { left: 62, right: 372, top: 12, bottom: 252 };
    if (!topics.length) {
      root.append(svg("text", { x: 220, y: 150, "text-anchor": "middle", class: "empty", text: "No sampling distribution stored yet." }));
      return;
    }
    const xDomain = extent(topics.map((t) => t.cost), false);
    const yDomain = extent(topics.map((t) => t.q), true);
    const x = scale(xDomain[0], xDomain[1], box.left, box.right);
    const y = scale(yDomain[0], yDomain[1], box.bottom, box.top);
    axes(root, x, y, box, ticks(xDomain[0], xDomain[1], 5), ticks(yDomain[0], yDomain[1], 5), { x: "query cost (mean 1)", y: "q (probability of the next draw)" });
    const uniform = 1 / topics.length;
    if (uniform >= yDomain[0] && uniform <= yDomain[1]) {
      root.append(svg("line", { x1: box.left, x2: box.right, y1: y(uniform), y2: y(uniform), class: "uniform" }));
    }
    const expected = topics.map((t) => t.expected);
    const [eLow, eHigh] = [Math.min(...expected), Math.max(...expected)];
    const colourAt = (value) => ramp(eHigh > eLow ? (value - eLow) / (eHigh - eLow) : 0.5);
    const dots = svg("g", { class: "dots" });
    for (const topic of topics) {
      dots.append(
        titled(
          svg("circle", { cx: x(topic.cost), cy: y(topic.q), r: topics.length > 400 ? 2.2 : 4, fill: colourAt(topic.expected) }),
          "topic " + topic.topic + ": q = " + fmt(topic.q, 3) + ", cost " + fmt(topic.cost, 3) + ", expected " + fmt(topic.expected, 3)
        )
      );
    }
    root.append(dots);
    // Colour key.
    const keyX = 392;
    const defs = svg("defs");
    const gradient = svg("linearGradient", { id: "expected-ramp", x1: 0, x2: 0, y1: 1, y2: 0 });
    for (let i = 0; i <= 4; i++) gradient.append(svg("stop", { offset: i / 4, "stop-color": ramp(i / 4) }));
    defs.append(gradient);
    root.append(defs);
    root.append(svg("rect", { x: keyX, y: box.top + 14, width: 12, height: 150, fill: "url(#expected-ramp)", rx: 2 }));
    // Right-aligned to the chart's edge: the title is wider than the key, and the larger type of
    // a phone would push a centred one out of the picture.
    root.append(svg("text", { x: 438, y: box.top + 8, "text-anchor": "end", class: "tick", text: keyTitle }));
    root.append(svg("text", { x: keyX + 16, y: box.top + 24, class: "tick", text: fmt(eHigh, 3) }));
    root.append(svg("text", { x: keyX + 16, y: box.top + 166, class: "tick", text: fmt(eLow, 3) }));
    root.dataset.points = String(topics.length);
  }

  // ---------- throughput, model ----------

  function showThroughput(throughput) {
    document.getElementById("stat-median-seconds").textContent = fmt(throughput.median_seconds, 3);
    document.getElementById("stat-per-hour").textContent = throughput.per_hour === null ? "—" : String(Math.round(throughput.per_hour));
    const active = (throughput.assessors || []).length;
    document.getElementById("stat-assessors").textContent = String(active);
    document.getElementById("stat-assessors-label").textContent = active === 1 ? "assessor active" : "assessors active";
    const body = document.querySelector("#throughput-table tbody");
    clear(body);
    for (const row of throughput.assessors || []) {
      body.append(
        el("tr", {}, [
          el("td", { text: row.assessor }),
          el("td", { class: "num", text: String(row.judgments) }),
          el("td", { class: "num", text: fmt(row.median_seconds, 3) }),
          el("td", { class: "num", text: row.per_hour === null ? "—" : String(Math.round(row.per_hour)) }),
        ])
      );
    }
    if (!(throughput.assessors || []).length) body.append(el("tr", {}, [el("td", { colspan: 4, class: "muted", text: "No assessor judgments yet." })]));
  }

  function clock(iso) {
    if (!iso) return "—";
    const date = new Date(iso);
    return date.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
  }

  const LABEL_KINDS = {
    prior: "prior only (no labels yet)",
    frequencies: "grade frequencies + prior",
    ordinal: "ordinal regression + prior",
  };
  const COST_KINDS = {
    constant: "constant (no document lengths)",
    log_length: "log(1 + length), default",
    fitted: "fitted to measured seconds",
  };

  function showModel(model) {
    const facts = document.getElementById("model-facts");
    clear(facts);
    const add = (term, value, id) => {
      facts.append(el("dt", { text: term }));
      facts.append(el("dd", { id: id || null, text: value }));
    };
    add("Strategy", model.strategy_label + (model.level ? " · " + model.level + " level" : ""));
    if (model.strategy !== "passive") add("Passive mix", fmt(model.mix, 3));
    const label = model.label_model;
    if (!label) {
      add("Label model", "not fitted yet (first refresh pending)", "model-labels");
    } else {
      add("Label model", (LABEL_KINDS[label.kind] || label.kind) + " · " + label.n_labels + " labels", "model-labels");
      if (label.prior_weight !== null && label.prior_weight !== undefined) add("Prior weight", fmt(label.prior_weight, 3) + " (strength " + fmt(label.prior_strength, 3) + ")");
      const cost = model.cost_model || {};
      let costText = COST_KINDS[cost.kind] || cost.kind || "—";
      if (cost.kind === "fitted") costText += " · " + cost.n_points + " points" + (cost.r_squared !== null && cost.r_squared !== undefined ? ", R² " + fmt(cost.r_squared, 2) : "");
      add("Cost model", costText, "model-cost");
      // A weak fit is not an error: document length barely predicts judging time, so items are
      // priced about the same. Say so rather than let a tiny R² puzzle people.
      if (cost.weak_fit) {
        add("", "Length explains little of the judging time here, so items cost about the same.", "model-cost-weak");
      }
      add("Last refit", clock(model.refit_at) + " (version " + model.version + ")", "model-refit");
    }
    document.getElementById("meta-strategy").textContent = model.strategy_label;
    document.getElementById("meta-level").textContent = model.level;
  }

  // ---------- evaluate a run ----------

  function showEvaluations(results) {
    const box = document.getElementById("evaluations");
    if (!box) return;
    clear(box);
    if (!results.length) return;
    const table = el("table", { class: "compact" }, [
      el("tr", {}, ["Run", "Metric", "Estimate", "SE", "95 % CI", "Unreached"].map((t, i) => el("th", { class: i > 1 ? "num" : null, text: t }))),
    ]);
    for (const result of results) {
      table.append(
        el("tr", { "data-run": result.system }, [
          el("td", { text: result.system }),
          el("td", { text: result.metric }),
          el("td", { class: "num strong", text: fmt(result.value) }),
          el("td", { class: "num", text: fmt(result.se, 3) }),
          el("td", { class: "num", text: fmtInterval([result.low, result.high]) }),
          el("td", { class: "num", text: percent(result.unreachable_share) }),
        ])
      );
    }
    box.append(table);
    for (const result of results) {
      if (result.warning) box.append(el("div", { class: "notice warn small evaluate-warning", text: result.system + ": " + result.warning }));
    }
  }

  async function refreshEvaluations() {
    if (!config.can_evaluate) return;
    showEvaluations(await getJson(config.urls.evaluate));
  }

  function wireEvaluateForm() {
    const form = document.getElementById("evaluate-form");
    if (!form) return;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const errors = document.getElementById("evaluate-errors");
      clear(errors);
      const button = form.querySelector("button");
      button.disabled = true;
      try {
        const response = await fetch(config.urls.evaluate, {
          method: "POST",
          body: new FormData(form),
          credentials: "same-origin",
          headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
        });
        const body = await response.json().catch(() => ({}));
        if (!response.ok) {
          const list = body.errors || [{ file: "", line: null, message: body.detail || "the upload failed (" + response.status + ")" }];
          for (const error of list) {
            const where = [error.file, error.line ? "line " + error.line : ""].filter(Boolean).join(", ");
            errors.append(el("div", { class: "notice bad small", text: (where ? where + ": " : "") + error.message }));
          }
          return;
        }
        form.reset();
        await refreshEvaluations();
      } finally {
        button.disabled = false;
      }
    });
  }

  // ---------- runs that arrive ----------

  const ARRIVAL_STATUS = {
    labelling: "the model judge labels its new documents",
    judging: "assessors judge the top-up",
    done: "top-up done",
  };

  const VERDICT_WORDS = {
    better: "better",
    worse: "worse",
    not_worse: "not worse",
    not_better: "not better",
    not_settled: "not settled",
    unchanged: "unchanged (same documents, no top-up)",
  };

  // An arrival's exact difference once every document it weighs is judged (the verdict reads it),
  // else null.
  function exactDifference(arrival) {
    return (arrival.difference || {}).exact ?? null;
  }

  // The plan a verdict is read by: rule, question with its margin, horizon (fixed when it arrived).
  function verdictPlan(arrival) {
    const question = arrival.question === "non_inferiority" ? ", not worse by " + fmt(arrival.margin)
      : arrival.question === "superiority" ? ", better by " + fmt(arrival.margin) : "";
    const count = Math.round(arrival.horizon || 0);
    const unit = (arrival.horizon_unit || "labels").replace(/s$/, count === 1 ? "" : "s");
    const horizon = arrival.rule === "sequential" && arrival.horizon && arrival.verdict !== "unchanged" ? " over " + count + " " + unit : "";
    return arrival.rule + question + horizon;
  }

  // The verdict and the interval it is read from, with the plan; while undecided, the current
  // band and why a look is held back.
  function verdictText(arrival) {
    const band = arrival.sequence || {};
    const exact = exactDifference(arrival);
    // Read exactly (every document the difference weighs is judged): a value, not a band.
    const interval = exact !== null ? ", exactly " + fmt(exact)
      : band.low !== null && band.low !== undefined ? " " + fmtInterval([band.low, band.high]) : "";
    const plan = verdictPlan(arrival);
    if (arrival.verdict === "unchanged") return VERDICT_WORDS.unchanged;
    if (arrival.verdict === "not_settled") {
      return "not settled (" + plan + interval + ")" + (arrival.verdict_reason ? ": " + arrival.verdict_reason : "");
    }
    if (arrival.verdict) {
      const at = arrival.decided_labels !== null && arrival.decided_labels !== undefined ? " at label " + arrival.decided_labels : "";
      return VERDICT_WORDS[arrival.verdict] + " (" + plan + interval + at + (arrival.topup_returned > 0 ? "; " + fmt(arrival.topup_returned) + " of the top-up not spent, taken off the budget" : "") + ")";
    }
    // An arrival with no verdict record has no plan to name.
    const planned = arrival.rule ? " (" + plan + ")" : "";
    if (arrival.verdict_reason) return "not yet" + planned + ": " + arrival.verdict_reason;
    if (arrival.rule === "fixed") return "when the top-up is spent" + planned;
    return "not yet" + planned + (interval ? ": band" + interval : "");
  }

  function showArrivals(arrivals) {
    const box = document.getElementById("arrivals");
    if (!box) return;
    clear(box);
    if (!arrivals.length) {
      box.append(el("p", { class: "muted small", text: "No run has arrived yet." }));
      return;
    }
    // One count of decimals for every difference and bound, as in the estimates table.
    const digits = decimalsFor(arrivals.flatMap((a) => (a.difference ? [a.difference.value, a.difference.low, a.difference.high, a.difference.exact ?? null] : [])));
    const table = el("table", { class: "compact" }, [
      el("tr", {}, ["Run", "Compared with", "Status", "Top-up", "New documents", "Difference (run − compared with)", "95 % CI", "Order right", "Verdict (rule, the interval it reads)"].map((t, i) => el("th", { class: i > 2 && i < 8 ? "num" : null, text: t }))),
    ]);
    for (const arrival of arrivals) {
      const gap = arrival.difference || {};
      // Once every document the difference weighs is judged, its exact value leads (the verdict
      // reads it); the sample's estimate and interval stay beside it, named as the sample's.
      const exact = exactDifference(arrival) !== null;
      const sampled = (gap.reliable === false && gap.low !== null ? "any-n bounds " : "") + fixedInterval([gap.low, gap.high], digits);
      table.append(
        el("tr", { "data-arrival": arrival.system }, [
          el("td", { text: arrival.system + " (" + clock(arrival.created) + ")" }),
          el("td", { text: arrival.reference || "—" }),
          el("td", { text: ARRIVAL_STATUS[arrival.status] || arrival.status }),
          // Judgments since it arrived count later top-ups too: the panel shows its own progress.
          el("td", { class: "num", text: fmt(Math.min(arrival.topup_spent, arrival.topup_budget)) + " of " + fmt(arrival.topup_budget) }),
          el("td", { class: "num", text: String(arrival.new_items) }),
          // Below the reliability threshold the value is no estimate to read alone: say so.
          exact
            ? el("td", { class: "num strong", "data-field": "difference", "data-exact": "1", text: fixed(gap.exact, digits) + " exact" })
            : el("td", { class: "num strong", "data-field": "difference", "data-outside": outsideInterval(gap) ? "1" : null, text: fixed(gap.value, digits) + (outsideInterval(gap) ? " †" : "") + (gap.reliable === false && gap.value !== null ? " (too few topics)" : "") }),
          el("td", { class: "num", "data-field": "interval", text: exact ? "the sample's: " + fixed(gap.value, digits) + " " + sampled : sampled }),
          el("td", { class: "num", "data-field": "order-right", text: exact ? "exact" : percent(arrival.order_right) }),
          el("td", { "data-field": "verdict", text: verdictText(arrival) }),
        ])
      );
    }
    box.append(table);
    if (arrivals.some((arrival) => outsideInterval(arrival.difference || {}) && exactDifference(arrival) === null)) {
      box.append(el("p", { class: "small muted", id: "arrivals-outside-note", text: OUTSIDE_NOTE }));
    }
    for (const arrival of arrivals) {
      // No silent gaps: say why a difference is missing or still incomplete.
      const documents = (count) => count + (count === 1 ? " document" : " documents");
      if (arrival.unreachable_share > 0) {
        // Who picks them: the top-up while it runs; later draws of the campaign once it is over
        // (or when an unchanged release had none).
        const next = arrival.status === "done" || arrival.verdict === "unchanged" ? "later draws of the campaign pick them (its top-up is over)" : "the top-up picks them next";
        // A campaign that draws whole topics counts a drawn topic once all its documents are
        // judged: there the share is of documents on drawn topics still waiting for judgments.
        const why = arrival.horizon_unit === "topics"
          ? " of its score comes from documents on drawn topics not judged yet (a topic counts once all its documents are); they are judged before any new topic is drawn"
          : " of its score comes from documents the sampling could not pick yet (they joined the pool late, with this run or another run that arrived); " + next;
        box.append(el("div", { class: "notice warn small arrival-warning", text: arrival.system + ": " + percent(arrival.unreachable_share) + why + "." }));
      } else if (arrival.waiting_items > 0 && arrival.horizon_unit === "topics") {
        box.append(el("div", { class: "notice small arrival-warning", text: arrival.system + ": " + documents(arrival.waiting_items) + " of it on topics drawn before it arrived are not judged yet (already pooled ones count too); a drawn topic counts once all its documents are, so its estimate and difference show then." }));
      } else if (arrival.waiting_items > 0) {
        box.append(el("div", { class: "notice small arrival-warning", text: arrival.system + ": " + documents(arrival.waiting_items) + " it or its reference ranks joined the pool late and no draw has picked them since; its estimate and difference show once one has (before that their uncertainty cannot be measured)." }));
      }
      if (arrival.status === "judging" && !(arrival.topup_judged > 0)) {
        // The campaign's spent figure moves while this column stays at 0: say why.
        box.append(el("div", { class: "notice small arrival-warning", text: arrival.system + ": its top-up has no judgment yet. Items drawn before it arrived are served first; their judgments count for the campaign's budget, not for this top-up." }));
      }
      if (exactDifference(arrival) !== null) {
        box.append(el("div", { class: "notice small arrival-warning", text: arrival.system + ": every document its difference weighs is judged, so the difference is exactly " + fmt(exactDifference(arrival)) + " and the verdict was read from it; the interval beside it in the table is what the sample alone says." }));
      }
      if (arrival.target_width !== null && arrival.planned_width !== null) {
        const reached = arrival.planned_width <= arrival.target_width;
        box.append(el("div", { class: "notice small arrival-warning" + (reached ? "" : " warn"), text: arrival.system + ": the top-up was planned for a 95 % interval of width " + fmt(arrival.target_width) + " (predicted " + fmt(arrival.planned_width) + (reached ? "" : ": the planner's largest top-up does not reach it") + "); the width measured is the interval above." }));
      }
      if (arrival.judge_missing) {
        box.append(el("div", { class: "notice warn small arrival-warning", text: arrival.system + ": the model judge has no label for " + arrival.judge_missing + " of its documents" + (arrival.status === "labelling" ? " yet (it is labelling them)." : "; upload them to the judge to certify them with fewer human judgments.") }));
      }
    }
  }

  function drawArrivals(arrivals) {
    const root = document.getElementById("arrivals-chart");
    const note = document.getElementById("arrivals-chart-note");
    if (!root) return;
    clear(root);
    const rows = (state.estimates && state.estimates.systems) || [];
    const referenceRow = (name) => rows.find((row) => row.name === name && row.metric.startsWith("DCG") && row.value !== null);
    const points = arrivals.map((arrival, index) => ({ arrival, index: index + 1, reference: referenceRow(arrival.reference) }));
    const shown = points.filter((point) => point.arrival.estimate.value !== null);
    // `hidden` is an attribute of SVG elements, not a property.
    root.toggleAttribute("hidden", shown.length === 0);
    note.hidden = shown.length === 0;
    if (!shown.length) return;
    const box = { left: 62, right: 420, top: 12, bottom: 196 };
    const values = [];
    for (const point of shown) {
      values.push(point.arrival.estimate.low, point.arrival.estimate.high);
      if (point.reference) values.push(point.reference.low, point.reference.high);
    }
    const yDomain = extent(values, false);
    const x = scale(0.5, points.length + 0.5, box.left, box.right);
    const y = scale(yDomain[0], yDomain[1], box.bottom, box.top);
    const metric = (shown[0].reference && shown[0].reference.metric) || "DCG";
    axes(root, x, y, box, [], ticks(yDomain[0], yDomain[1], 5), { x: "", y: metric + " (95 % interval)" });
    const marks = svg("g", { class: "dots" });
    const whisker = (at, low, high, title, hollow) => {
      if (low !== null && high !== null) marks.append(svg("line", { x1: at, x2: at, y1: y(low), y2: y(high), class: "axis" }));
      return titled(svg("circle", { cx: at, cy: y(title.value), r: 4.5, class: hollow ? "hollow" : null, fill: hollow ? "none" : "currentColor", stroke: "currentColor" }), title.text);
    };
    for (const point of points) {
      const at = x(point.index);
      root.append(svg("text", { x: at, y: box.bottom + 17, class: "tick", "text-anchor": "middle", text: point.arrival.system }));
      const own = point.arrival.estimate;
      if (own.value !== null) {
        marks.append(whisker(at - 6, own.low, own.high, { value: own.value, text: point.arrival.system + ": " + fmt(own.value) + " " + fmtInterval([own.low, own.high]) }, false));
      }
      if (point.reference && own.value !== null) {
        const ref = point.reference;
        marks.append(whisker(at + 6, ref.low, ref.high, { value: ref.value, text: ref.name + " (reference): " + fmt(ref.value) + " " + fmtInterval([ref.low, ref.high]) }, true));
      }
    }
    root.append(marks);
  }

  async function refreshArrivals() {
    if (!config.arrivals) return;
    const arrivals = await getJson(config.urls.arrivals);
    showArrivals(arrivals);
    drawArrivals(arrivals);
  }

  function wireArrivalForm() {
    const form = document.getElementById("arrival-form");
    if (!form) return;
    const button = form.querySelector("button");
    const label = button.textContent;
    const question = form.querySelector("#arrival-question");
    const margin = form.querySelector("#arrival-margin");
    // A margin is read only by the questions with one: the difference question tests 0.
    const followQuestion = () => {
      const none = question.value === "difference";
      if (none) margin.value = "0";
      margin.readOnly = none;
      margin.title = none ? "the difference question tests 0: choose not worse or better by a margin to set one" : "";
    };
    question.addEventListener("change", followQuestion);
    followQuestion();
    // The rule, question and margin are fixed once the run arrives: the first click says what
    // will be asked, the second adds it. An error, like the summary, belongs to the attempt it
    // answered: a changed field clears both.
    const unconfirm = () => {
      delete form.dataset.confirm;
      button.textContent = label;
      clear(document.getElementById("arrival-errors"));
    };
    form.addEventListener("input", unconfirm);
    form.addEventListener("change", unconfirm);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const errors = document.getElementById("arrival-errors");
      clear(errors);
      if (form.dataset.confirm !== "yes") {
        const file = form.querySelector("#arrival-file").files[0];
        const width = form.querySelector("#arrival-width");
        const reference = form.querySelector("#arrival-reference");
        const budgetField = form.querySelector("#arrival-budget");
        const budget = budgetField.value;
        const unit = budgetField.dataset.unit;
        // What the server refuses anyway is said at the first click (the server checks again).
        const problem = !file ? "Choose the run file"
          : budget && width && width.value ? "Give either a top-up or the width to reach, not both"
          : !budget && !(width && width.value) ? "Give a top-up (how many more " + unit + " to spend)" + (width ? " or the 95 % width to reach" : "")
          : budget && !(Number(budget) > 0) ? "The top-up must be above 0 " + unit + ", got " + budget
          : "";
        if (problem) {
          errors.append(el("div", { class: "notice bad small", text: problem + "." }));
          return;
        }
        const topup = width && width.value ? "a top-up planned for a 95 % width of " + width.value : "a top-up of " + budget + " " + unit;
        const asked = question.value === "difference" ? "better or worse" : question.options[question.selectedIndex].text.toLowerCase() + " (margin " + margin.value + ")";
        errors.append(el("div", { class: "notice small", id: "arrival-confirm", text: "Adds " + (file ? file.name : "the run") + " with " + topup + " (added to the campaign's budget), compared with " + reference.options[reference.selectedIndex].text + "; its verdict asks " + asked + " by the " + form.querySelector("#arrival-rule").value + " rule. These cannot change once its top-up has labels. Click again to add it." }));
        form.dataset.confirm = "yes";
        button.textContent = "Add it";
        return;
      }
      button.disabled = true;
      const body = new FormData(form);
      if (!body.get("reference")) body.delete("reference");  // the best certified run
      // A width asked for: the planner picks the top-up.
      if (body.get("target_width")) body.delete("budget"); else body.delete("target_width");
      try {
        const response = await fetch(config.urls.arrivals, {
          method: "POST",
          body,
          credentials: "same-origin",
          headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
        });
        const answer = await response.json().catch(() => ({}));
        if (!response.ok) {
          const list = answer.errors || [{ file: "", line: null, message: answer.detail || Object.entries(answer).map(([k, v]) => k + ": " + v).join("; ") || "the upload failed (" + response.status + ")" }];
          for (const error of list) {
            const where = [error.file, error.line ? "line " + error.line : ""].filter(Boolean).join(", ");
            errors.append(el("div", { class: "notice bad small", text: (where ? where + ": " : "") + error.message }));
          }
          return;
        }
        form.reset();
        followQuestion();
        await refreshArrivals();
      } finally {
        delete form.dataset.confirm;
        button.textContent = label;
        button.disabled = false;
      }
    });
  }

  // ---------- polling ----------

  let polling = false;

  async function poll() {
    if (polling) return;
    polling = true;
    const dot = document.getElementById("live-dot");
    try {
      const [estimates, progress, sampling, throughput, model] = await Promise.all([
        getJson(config.urls.estimates),
        getJson(config.urls.progress),
        getJson(config.urls.sampling),
        getJson(config.urls.throughput),
        getJson(config.urls.model),
      ]);
      state.estimates = estimates;
      document.getElementById("stat-draws").textContent = String(estimates.draws ?? 0);
      showProgress(progress);
      showEstimates(estimates);
      showTabs(estimates);
      const key = [estimates.judgments, estimates.draws, estimates.computed_at || "", progress.spent].join("|");
      if (key !== state.historyKey) {
        // Only the snapshots newer than the last one shown: a long campaign has thousands.
        const last = state.history.length ? state.history[state.history.length - 1].id : null;
        const url = config.urls["estimates-history"] + (last === null ? "" : "?after=" + last);
        state.history = state.history.concat(await getJson(url));
        state.historyKey = key;
      }
      drawHistory();
      drawSampling(sampling, model.goal);
      showThroughput(throughput);
      showModel(model);
      await refreshArrivals();
      document.getElementById("updated").textContent =
        "updated " + new Date().toLocaleTimeString([], { hourCycle: "h23" }) + " · every " + config.poll_seconds + " s";
      dot.classList.remove("stale");
      document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
    } catch (error) {
      dot.classList.add("stale");
      document.getElementById("updated").textContent = "could not update: " + error.message;
    } finally {
      polling = false;
    }
  }

  wireEvaluateForm();
  wireArrivalForm();
  poll();
  refreshEvaluations().catch(() => {});
  window.setInterval(() => {
    if (!document.hidden) poll();
  }, 1000 * config.poll_seconds);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) poll();
  });
})();
