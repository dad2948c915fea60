/* The assessor page: fetch an item, time it (minus pauses), submit a grade, fetch the next.
   Talks only to the REST API; no page reload per judgment. */
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("judge-config").textContent);
  const UNDO_WINDOW_MS = config.undo_window_seconds * 1000;
  const STOPWORDS = new Set(("a an and are as at be by for from has have how in is it its of on or " +
    "that the their this to was were what when where which who why will with about into than " +
    "does do did not no any all can").split(" "));

  const $ = (id) => document.getElementById(id);
  const els = {
    root: $("judge"),
    item: $("item"),
    empty: $("empty"),
    emptyTitle: $("empty-title"),
    emptyText: $("empty-text"),
    retry: $("retry-button"),
    title: $("topic-title"),
    topicId: $("topic-id"),
    description: $("topic-description"),
    narrative: $("topic-narrative"),
    docTitle: $("doc-title"),
    docno: $("doc-docno"),
    docUrl: $("doc-url"),
    docBody: $("doc-body"),
    grades: $("grades"),
    timer: $("timer"),
    pauseButton: $("pause-button"),
    progressBar: $("progress-bar"),
    progressText: $("progress-text"),
    toast: $("toast"),
    help: $("help"),
  };

  const state = {
    task: null,          // the item on screen
    busy: false,         // a request is in flight: ignore grade keys
    paused: false,
    elapsedMs: 0,        // time spent on this item before the current running stretch
    runningSince: null,  // performance.now() when the current stretch started
    last: null,          // {task, item, grade, seconds, at}: the judgment that can still be undone
  };

  // ---------- HTTP ----------
  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : config.csrf_token;
  }

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

  async function api(method, path, body) {
    const options = {
      method: method,
      credentials: "same-origin",
      headers: { "Accept": "application/json" },
    };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRFToken"] = csrfToken();
      options.body = JSON.stringify(body);
    } else if (method !== "GET") {
      options.headers["X-CSRFToken"] = csrfToken();
    }
    const response = await fetch(path, options);
    let data = null;
    if (response.status !== 204) {
      try { data = await response.json(); } catch (e) { data = null; }
    }
    return { status: response.status, data: data };
  }

  // ---------- Timer ----------
  function elapsedMs() {
    const running = state.runningSince === null ? 0 : performance.now() - state.runningSince;
    return state.elapsedMs + running;
  }

  function startTimer(fromMs) {
    state.elapsedMs = fromMs || 0;
    state.runningSince = state.paused ? null : performance.now();
  }

  function formatSeconds(ms) {
    const total = Math.floor(ms / 1000);
    const minutes = Math.floor(total / 60);
    const seconds = String(total % 60).padStart(2, "0");
    return minutes + ":" + seconds;
  }

  function renderTimer() {
    const shown = state.task === null ? "–:––" : formatSeconds(elapsedMs());
    els.timer.textContent = (state.paused ? "Paused " : "") + shown;
    els.timer.classList.toggle("paused", state.paused);
  }

  function setPaused(paused) {
    if (paused === state.paused) return;
    if (paused) {
      state.elapsedMs = elapsedMs();
      state.runningSince = null;
    } else {
      state.runningSince = performance.now();
    }
    state.paused = paused;
    els.root.classList.toggle("is-paused", paused);
    els.pauseButton.textContent = paused ? "Resume (P)" : "Pause (P)";
    els.pauseButton.setAttribute("aria-pressed", String(paused));
    setGradesEnabled(!paused && !state.busy && state.task !== null);
    renderTimer();
  }

  // ---------- Rendering ----------
  // A light stemmer, so "bleaching" also marks "bleach" and "bleached": strip one common
  // suffix when at least four letters remain.
  function stem(word) {
    const match = word.match(/^(.{4,}?)(ing|ed|es|s)$/u);
    return match ? match[1] : word;
  }

  function queryTerms(topic) {
    const words = (topic.title || "").toLowerCase().match(/[\p{L}\p{N}]+/gu) || [];
    const terms = words.filter((w) => w.length > 1 && !STOPWORDS.has(w)).map(stem);
    return Array.from(new Set(terms)).sort((a, b) => b.length - a.length);
  }

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  // Builds DOM text nodes and <mark> elements, never HTML strings, so document text cannot
  // inject markup; a stemmed term also matches simple suffixes (plural, -ing, -ed).
  function highlighted(text, terms) {
    const fragment = document.createDocumentFragment();
    if (!terms.length) {
      fragment.appendChild(document.createTextNode(text));
      return fragment;
    }
    const pattern = new RegExp(
      "(?<![\\p{L}\\p{N}])(" + terms.map(escapeRegExp).join("|") + ")(s|es|e|ing|ed|er|ers)?(?![\\p{L}\\p{N}])",
      "giu");
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      if (match.index > last) fragment.appendChild(document.createTextNode(text.slice(last, match.index)));
      const mark = document.createElement("mark");
      mark.textContent = match[0];
      fragment.appendChild(mark);
      last = match.index + match[0].length;
    }
    if (last < text.length) fragment.appendChild(document.createTextNode(text.slice(last)));
    return fragment;
  }

  function renderItem(item) {
    const topic = item.topic || {};
    const doc = item.document || {};
    const terms = queryTerms(topic);

    els.topicId.textContent = topic.id !== undefined ? "Topic " + topic.id : "";
    els.title.textContent = topic.title || "(untitled topic)";
    els.description.textContent = topic.description || "—";
    els.narrative.textContent = topic.narrative || "—";

    els.docTitle.replaceChildren(highlighted(doc.title || "(no title)", terms));
    els.docno.textContent = doc.docno || "";
    if (doc.url) {
      els.docUrl.href = doc.url;
      els.docUrl.hidden = false;
    } else {
      els.docUrl.hidden = true;
    }
    els.docBody.replaceChildren();
    const text = (doc.text || "").trim();
    if (!text) {
      const p = document.createElement("p");
      p.className = "muted";
      p.textContent = doc.url
        ? "No text was uploaded for this document: open it by its link above and judge it there."
        : "No text was uploaded for this document: judge it by its identifier " + (doc.docno || "") + ".";
      els.docBody.appendChild(p);
    } else {
      for (const paragraph of text.split(/\n\s*\n/)) {
        const p = document.createElement("p");
        p.appendChild(highlighted(paragraph.trim(), terms));
        els.docBody.appendChild(p);
      }
    }
    els.docBody.scrollTop = 0;
    for (const button of els.grades.querySelectorAll("button")) button.classList.remove("chosen");
    els.item.hidden = false;
    els.empty.hidden = true;
  }

  function renderEmpty(title, text, canRetry) {
    state.task = null;
    els.item.hidden = true;
    els.empty.hidden = false;
    els.emptyTitle.textContent = title;
    els.emptyText.textContent = text;
    els.retry.hidden = !canRetry;
    setGradesEnabled(false);
  }

  function setGradesEnabled(enabled) {
    for (const button of els.grades.querySelectorAll("button")) button.disabled = !enabled;
  }

  let toastTimer = null;
  function toast(message, ms) {
    els.toast.textContent = message;
    els.toast.classList.add("show");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => els.toast.classList.remove("show"), ms || 2500);
  }

  async function refreshProgress() {
    const { status, data } = await api("GET", config.progress_url);
    if (status !== 200 || !data) return;
    const budget = Number(data.budget) || 0;
    const spent = Number(data.spent) || 0;
    const share = budget > 0 ? Math.min(1, spent / budget) : 0;
    els.progressBar.style.width = (100 * share).toFixed(1) + "%";
    els.progressBar.parentElement.setAttribute("aria-valuenow", (100 * share).toFixed(0));
    els.progressText.textContent =
      data.judgments + " judgments · " + Math.round(100 * share) + "% of the budget used";
  }

  // ---------- Actions ----------
  async function loadNext() {
    state.busy = true;
    setGradesEnabled(false);
    try {
      const result = await api("GET", config.next_url);
      const { status, data } = result;
      if (loggedOut(result)) return;
      if (status === 200 && data) {
        state.task = data.task;
        renderItem(data);
        startTimer(0);
      } else if (status === 204) {
        await explainNothingLeft();
      } else if (status === 403) {
        renderEmpty("Not available", (data && data.detail) || "You are not assigned to this campaign.", false);
      } else if (status === 409) {
        renderEmpty("Campaign not running", (data && data.detail) || "The coordinator has paused this campaign.", true);
      } else {
        renderEmpty("Something went wrong", "The server answered " + status + ".", true);
      }
    } catch (error) {
      renderEmpty("Connection lost", "Could not reach the server.", true);
    } finally {
      state.busy = false;
      setGradesEnabled(!state.paused && state.task !== null);
    }
    refreshProgress();
  }

  // 204 means nothing is leasable for this assessor; the progress record says why.
  async function explainNothingLeft() {
    let progress = null;
    try {
      const answer = await api("GET", config.progress_url);
      if (answer.status === 200) progress = answer.data;
    } catch (error) { progress = null; }
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
    } else {
      renderEmpty("Nothing left for you right now",
        "Every remaining item is judged or being judged by someone else. Items whose lease " +
        "expires come back: check again in a few minutes.", true);
    }
  }

  async function submit(grade) {
    if (state.paused) { toast("Paused: press P to resume judging.", 2000); return; }
    if (state.busy || state.task === null) return;
    const seconds = Math.max(0.001, elapsedMs() / 1000);
    const task = state.task;
    state.busy = true;
    setGradesEnabled(false);
    const button = els.grades.querySelector('button[data-grade="' + grade + '"]');
    if (button) button.classList.add("chosen");
    let result;
    try {
      // ?next=1: the answer also leases the next item, so a judgment is one round trip.
      result = await api("POST", config.answer_url.replace("{task}", task) + "?next=1", {
        grade: grade, seconds: Number(seconds.toFixed(3)),
      });
    } catch (error) {
      state.busy = false;
      setGradesEnabled(true);
      if (button) button.classList.remove("chosen");
      toast("Could not save: connection lost. Try again.", 4000);
      return;
    }
    state.busy = false;
    if (loggedOut(result)) return;
    if (result.status === 200 || result.status === 201) {
      state.last = { task: task, grade: grade, seconds: seconds, at: Date.now() };
      toast("Saved “" + gradeName(grade) + "” — press U to undo", Math.min(UNDO_WINDOW_MS, 4000));
      const upcoming = result.data && result.data.next;
      if (upcoming && upcoming.kind === "grade") {
        state.task = upcoming.task;
        renderItem(upcoming);
        startTimer(0);
        setGradesEnabled(!state.paused);
        refreshProgress();
      } else {
        await loadNext();  // nothing left (null) or another kind of item: the usual path explains
      }
    } else if (result.status === 409) {
      toast("This item's lease expired; here is a fresh one.", 3500);
      await loadNext();
    } else {
      setGradesEnabled(true);
      if (button) button.classList.remove("chosen");
      const detail = result.data && (result.data.detail || JSON.stringify(result.data));
      toast("Not saved (" + result.status + "): " + (detail || "unknown error"), 5000);
    }
  }

  async function undo() {
    const last = state.last;
    if (state.busy || !last) { toast("Nothing to undo.", 1500); return; }
    if (Date.now() - last.at > UNDO_WINDOW_MS) {
      state.last = null;
      toast("Too late to undo: the window is " + config.undo_window_seconds + " seconds.", 2500);
      return;
    }
    state.busy = true;
    setGradesEnabled(false);
    let result;
    try {
      result = await api("POST", config.undo_url.replace("{task}", last.task));
    } catch (error) {
      result = { status: 0, data: null };
    }
    state.busy = false;
    if (result.status === 200 && result.data) {
      state.last = null;
      state.task = result.data.task;
      renderItem(result.data);
      // The assessor carries on with the time already spent on this item.
      startTimer(last.seconds * 1000);
      setGradesEnabled(!state.paused);
      toast("Undone: judge this item again.", 2500);
      refreshProgress();
    } else {
      setGradesEnabled(!state.paused && state.task !== null);
      const detail = result.data && result.data.detail;
      toast("Could not undo" + (detail ? ": " + detail : "."), 3000);
    }
  }

  function gradeName(value) {
    const grade = config.grades.find((g) => g.value === value);
    return grade ? grade.name : String(value);
  }

  function toggleHelp(show) {
    els.help.hidden = show === undefined ? !els.help.hidden : !show;
  }

  // ---------- Keyboard ----------
  const gradeByKey = new Map(config.grades.map((g) => [String(g.key).toLowerCase(), g.value]));

  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.metaKey || event.repeat) return;
    const target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.isContentEditable)) return;
    const key = event.key.toLowerCase();

    if (event.ctrlKey) {
      if (key === "z") { event.preventDefault(); undo(); }
      return;
    }
    if (key === "?" || (key === "/" && event.shiftKey)) { event.preventDefault(); toggleHelp(); return; }
    if (key === "escape") { toggleHelp(false); return; }
    if (!els.help.hidden) return;
    if (key === "p" || key === " ") { event.preventDefault(); setPaused(!state.paused); return; }
    if (key === "u") { event.preventDefault(); undo(); return; }
    if (gradeByKey.has(key)) { event.preventDefault(); submit(gradeByKey.get(key)); }
  });

  // ---------- Buttons ----------
  // A clicked button keeps the focus; Space would then press it again as well as pause.
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (button && event.detail > 0) button.blur();
  });
  els.grades.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-grade]");
    if (button) submit(Number(button.dataset.grade));
  });
  els.pauseButton.addEventListener("click", () => setPaused(!state.paused));
  $("help-button").addEventListener("click", () => toggleHelp(true));
  $("help-close").addEventListener("click", () => toggleHelp(false));
  els.help.addEventListener("click", (event) => { if (event.target === els.help) toggleHelp(false); });
  $("undo-button").addEventListener("click", undo);
  els.retry.addEventListener("click", loadNext);

  // A hidden tab is not time spent judging.
  document.addEventListener("visibilitychange", () => { if (document.hidden) setPaused(true); });

  setInterval(renderTimer, 250);
  loadNext();
})();
