/* The SxS dashboard's learned-DCG section: polls GET /api/campaigns/{id}/learned-dcg/ and redraws
   its charts and leaderboard in place when the fit changes; "Use these gains and discounts in
   campaign…" posts to .../learned-dcg/apply/. Draws with the shared helpers (window.Charts). */
(function () {
  "use strict";

  const C = window.Charts;
  const config = JSON.parse(document.getElementById("learned-dcg-config").textContent);
  const $ = (id) => document.getElementById(id);
  const COLOURS = { learned: "#1f5fa8", learned_dcg: "#1f5fa8", exp: "#b3261e", linear: "#9a5b00" };
  const NAMES = { learned: "learned", learned_dcg: "learned DCG", exp: "DCG, gain 2^y−1", linear: "DCG, gain y" };
  // The diagnostics' columns (the stored diagnostics also hold "utility", the full T(W)).
  const DIAGNOSED = ["learned_dcg", "exp", "linear"];
  const WIDTH = 420;
  const HEIGHT = 250;
  const BOX = { left: 56, right: WIDTH - 14, top: 12, bottom: HEIGHT - 46 };
  let shown = "";
  let busy = false;

  function stamp(ok) {
    $("learned-dcg-dot").classList.toggle("stale", !ok);
    $("learned-dcg-updated").textContent = (ok ? "updated " : "stale since ") + new Date().toLocaleTimeString([], { hourCycle: "h23" });
  }

  function legend(node, keys, extra) {
    C.clear(node);
    for (const key of keys) {
      const swatch = C.el("span", { class: "swatch" });
      swatch.style.background = COLOURS[key]; // CSSOM, not a style attribute
      node.append(C.el("span", { class: "legend-item" }, [swatch, NAMES[key]]));
    }
    if (extra) node.append(C.el("span", { class: "small muted", text: extra }));
  }

  /** Lines over x with points; `series`: [{key, values, low?, high?, labelled?}]. An interval
      that reaches beyond `yRange` is cut at the axis and ends in an open arrow there (its whole
      extent is in the point's tooltip). Returns how many intervals were cut. */
  function lineChart(node, xs, series, labels, yRange) {
    C.clear(node);
    const root = C.svg("svg", { viewBox: "0 0 " + WIDTH + " " + HEIGHT, class: "chart", role: "img", "aria-label": labels.aria });
    const all = series.flatMap((s) => [...s.values, ...(s.low || []), ...(s.high || [])]);
    const [y0, y1] = yRange || C.extent(all, true);
    const x = C.scale(xs[0], xs[xs.length - 1] === xs[0] ? xs[0] + 1 : xs[xs.length - 1], BOX.left + 10, BOX.right - 10);
    const y = C.scale(y0, y1, BOX.bottom, BOX.top);
    const xTicks = xs.length <= 12 ? xs : C.ticks(xs[0], xs[xs.length - 1], 6);
    C.axes(root, x, y, BOX, xTicks, C.ticks(y0, y1, 5), labels);
    let cut = 0;
    for (const s of series) {
      const colour = COLOURS[s.key];
      const group = C.svg("g", { class: "series series-" + s.key });
      const points = xs.map((xv, i) => [x(xv), y(s.values[i])]).filter((p, i) => Number.isFinite(s.values[i]));
      group.append(C.svg("polyline", { points: points.map((p) => p.join(",")).join(" "), fill: "none", stroke: colour, "stroke-width": s.key === "learned" ? 2.4 : 1.6, "stroke-dasharray": s.key === "learned" ? null : "5 3" }));
      xs.forEach((xv, i) => {
        const value = s.values[i];
        if (!Number.isFinite(value)) return;
        if (s.low && Number.isFinite(s.low[i]) && Number.isFinite(s.high[i])) {
          const low = Math.max(y0, s.low[i]), high = Math.min(y1, s.high[i]);
          group.append(C.svg("line", { x1: x(xv), x2: x(xv), y1: y(low), y2: y(high), stroke: colour, "stroke-width": 1.4, class: "interval" }));
          for (const [end, beyond, towards] of [[high, s.high[i] > y1, -1], [low, s.low[i] < y0, 1]]) {
            if (!beyond) continue;
            cut += 1;
            const tip = y(end);
            group.append(C.svg("polyline", { points: [[x(xv) - 4, tip - 5 * towards], [x(xv), tip], [x(xv) + 4, tip - 5 * towards]].map((p) => p.join(",")).join(" "), fill: "none", stroke: colour, "stroke-width": 1.4, class: "interval-cut" }));
          }
        }
        const tip = labels.point(xv, i) + ": " + NAMES[s.key] + " " + C.fmt(value, 3) + (s.low ? " " + C.fmtInterval([s.low[i], s.high[i]]) : "");
        group.append(C.titled(C.svg("circle", { cx: x(xv), cy: y(value), r: s.key === "learned" ? 3.6 : 2.6, fill: colour, "data-value": value }), tip));
        if (s.labelled) {
          const last = i === xs.length - 1;
          group.append(C.svg("text", { x: x(xv) + (last ? -6 : 6), y: y(value) - 6, class: "tick value", "text-anchor": last ? "end" : "start", text: C.fmt(value, 3) }));
        }
      });
      root.append(group);
    }
    node.append(root);
    return cut;
  }

  /** The values' range with some room, never the intervals': a few wide bootstrap intervals
      would squeeze the estimates into a line (they are cut at the axis instead). */
  function valueRange(values, floor, ceiling) {
    const finite = values.filter(Number.isFinite);
    return [Math.min(floor, ...finite), Math.max(ceiling, ...finite) * 1.15];
  }

  function cutNote(cut) {
    return cut ? " · " + cut + " interval end" + (cut === 1 ? "" : "s") + " beyond the chart (open arrows; hover a point for the whole interval): few answers, wide intervals" : "";
  }

  function heatmap(node, table, gradeNames) {
    C.clear(node);
    const rows = table.length;
    const cols = table[0].length;
    const cell = { w: Math.min(70, (WIDTH - 90) / cols), h: Math.min(26, (HEIGHT - 40) / rows) };
    const height = 34 + rows * cell.h;
    const root = C.svg("svg", { viewBox: "0 0 " + WIDTH + " " + height, class: "chart", role: "img", "aria-label": "T(W) by position and grade" });
    const top = Math.max(...table.flat().map(Math.abs)) || 1;
    gradeNames.forEach((name, j) => root.append(C.svg("text", { x: 70 + (j + 0.5) * cell.w, y: 16, class: "tick", "text-anchor": "middle", text: name })));
    table.forEach((row, i) => {
      root.append(C.svg("text", { x: 62, y: 26 + (i + 0.65) * cell.h, class: "tick", "text-anchor": "end", text: "position " + (i + 1) }));
      row.forEach((value, j) => {
        const share = Math.max(0, Math.min(1, Math.abs(value) / top));
        const fill = value >= 0 ? "rgba(31, 95, 168, " + (0.08 + 0.85 * share).toFixed(3) + ")" : "rgba(179, 38, 30, " + (0.08 + 0.85 * share).toFixed(3) + ")";
        root.append(C.titled(C.svg("rect", { x: 70 + j * cell.w, y: 24 + i * cell.h, width: cell.w - 2, height: cell.h - 2, fill: fill }), "position " + (i + 1) + ", " + gradeNames[j] + ": " + C.fmt(value, 3)));
        root.append(C.svg("text", { x: 70 + (j + 0.5) * cell.w, y: 24 + (i + 0.65) * cell.h, class: share > 0.55 ? "tick on-dark" : "tick", "text-anchor": "middle", text: C.fmt(value, 2) }));
      });
    });
    node.append(root);
  }

  function normalised(values) {
    const top = values[values.length - 1] || 1;
    return values.map((v) => v / top);
  }

  const score = (value) => (value === null || value === undefined ? "—" : C.fmt(value));
  const rank = (value) => (value === null || value === undefined ? "—" : String(value));

  function drawLeaderboard(data) {
    const body = $("learned-leaderboard").querySelector("tbody");
    C.clear(body);
    for (const row of data.leaderboard) {
      const moved = row.rank_learned_dcg !== null && row.rank_learned_dcg !== row.rank_standard;
      body.append(
        C.el("tr", { "data-system": row.system, class: moved ? "strong" : null }, [
          C.el("td", { text: row.system }),
          C.el("td", { class: "num learned", text: score(row.learned_dcg) }),
          C.el("td", { class: "num", text: rank(row.rank_learned_dcg) }),
          C.el("td", { class: "num standard", text: score(row.standard) }),
          C.el("td", { class: "num", text: rank(row.rank_standard) }),
          C.el("td", { class: "num utility", text: score(row.utility) }),
          C.el("td", { class: "num utility", text: rank(row.rank_utility) }),
        ])
      );
    }
    const old = data.leaderboard.length && data.leaderboard[0].learned_dcg === null;
    const tau = data.kendall_tau;
    let words = old
      ? "This fit was stored before the leaderboard had a learned DCG column; it appears at the campaign's next refresh."
      : "Kendall's τ against standard DCG: learned DCG " + C.fmt(tau, 3) + (tau === 1 ? " (the same order)" : "");
    words += "; learned utility (full W) " + C.fmt(data.kendall_tau_utility, 3) + ".";
    const answers = data.disagreeing_answers;
    if (answers) {
      words += " On " + answers.count + " answered comparisons learned and standard DCG pick different winners";
      words += answers.count ? " (the assessors sided with learned DCG in " + answers.learned_right + ", with standard DCG in " + answers.standard_right + ")." : ".";
    }
    const utilityFlips = (data.utility_disagreements || []).length;
    if (utilityFlips) words += " The learned utility orders " + utilityFlips + " pair" + (utilityFlips === 1 ? "" : "s") + " of systems differently from standard DCG.";
    if (data.unjudged === "judge" && data.ungraded) words += " " + data.ungraded + " listed documents are still ungraded (counted as 0 here).";
    $("learned-tau").textContent = words;
    const list = $("learned-disagreements");
    C.clear(list);
    for (const flip of data.disagreements) {
      list.append(C.el("li", { text: flip.first + " vs " + flip.second + ": learned DCG says " + (flip.learned_dcg_difference > 0 ? flip.first : flip.second) + " (by " + C.fmt(Math.abs(flip.learned_dcg_difference), 3) + "), standard DCG says " + (flip.standard_difference > 0 ? flip.first : flip.second) + " (by " + C.fmt(Math.abs(flip.standard_difference), 3) + ")" }));
    }
    if (!data.disagreements.length && !old) list.append(C.el("li", { class: "muted", text: "No pair of systems changes order between learned and standard DCG." }));
  }

  /** Grouped bars: one group per bin, one bar per metric, accuracy 0-1 (the table below holds
      the same numbers for screen readers and for copying). */
  function barChart(node, groups, labels) {
    C.clear(node);
    const root = C.svg("svg", { viewBox: "0 0 " + WIDTH + " " + HEIGHT, class: "chart", role: "img", "aria-label": labels.aria });
    const y = C.scale(0, 1, BOX.bottom, BOX.top);
    const slot = (BOX.right - BOX.left) / Math.max(groups.length, 1);
    const x = (i) => BOX.left + (i + 0.5) * slot;
    C.axes(root, x, y, BOX, [], C.ticks(0, 1, 5), labels);
    const bar = Math.min(22, (slot * 0.8) / DIAGNOSED.length);
    groups.forEach((group, i) => {
      root.append(C.svg("text", { x: x(i), y: BOX.bottom + 14, class: "tick", "text-anchor": "middle", text: group.label }));
      DIAGNOSED.forEach((key, j) => {
        const value = group.accuracy[key];
        if (!Number.isFinite(value)) return;
        const left = x(i) + (j - DIAGNOSED.length / 2) * bar;
        const rect = C.svg("rect", { x: left, y: y(value), width: bar - 2, height: y(0) - y(value), fill: COLOURS[key], class: "bar bar-" + key, "data-value": value });
        root.append(C.titled(rect, group.label + ": " + NAMES[key] + " " + C.percent(value) + " of " + group.answers));
      });
    });
    node.append(root);
  }

  function cells(row) {
    return DIAGNOSED.map((key) => C.el("td", { class: "num " + key, text: Number.isFinite(row.accuracy[key]) ? C.percent(row.accuracy[key]) : "—" }));
  }

  function drawDiagnostics(data) {
    const diagnostics = data.diagnostics;
    const note = $("learned-diagnostics-note");
    const byDifference = $("learned-by-difference").querySelector("tbody");
    const byStrength = $("learned-by-strength").querySelector("tbody");
    C.clear(byDifference);
    C.clear(byStrength);
    C.clear($("learned-by-difference-chart"));
    if (!diagnostics) {
      note.textContent = "The diagnostics appear at the campaign's next refresh (this fit was stored without them).";
      $("learned-ties").textContent = "";
    } else {
      note.textContent =
        "Share of the " + diagnostics.scored + " answers with a direction that each metric predicts (a predicted exact tie counts half). " +
        (diagnostics.in_sample
          ? "In sample: learned DCG was fitted on these same answers, so its share here is optimistic (the standard DCGs were not fitted); the held-out accuracy above is the fair comparison."
          : "Held out: each answer scored by a fit that did not see its topic.");
      const groups = diagnostics.by_difference.map((bin) => ({ ...bin, label: C.fmt(bin.low, 2) + "–" + C.fmt(bin.high, 2) }));
      barChart($("learned-by-difference-chart"), groups, { x: "|DCG difference| of the two lists", y: "share predicted right", aria: "accuracy of learned and standard DCG by bins of the standard DCG difference" });
      legend($("learned-by-difference-legend"), DIAGNOSED);
      for (const group of groups) {
        byDifference.append(C.el("tr", {}, [C.el("td", { text: group.label }), C.el("td", { class: "num", text: String(group.answers) }), ...cells(group)]));
      }
      for (const row of diagnostics.by_strength) {
        const gap = row.mean_difference.learned_dcg;
        byStrength.append(
          C.el("tr", { "data-strength": row.preference }, [
            C.el("td", { text: row.strength }),
            C.el("td", { class: "num", text: String(row.answers) }),
            ...cells(row),
            C.el("td", { class: "num", text: Number.isFinite(gap) ? C.fmt(gap, 3) : "—" }),
          ])
        );
      }
      $("learned-ties").textContent =
        "About the same: " + diagnostics.ties + " answer" + (diagnostics.ties === 1 ? "" : "s") + ", " + C.percent(diagnostics.tie_share) + " of the answers on lists that differ (in neither table)" +
        (diagnostics.identical ? "; " + diagnostics.identical + (diagnostics.identical === 1 ? " answer" : " answers") + " on lists with the same grades carry no information and are left out." : ".");
    }
    const curve = data.tie_curve || [];
    $("learned-tie-curve-box").hidden = !curve.length;
    const tbody = $("learned-tie-curve").querySelector("tbody");
    C.clear(tbody);
    for (const row of curve) {
      tbody.append(
        C.el("tr", { class: row.chosen ? "strong" : null }, [
          C.el("td", { class: "num", text: row.c_tie === null || row.c_tie === undefined ? "(likelihood: no Cₜ)" : C.fmt(row.c_tie, 3) + (row.chosen ? " (chosen)" : "") }),
          C.el("td", { class: "num", text: Number.isFinite(row.ties_predicted) ? C.percent(row.ties_predicted) : "—" }),
          C.el("td", { class: "num", text: Number.isFinite(row.strict_accuracy) ? C.percent(row.strict_accuracy) : "—" }),
        ])
      );
    }
  }

  // The held-out accuracies in the order shown; a fit stored by an earlier version has only
  // learned (then the full W's), exp and linear.
  const ACCURACIES = [
    ["learned", "Learned DCG (gains × discounts; C chosen without the held-out topics)"],
    ["learned_full_w", "Learned utility, full W (not a DCG)"],
    ["learned_best_of_grid", "Learned DCG at the best C of the grid (optimistic: C chosen on the held-out topics themselves)"],
    ["exp", "DCG, gain 2^y−1"],
    ["linear", "DCG, gain y"],
  ];

  function items(node, sentences) {
    const list = node.querySelector("ul");
    C.clear(list);
    for (const sentence of sentences) list.append(C.el("li", { text: sentence }));
    node.hidden = !sentences.length;
  }

  /** Which fit was used, its grid warnings (prominent) and notes (quiet), the held-out
      accuracies and how the intervals were made. */
  function drawFit(data) {
    let words = data.method_words ? "Fitted by " + data.method_words : "Fitted by an earlier version";
    words += " · C = " + C.fmt(data.c, 3);
    if (data.c_grid && data.c_grid.length) words += " (tried " + data.c_grid.map((c) => C.fmt(c, 3)).join(", ") + ")";
    if (data.method === "qp") {
      words += " · Cₜ = " + C.fmt(data.c_tie, 3);
      if (data.c_tie_grid && data.c_tie_grid.length) words += " (tried " + data.c_tie_grid.map((c) => C.fmt(c, 3)).join(", ") + ")";
    }
    const options = data.options || {};
    if (options.folds) words += " · " + options.folds + " folds";
    if (options.ties === false) words += " · “about the same” answers not used";
    if (options.monotone_discounts) words += " · discounts never grow down the list";
    if (data.method === "qp" && options.much_better_margin && options.much_better_margin !== 1) words += " · “much better” margin " + C.fmt(options.much_better_margin, 3);
    $("learned-fit-method").textContent = words + ".";
    items($("learned-fit-warnings"), data.grid_warnings || []);
    items($("learned-fit-notes"), data.grid_notes || []);

    const body = $("learned-accuracy").querySelector("tbody");
    C.clear(body);
    const accuracy = data.accuracy || {};
    for (const [key, label] of ACCURACIES) {
      if (accuracy[key] === null || accuracy[key] === undefined) continue;
      const name = key === "learned" && !data.method ? "Learned (a fit stored by an earlier version)" : label;
      body.append(C.el("tr", { "data-accuracy": key, class: key === "learned_best_of_grid" ? "muted" : null }, [C.el("td", { text: name }), C.el("td", { class: "num", text: C.percent(accuracy[key]) })]));
    }

    let intervals = data.interval_method ? "95 % intervals: " + data.interval_method + "." : "95 % intervals: bootstrap over topics (a fit stored by an earlier version).";
    if (data.bootstrap_failed) intervals += " " + data.bootstrap_failed + " replicate" + (data.bootstrap_failed === 1 ? "" : "s") + " failed to fit and " + (data.bootstrap_failed === 1 ? "is" : "are") + " left out.";
    $("learned-interval-method").textContent = intervals;
    const widened = data.widened || [];
    $("learned-widened").hidden = !widened.length;
    $("learned-widened").textContent = widened.length
      ? "Widened to contain the estimate: " + widened.join(", ") + ". The bootstrap put the estimate outside its own interval, so read these intervals as rough."
      : "";
    const coverage = data.coverage && data.coverage.sentence;
    $("learned-coverage").hidden = !coverage;
    $("learned-coverage").textContent = coverage || "";
  }

  function draw(data) {
    const fitted = data.status === "fitted";
    $("learned-dcg-body").hidden = !fitted;
    const form = $("learned-apply");
    if (form) form.hidden = !fitted;
    if (!fitted) {
      const more = data.needed ? " At least " + data.needed + " more informative answers are needed." : "";
      $("learned-dcg-status").textContent = "No fit yet: " + data.reason + "." + (data.reason.includes("more needed") ? "" : more);
      return;
    }
    $("learned-dcg-status").textContent =
      "Learned from " + data.answers + " answers (" + data.pairs + " with a direction, " + data.ties + " about the same) on " + new Date(data.fitted_at).toLocaleString([], { hourCycle: "h23" }) + "; refitted as answers arrive.";
    drawFit(data);

    const grades = data.grade_names.map((_, i) => i);
    const top = grades.length - 1;
    const gradeLabel = (g) => data.grade_names[g] || String(g);
    const gainsCut = lineChart(
      $("learned-gains-chart"),
      grades,
      [
        { key: "exp", values: normalised(grades.map((g) => Math.pow(2, g) - 1)) },
        { key: "linear", values: grades.map((g) => g / (top || 1)) },
        { key: "learned", values: data.gains, low: data.gains_low, high: data.gains_high, labelled: true },
      ],
      { x: "grade (" + data.grade_names.join(", ") + ")", y: "gain (worst 0, best 1)", aria: "learned gains per grade", point: (g) => gradeLabel(g) },
      valueRange(data.gains, 0, 1)
    );
    legend($("learned-gains-legend"), ["learned", "exp", "linear"], cutNote(gainsCut).replace(/^ · /, ""));

    const positions = data.discounts.map((_, i) => i + 1);
    const discountsCut = lineChart(
      $("learned-discounts-chart"),
      positions,
      [
        { key: "exp", values: positions.map((k) => 1 / Math.log2(1 + k)) },
        { key: "learned", values: data.discounts, low: data.discounts_low, high: data.discounts_high, labelled: positions.length <= 10 },
      ],
      { x: "position", y: "discount (position 1 = 1)", aria: "learned discounts per position", point: (k) => "position " + k },
      valueRange(data.discounts, 0, 1)
    );
    legend($("learned-discounts-legend"), ["learned"], "dashed: 1/log2(1+k)" + cutNote(discountsCut));

    heatmap($("learned-heatmap"), data.transformed, data.grade_names);
    // σ₂/σ₁ measures how far T(W) is from gain × discount; whether the answers contradict that
    // form is the likelihood-ratio test's to say (no cut-off on the ratio).
    $("learned-sigma").textContent =
      "σ₂/σ₁ = " + C.fmt(data.sigma_ratio, 3) + " " + C.fmtInterval([data.sigma_ratio_low, data.sigma_ratio_high]) +
      ": how far the table is from a gain per grade times a discount per position (0: exactly that form).";
    $("learned-form-test").textContent = data.form_test && data.form_test.sentence
      ? data.form_test.sentence
      : "The test of the DCG form appears at the campaign's next refresh (this fit was stored without it).";

    const curve = data.accuracy_curve || [];
    if (curve.length) {
      lineChart(
        $("learned-accuracy-chart"),
        curve.map((p) => p.answers),
        ["learned", "exp", "linear"].map((key) => ({ key: key, values: curve.map((p) => p[key]) })),
        { x: "training answers", y: "held-out accuracy", aria: "accuracy against answers", point: (n) => n + " answers" }
      );
      legend($("learned-accuracy-legend"), ["learned", "exp", "linear"], curve.length < 3 ? "a point is added each time the training answers double from 50" : "");
    }
    drawLeaderboard(data);
    drawDiagnostics(data);
  }

  async function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const data = await C.getJson(config.learned_url);
      const text = JSON.stringify(data);
      if (text !== shown) {
        draw(data);
        shown = text;
      }
      stamp(true);
    } catch (error) {
      stamp(false);
    } finally {
      busy = false;
    }
  }

  const form = $("learned-apply");
  if (form) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const result = $("learned-apply-result");
      const target = $("learned-apply-target").value;
      result.textContent = "Saving…";
      try {
        const response = await fetch(config.apply_url, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": C.csrfToken() },
          body: JSON.stringify({ campaign: Number(target) }),
        });
        const body = await response.json().catch(() => ({}));
        C.clear(result);
        if (!response.ok) {
          result.textContent = "Not used: " + (body.detail || "the server answered " + response.status);
          return;
        }
        result.append("Done: that campaign now measures " + body.metric_label + ". ");
        result.append(C.el("a", { href: config.campaign_url.replace("{id}", body.campaign), id: "learned-apply-link", text: "Open it" }));
      } catch (error) {
        result.textContent = "Not used: the server did not answer.";
      }
    });
  }

  refresh();
  setInterval(refresh, 1000 * config.poll_seconds);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
})();
