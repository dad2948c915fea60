/* The assessor page: fetch an item, time it (minus pauses), submit a grade, fetch the next.
   Talks only to the REST API; no page reload per judgment. The timer, pause, undo, help,
   keyboard and highlighting it shares with the pairwise page live in judging-common.js. */
(function () {
  "use strict";

  const common = window.JudgingCommon;
  const $ = common.$;
  const config = JSON.parse($("judge-config").textContent);
  const grades = $("grades");
  const doc = { docno: $("doc-docno"), title: $("doc-title"), url: $("doc-url"), body: $("doc-body") };
  const progressBar = $("progress-bar");
  const page = common.session({
    config: config, answers: grades, render: renderItem, csrfFallback: config.csrf_token,
    describe: (item) => "Document: " + docName(item.document) + ".",
  });
  const api = page.api;
  const toast = page.toast;
  const renderEmpty = page.renderEmpty;

  // A session that expired (hours of judging) shows as 401/403 "credentials": log in again
  // and come back here.
  function loggedOut(result) {
    const detail = (result.data && result.data.detail) || "";
    if (result.status === 401 || (result.status === 403 && /credentials/i.test(detail))) {
      window.location.assign(config.login_url + "?next=" + encodeURIComponent(window.location.pathname));
      return true;
    }
    return false;
  }

  function docName(document) {
    return (document && (document.title || document.docno)) || "untitled";
  }

  // ---------- Rendering ----------
  function renderItem(item) {
    const topic = item.topic || {};
    const terms = common.queryTerms(topic);
    page.renderTopic(topic);
    common.renderDocument(doc, item.document || {}, terms, " and judge it there");
    page.showItem();
  }

  const refreshProgressSoon = common.throttledProgress(refreshProgress);

  async function refreshProgress() {
    const { status, data } = await api("GET", config.progress_url);
    if (status === 200 && data) renderProgress(data);
  }

  // The last counts the server sent, with this page's own judgments since: the bar asks the
  // server at most every 10 s, and an assessor's own judgment shows at once, in the count and in
  // the share of the budget (one judgment in a budget of judgments; in cost or hours, what a
  // judgment has spent on average so far, until the server's next figures).
  let shownProgress = null;

  function countOwn(change) {
    if (!shownProgress) return;
    const judgments = Number(shownProgress.judgments) || 0;
    const spent = Number(shownProgress.spent) || 0;
    const each = shownProgress.budget_unit === "judgments" ? 1 : judgments > 0 ? spent / judgments : 0;
    renderProgress({
      ...shownProgress,
      judgments: Math.max(0, judgments + change),
      spent: Math.max(0, spent + change * each),
    });
  }

  function renderProgress(data) {
    shownProgress = data;
    const budget = Number(data.budget) || 0;
    const spent = Number(data.spent) || 0;
    const share = budget > 0 ? Math.min(1, spent / budget) : 0;
    progressBar.style.width = (100 * share).toFixed(1) + "%";
    progressBar.parentElement.setAttribute("aria-valuenow", (100 * share).toFixed(0));
    page.els.progressText.textContent =
      data.judgments + (Number(data.judgments) === 1 ? " judgment · " : " judgments · ") + Math.round(100 * share) + "% of the budget used";
  }

  // ---------- Actions ----------
  async function loadNext() {
    let away = false;
    await page.load(config.next_url, async (result) => {
      const { status, data } = result;
      if (loggedOut(result)) {
        away = true;
      } else if (status === 204) {
        await explainNothingLeft();
      } else if (status === 403) {
        renderEmpty("Not available", (data && data.detail) || "You are not assigned to this campaign.", false);
      } else if (status === 409) {
        renderEmpty("Campaign not running", (data && data.detail) || "The coordinator has paused this campaign.", true);
      } else {
        renderEmpty("Something went wrong", "The server answered " + status + ".", true);
      }
    });
    if (!away) refreshProgressSoon();
  }

  const NEXT_ROUND_POLL_MS = 4000;

  // 204 means nothing is leasable for this assessor; the progress record says why.
  async function explainNothingLeft() {
    let progress = null;
    try {
      const answer = await api("GET", config.progress_url);
      if (answer.status === 200) progress = answer.data;
    } catch (error) { progress = null; }
    // The end screen must not sit beside a header the throttled refresh has not caught up with.
    if (progress) renderProgress(progress);
    // The server names the state (and says it in words); older servers only give the status.
    const phase = progress ? (progress.state || progress.status) : "running";
    const message = progress && progress.message;
    if (phase === "paused") {
      renderEmpty("Campaign paused", message || "The coordinator has paused this campaign. Your work so far is saved.", true);
    } else if (phase === "budget_spent" || (progress && progress.remaining <= 0)) {
      renderEmpty("The budget is spent", message || "This campaign has all the judgments it pays for. Thank you!", false);
    } else if (phase === "done") {
      renderEmpty("All done", message || "Every item of this campaign is judged. Thank you for your work!", false);
    } else if (phase === "draft") {
      renderEmpty("Not started yet", message || "The coordinator has not started this campaign yet.", true);
    } else if (phase === "next_round") {
      // A training campaign between rounds: the worker fits and selects; ask again by itself.
      renderEmpty("The next round is being selected",
        "A model is fitted on the labels so far to choose the most useful items to judge next. " +
        "They appear here in a few seconds; this page checks by itself.", true, NEXT_ROUND_POLL_MS);
    } else if (phase === "refitting") {
      // The judged strategy's first stage is drawn: the worker fits the judge's calibration.
      renderEmpty("New items are being prepared", message ||
        "The sampling is being refitted on the answers so far: new items appear in a few seconds. " +
        "This page checks by itself.", true, NEXT_ROUND_POLL_MS);
    } else {
      renderEmpty("Nothing left for you right now",
        "Every remaining item is judged, being judged by someone else, or one you skipped. Items " +
        "whose lease runs out come back: this page checks again by itself every half minute.",
        true, page.nothingLeftRecheckMs);
    }
  }

  async function submit(grade) {
    const button = grades.querySelector('button[data-grade="' + grade + '"]');
    // ?next=1: the answer also leases the next item, so a judgment is one round trip.
    const sent = await page.answer(button, (task) => config.answer_url.replace("{task}", task) + "?next=1",
      (seconds) => (note.value.trim() ? { grade: grade, seconds: seconds, note: note.value.trim() } : { grade: grade, seconds: seconds }));
    if (sent === null) return;
    const result = sent.result;
    if (loggedOut(result)) return;
    if (result.status === 200 || result.status === 201) {
      closeNote();
      page.saved(sent, gradeName(grade));
      if (result.status === 201) countOwn(1);  // 200: a repeated submit, stored once already
      const upcoming = result.data && result.data.next;
      if (upcoming && upcoming.kind === "grade") {
        page.show(upcoming, 0);
        page.setAnswersEnabled(!page.state.paused);
        refreshProgressSoon();
      } else {
        await loadNext();  // nothing left (null) or another kind of item: the usual path explains
      }
    } else if (result.status === 409) {
      toast("This item's lease expired; here is a fresh one.", 3500);
      await loadNext();
    } else {
      page.notSaved(result, button);
    }
  }

  function undo() {
    return page.undo((last) => config.undo_url.replace("{task}", last.task),
      "Undone: judge this item again.", () => {
        countOwn(-1);
        refreshProgressSoon();
      });
  }

  function gradeName(value) {
    const grade = config.grades.find((g) => g.value === value);
    return grade ? grade.name : String(value);
  }

  // ---------- Note and skip ----------
  const note = $("note"), noteRow = $("note-row"), noteButton = $("note-button");

  function openNote() {
    noteRow.hidden = false;
    noteButton.setAttribute("aria-expanded", "true");
    note.focus();
    // On a phone the grade bar covers the foot of the window: bring the box above it.
    note.scrollIntoView({ block: "center" });
  }

  function closeNote() {
    note.value = "";
    noteRow.hidden = true;
    noteButton.setAttribute("aria-expanded", "false");
  }

  // Each grade's key is the assessor's (labeling/shortcuts.py: the campaign's own by default).
  const keys = common.shortcuts;
  const answerOfKey = keys.answers(config.grades.map((g) => ["grade_" + g.value, g.value]));
  const gradeKeys = new Set(answerOfKey.keys());
  const skipBox = common.skipBox(page, {
    url: (task) => config.skip_url.replace("{task}", task), kind: "grade", unit: "item",
    reserved: gradeKeys, loggedOut: loggedOut, loadNext: loadNext, onSkipped: closeNote,
  });
  noteButton.addEventListener("click", () => (noteRow.hidden ? openNote() : closeNote()));
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.metaKey || event.ctrlKey || event.repeat || skipBox.isOpen()) return;
    const key = keys.typed(event);
    const target = event.target;
    if (target === note) {
      if (key === "Escape") closeNote();
      // Enter keeps the note for the next grade and gives the keys back to grading.
      if (key === "Enter") { event.preventDefault(); note.blur(); }
      return;
    }
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA")) return;
    if (gradeKeys.has(key) || !$("help").hidden) return;  // a campaign's own keys win
    if (keys.key("note") && key === keys.key("note")) { event.preventDefault(); openNote(); }
  }, true);

  page.start({
    answerOfKey: answerOfKey,
    submit: submit,
    answerSelector: "button[data-grade]",
    answerOfButton: (button) => Number(button.dataset.grade),
    undo: undo,
    loadNext: loadNext,
  });
})();
