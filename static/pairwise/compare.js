/* The pairwise page: fetch a pair, time it (minus pauses), submit left / tie / right (or a
   clearly-irrelevant side), fetch the next. Talks only to the REST API; no reload per answer.
   The timer, pause, undo, help, keyboard and highlighting it shares with the graded page live
   in labeling/judging-common.js. */
(function () {
  "use strict";

  const common = window.JudgingCommon;
  const $ = common.$;
  const config = JSON.parse($("judge-config").textContent);
  const OUTCOME_NAMES = {
    left: "left is more relevant", tie: "equally relevant", right: "right is more relevant",
    left_bad: "left is clearly irrelevant", right_bad: "right is clearly irrelevant",
  };
  const answers = $("answers");
  const page = common.session({
    config: config, answers: answers, render: renderPair, csrfFallback: "",
    phoneStart: () => document.querySelector(".side-switch"),
    onEmpty: () => { page.els.progressText.textContent = ""; },
    describe: (pair) => "Left: " + docName(pair.left) + ". Right: " + docName(pair.right) + ".",
  });
  const renderEmpty = page.renderEmpty;
  const progressBar = $("progress-bar");
  const campaignProgress = $("campaign-progress-text");
  const UNITS = config.mode === "topk" ? "lists" : "pairs";

  function docName(document) {
    return (document && (document.title || document.docno)) || "untitled";
  }

  // ---------- Rendering ----------
  function renderDocument(side, doc, terms) {
    const parts = { docno: $(side + "-docno"), title: $(side + "-title"), url: $(side + "-url"), body: $(side + "-body") };
    common.renderDocument(parts, doc, terms, "");
    $(side + "-doc").classList.remove("chosen");
  }

  // On a phone one document shows at a time (pairwise.css): the switch picks which; a new pair
  // starts with the left one.
  const root = document.querySelector("main.judge");
  const sideButtons = Array.from(document.querySelectorAll(".side-switch button"));
  function showSide(side) {
    root.dataset.side = side;
    for (const button of sideButtons) button.setAttribute("aria-pressed", String(button.dataset.side === side));
  }
  for (const button of sideButtons) button.addEventListener("click", () => showSide(button.dataset.side));
  showSide("left");

  function renderPair(pair) {
    showSide("left");
    const topic = pair.topic || {};
    const terms = common.queryTerms(topic);
    page.renderTopic(topic);
    renderDocument("left", pair.left || {}, terms);
    renderDocument("right", pair.right || {}, terms);
    const progress = pair.progress;
    page.els.progressText.textContent = progress
      ? "This topic: your top " + progress.k + " of " + progress.documents + " documents, " +
        progress.judgments + (progress.judgments === 1 ? " comparison" : " comparisons") + " so far"
      : "Pairwise preferences";
    page.els.item.dataset.task = String(pair.task);
    page.showItem();
  }

  const refreshProgressSoon = common.throttledProgress(refreshProgress);

  async function refreshProgress() {
    let result;
    try {
      result = await page.api("GET", config.progress_url);
    } catch (error) {
      return;  // the next answer tries again
    }
    const data = result.data;
    if (result.status !== 200 || !data) return;
    // For a pair campaign the units are the top-k lists (or the drawn pairs): pool_size of
    // them, open_tasks not done yet.
    const total = Number(data.pool_size) || 0;
    const done = Math.max(0, total - (Number(data.open_tasks) || 0));
    const share = total > 0 ? done / total : 0;
    progressBar.style.width = (100 * share).toFixed(1) + "%";
    progressBar.parentElement.setAttribute("aria-valuenow", (100 * share).toFixed(0));
    let text = data.judgments + " comparisons";
    if (total > 0) text += " · " + done + " of " + total + " " + UNITS + " done";
    if (data.budget_unit === "judgments" && data.budget > 0) {
      text += " · " + Math.round(100 * Math.min(1, data.spent / data.budget)) + "% of the budget used";
    }
    campaignProgress.textContent = text;
  }

  // ---------- Actions ----------
  function loadNext() {
    // Progress after the item: the first /next/ of a campaign makes its lists, which the
    // progress line counts.
    return page.load(config.next_url, ({ status, data }) => {
      if (status === 204) {
        renderEmpty("Nothing left for you right now",
          "Every query of this campaign is done, taken by another assessor or one you skipped, or the " +
          "campaign is paused. Thank you! This page checks again by itself every half minute.",
          true, page.nothingLeftRecheckMs);
      } else if (status === 403 || status === 404) {
        renderEmpty("Not available", (data && data.detail) || "You are not assigned to this campaign.", false);
      } else {
        renderEmpty("Something went wrong", "The server answered " + status + ".", true);
      }
    }).finally(refreshProgressSoon);
  }

  async function submit(outcome) {
    const button = answers.querySelector('button[data-outcome="' + outcome + '"]');
    const side = outcome === "left" || outcome === "right" ? $(outcome + "-doc") : null;
    const sent = await page.answer(button, (task) => config.answer_url.replace("{task}", task),
      (seconds) => ({ outcome: outcome, seconds: seconds }), side);
    if (sent === null) return;
    const result = sent.result;
    if (result.status === 201) {
      page.saved(sent, OUTCOME_NAMES[outcome]);
      await loadNext();
    } else if (result.status === 409) {
      page.toast((result.data && result.data.detail) || "This pair is no longer pending; here is the current one.", 3500);
      await loadNext();
    } else {
      page.notSaved(result, button);
    }
  }

  function undo() {
    return page.undo(() => config.undo_url, "Undone: compare this pair again.", refreshProgressSoon);
  }

  // On a phone the query's text is cut to two lines: a tap shows all of it, another cuts it again.
  const queryPanel = document.querySelector(".judge.pairwise .query");
  if (queryPanel) queryPanel.addEventListener("click", () => queryPanel.classList.toggle("expanded"));

  if (config.skip_url) {
    common.skipBox(page, {
      url: (task) => config.skip_url.replace("{task}", task), kind: "pair", unit: config.skip_unit,
      loadNext: loadNext,
    });
  }

  page.start({
    // The assessor's keys (labeling/shortcuts.py); Q / W only where the campaign offers them.
    answerOfKey: common.shortcuts.answers([
      ["pair_left", "left"], ["pair_right", "right"], ["pair_tie", "tie"], ["pair_tie_letter", "tie"],
      ...(config.allow_bad_shortcut ? [["pair_left_bad", "left_bad"], ["pair_right_bad", "right_bad"]] : []),
    ]),
    submit: submit,
    answerSelector: "button[data-outcome]",
    answerOfButton: (button) => button.dataset.outcome,
    undo: undo,
    loadNext: loadNext,
  });
})();
