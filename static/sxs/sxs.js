/* The side-by-side page: fetch an item, time it (minus pauses), submit an answer, fetch the
   next. An item is either a comparison of two result lists (kind "sxs", answered -2..2 as
   displayed) or a single document to grade first (kind "grade"). The timer, pause, undo, help
   and keyboard wiring come from labeling/judging-common.js. */
(function () {
  "use strict";

  const common = window.JudgingCommon;
  const $ = common.$;
  const config = JSON.parse($("judge-config").textContent);
  const answers = $("answers");
  const page = common.session({
    config: config, answers: answers, render: renderItem, csrfFallback: "",
    phoneStart: (item) => document.getElementById(item.kind === "sxs" ? "left-list" : "grade-doc"),
    onEmpty: () => { page.els.progressText.textContent = ""; },
    itemKind: () => kind,
    describe: (item) => (item.kind === "sxs"
      ? "Which list of top " + item.k + " results is better?"
      : "Document to grade: " + ((item.document && (item.document.title || item.document.docno)) || "untitled") + "."),
  });
  const els = {
    leftList: $("left-list"), rightList: $("right-list"), gradeDoc: $("grade-doc"),
    sxsAnswers: $("sxs-answers"), gradeAnswers: $("grade-answers"), extras: $("sxs-extras"),
    comment: $("comment"), commentLabel: $("comment-label"),
    progressBar: $("progress-bar"), campaignProgress: $("campaign-progress-text"),
  };
  const SXS_NAMES = {};
  for (const answer of config.answers) SXS_NAMES[answer.value] = answer.label;
  // The assessor's keys (labeling/shortcuts.py; a grade's is the campaign's own by default).
  const keys = common.shortcuts;
  const GRADE_OF_KEY = keys.answers(config.grades.map((grade) => ["grade_" + grade.value, grade.value]));
  const SXS_OF_KEY = keys.answers([
    ["sxs_left_much", -2], ["sxs_left", -1], ["sxs_same", 0], ["sxs_right", 1], ["sxs_right_much", 2],
    ["sxs_left_arrow", -1], ["sxs_same_arrow", 0], ["sxs_right_arrow", 1],
  ]);
  let kind = null;  // the kind of the item on screen

  // ---------- Rendering ----------
  function result(item, terms) {
    const li = document.createElement("li");
    const rank = document.createElement("span");
    rank.className = "rank";
    rank.textContent = String(item.rank);
    const body = document.createElement("div");
    body.style.minWidth = "0";
    const title = document.createElement("div");
    title.className = "title";
    title.appendChild(common.highlighted(item.title || item.docno, terms));
    title.title = item.title || item.docno;
    // The second line names where the result leads: its URL, else its docno (unless the docno
    // already stands in for a missing title).
    const url = document.createElement("div");
    url.className = "url";
    url.textContent = item.url || (item.title ? item.docno : "");
    url.hidden = !url.textContent;
    const excerpt = document.createElement("p");
    excerpt.className = "excerpt";
    excerpt.appendChild(common.highlighted(item.excerpt || "", terms));
    body.append(title, url, excerpt);
    li.append(rank, body);
    li.dataset.docno = item.docno;
    return li;
  }

  function renderList(id, items, terms) {
    const list = $(id);
    list.replaceChildren(...items.map((item) => result(item, terms)));
  }

  function showKind(next) {
    if (next !== kind) skipBox.close();
    kind = next;
    const sxs = next === "sxs";
    els.leftList.hidden = !sxs;
    els.rightList.hidden = !sxs;
    els.sxsAnswers.hidden = !sxs;
    els.gradeDoc.hidden = sxs;
    els.gradeAnswers.hidden = sxs;
    // One box: a comment on a comparison, a note on a single document's grade.
    els.commentLabel.textContent = sxs ? "Comment (optional)" : "Note on this grade (optional)";
    els.comment.placeholder = (sxs ? "Why? " : "e.g. only partly about the query ") + "(Enter or Esc leaves the box)";
  }

  function renderItem(item) {
    const topic = item.topic || {};
    const terms = common.queryTerms(topic);
    page.renderTopic(topic);
    if (item.kind === "sxs") {
      showKind("sxs");
      renderList("left-results", item.left || [], terms);
      renderList("right-results", item.right || [], terms);
      page.els.progressText.textContent = "Which list of top " + item.k + " results is better for this query?";
    } else {
      showKind("grade");
      const parts = { docno: $("grade-docno"), title: $("grade-title"), url: $("grade-url"), body: $("grade-body") };
      common.renderDocument(parts, item.document || {}, terms, "");
      page.els.progressText.textContent = "A document of the lists below needs a grade first";
    }
    page.els.item.dataset.task = String(item.task);
    page.els.item.dataset.kind = item.kind;
    page.showItem();
  }

  // ---------- Progress ----------
  const refreshProgressSoon = common.throttledProgress(refreshProgress);

  async function refreshProgress() {
    let response;
    try {
      response = await page.api("GET", config.progress_url);
    } catch (error) {
      return;
    }
    const data = response.data;
    if (response.status !== 200 || !data) return;
    const total = Number(data.pool_size) || 0;
    const done = Math.max(0, total - (Number(data.open_tasks) || 0));
    const share = total > 0 ? done / total : 0;
    els.progressBar.style.width = (100 * share).toFixed(1) + "%";
    els.progressBar.parentElement.setAttribute("aria-valuenow", (100 * share).toFixed(0));
    els.campaignProgress.textContent = done + " of " + total + " comparisons done · " + data.judgments +
      " answers in all (grades of single documents included)";
  }

  // ---------- Actions ----------
  function loadNext() {
    return page.load(config.next_url, ({ status, data }) => {
      if (status === 204) {
        page.renderEmpty("Nothing left for you right now",
          "Every comparison of this campaign is done, taken by another assessor or one you skipped, or the " +
          "campaign is paused. Thank you! This page checks again by itself every half minute.",
          true, page.nothingLeftRecheckMs);
      } else if (status === 403 || status === 404) {
        page.renderEmpty("Not available", (data && data.detail) || "You are not assigned to this campaign.", false);
      } else {
        page.renderEmpty("Something went wrong", "The server answered " + status + ".", true);
      }
    }).finally(refreshProgressSoon);
  }

  async function submit(answer) {
    if (answer.kind !== kind) return;
    const group = kind === "sxs" ? els.sxsAnswers : els.gradeAnswers;
    const button = group.querySelector('button[data-value="' + answer.value + '"]');
    const comment = els.comment.value.trim();
    const body = kind === "sxs"
      ? (seconds) => ({ preference: answer.value, seconds: seconds, comment: comment })
      : (seconds) => (comment ? { grade: answer.value, seconds: seconds, note: comment } : { grade: answer.value, seconds: seconds });
    const sent = await page.answer(button, (task) => config.answer_url.replace("{task}", task), body);
    if (sent === null) return;
    const response = sent.result;
    if (response.status === 201 || response.status === 200) {
      const name = kind === "sxs" ? SXS_NAMES[answer.value] : config.grades[answer.value].name;
      page.saved(sent, name);
      els.comment.value = "";
      await loadNext();
    } else if (response.status === 409) {
      page.toast((response.data && response.data.detail) || "This item is no longer yours; here is the next one.", 3500);
      await loadNext();
    } else {
      page.notSaved(response, button);
    }
  }

  function undo() {
    return page.undo(() => config.undo_url, "Undone: answer this again.", refreshProgressSoon);
  }

  // ---------- Skip ----------
  // The skip box every judge page shares: a comparison (kind "sxs") and a single document to
  // grade (kind "grade") skip alike, through POST /api/tasks/{task}/skip/.
  const skipBox = common.skipBox(page, {
    url: (task) => config.skip_url.replace("{task}", task),
    kind: () => kind,
    unit: () => (kind === "sxs" ? "comparison" : "document"),
    reserved: { has: (key) => kind === "grade" && GRADE_OF_KEY.has(key) },
    loadNext: loadNext,
    onSkipped: () => { els.comment.value = ""; },
  });
  // Enter or Esc keeps the comment for the next answer and gives the keys back to answering,
  // as the note box of the graded page does.
  els.comment.addEventListener("keydown", (event) => {
    if (event.key === "Escape" || event.key === "Enter") { event.preventDefault(); els.comment.blur(); }
  });

  // Shift+arrows ("much better") and C / N (the comment or note box) are read before the shared
  // handler, which sees a key without its Shift; a campaign's own grade keys win on a document.
  window.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.altKey || event.metaKey || event.ctrlKey || event.repeat || skipBox.isOpen()) return;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA")) return;
    if (!page.els.help.hidden || kind === null || !keys.enabled) return;
    const key = keys.typed(event);
    const commentKeys = [keys.key("comment"), keys.key("note")].filter(Boolean);
    let handled = true;
    if (kind === "sxs" && event.shiftKey && key === "ArrowLeft") submit({ kind: "sxs", value: -2 });
    else if (kind === "sxs" && event.shiftKey && key === "ArrowRight") submit({ kind: "sxs", value: 2 });
    else if (commentKeys.includes(key) && !(kind === "grade" && GRADE_OF_KEY.has(key))) els.comment.focus();
    else handled = false;
    if (handled) { event.preventDefault(); event.stopImmediatePropagation(); }
  }, true);

  // The same keys mean different answers for the two kinds of item.
  const answerOfKey = {
    has: (key) => (kind === "sxs" ? SXS_OF_KEY : GRADE_OF_KEY).has(key),
    get: (key) => ({ kind: kind, value: (kind === "sxs" ? SXS_OF_KEY : GRADE_OF_KEY).get(key) }),
  };

  page.start({
    answerOfKey: answerOfKey,
    submit: submit,
    answerSelector: "button[data-kind]",
    answerOfButton: (button) => ({ kind: button.dataset.kind, value: Number(button.dataset.value) }),
    undo: undo,
    loadNext: loadNext,
  });
})();
