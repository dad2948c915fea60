/* The pairwise page: fetch a pair, time it (minus pauses), submit left / tie / right (or a
   clearly-irrelevant side), fetch the next. Talks only to the REST API; no reload per answer. */
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("judge-config").textContent);
  const UNDO_WINDOW_MS = config.undo_window_seconds * 1000;
  const OUTCOME_NAMES = {
    left: "left is more relevant", tie: "equally relevant", right: "right is more relevant",
    left_bad: "left is clearly irrelevant", right_bad: "right is clearly irrelevant",
  };
  const STOPWORDS = new Set(("a an and are as at be by for from has have how in is it its of on or " +
    "that the their this to was were what when where which who why will with about into than " +
    "does do did not no any all can").split(" "));

  const $ = (id) => document.getElementById(id);
  const els = {
    root: $("judge"), item: $("item"), empty: $("empty"), emptyTitle: $("empty-title"),
    emptyText: $("empty-text"), retry: $("retry-button"), title: $("topic-title"),
    topicId: $("topic-id"), description: $("topic-description"), narrative: $("topic-narrative"),
    answers: $("answers"), timer: $("timer"), pauseButton: $("pause-button"),
    progressText: $("progress-text"), toast: $("toast"), help: $("help"),
  };

  const state = {
    task: null,          // the pair on screen
    busy: false,         // a request is in flight: ignore answer keys
    paused: false,
    elapsedMs: 0,
    runningSince: null,
    last: null,          // {task, seconds, at}: the answer that can still be undone
  };

  // ---------- HTTP ----------
  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function api(method, path, body) {
    const options = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (method !== "GET") options.headers["X-CSRFToken"] = csrfToken();
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
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
    return Math.floor(total / 60) + ":" + String(total % 60).padStart(2, "0");
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
    setAnswersEnabled(!paused && !state.busy && state.task !== null);
    renderTimer();
  }

  // ---------- Rendering ----------
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

  // DOM text nodes and <mark> elements, never HTML strings: document text cannot inject markup.
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

  function renderDocument(side, doc, terms) {
    $(side + "-docno").textContent = doc.docno || "";
    $(side + "-title").replaceChildren(highlighted(doc.title || "(no title)", terms));
    const link = $(side + "-url");
    link.hidden = !doc.url;
    if (doc.url) link.href = doc.url;
    const body = $(side + "-body");
    body.replaceChildren();
    const text = (doc.text || "").trim();
    if (!text) {
      const p = document.createElement("p");
      p.className = "muted";
      p.textContent = doc.url
        ? "No text was uploaded for this document: open it by its link above."
        : "No text was uploaded for this document: judge it by its identifier " + (doc.docno || "") + ".";
      body.appendChild(p);
    } else {
      for (const paragraph of text.split(/\n\s*\n/)) {
        const p = document.createElement("p");
        p.appendChild(highlighted(paragraph.trim(), terms));
        body.appendChild(p);
      }
    }
    body.scrollTop = 0;
    $(side + "-doc").classList.remove("chosen");
  }

  function renderPair(pair) {
    const topic = pair.topic || {};
    const terms = queryTerms(topic);
    els.topicId.textContent = topic.id !== undefined ? "Topic " + topic.id : "";
    els.title.textContent = topic.title || "(untitled topic)";
    els.description.textContent = topic.description || "—";
    els.narrative.textContent = topic.narrative || "—";
    renderDocument("left", pair.left || {}, terms);
    renderDocument("right", pair.right || {}, terms);
    for (const button of els.answers.querySelectorAll("button")) button.classList.remove("chosen");
    const progress = pair.progress;
    els.progressText.textContent = progress
      ? "Top " + progress.k + " of " + progress.documents + " documents · " + progress.judgments + " comparisons so far"
      : "Pairwise preferences";
    els.item.dataset.task = String(pair.task);
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
    els.progressText.textContent = "";
    setAnswersEnabled(false);
  }

  function setAnswersEnabled(enabled) {
    for (const button of els.answers.querySelectorAll("button")) button.disabled = !enabled;
  }

  let toastTimer = null;
  function toast(message, ms) {
    els.toast.textContent = message;
    els.toast.classList.add("show");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => els.toast.classList.remove("show"), ms || 2500);
  }

  // ---------- Actions ----------
  async function loadNext() {
    state.busy = true;
    setAnswersEnabled(false);
    try {
      const { status, data } = await api("GET", config.next_url);
      if (status === 200 && data) {
        state.task = data.task;
        renderPair(data);
        startTimer(0);
      } else if (status === 204) {
        renderEmpty("Nothing left for you right now",
          "Every query of this campaign is done or taken by another assessor, or the campaign is paused. " +
          "Thank you! Check again later.", true);
      } else if (status === 403 || status === 404) {
        renderEmpty("Not available", (data && data.detail) || "You are not assigned to this campaign.", false);
      } else {
        renderEmpty("Something went wrong", "The server answered " + status + ".", true);
      }
    } catch (error) {
      renderEmpty("Connection lost", "Could not reach the server.", true);
    } finally {
      state.busy = false;
      setAnswersEnabled(!state.paused && state.task !== null);
    }
  }

  async function submit(outcome) {
    if (state.paused) { toast("Paused: press P to resume judging.", 2000); return; }
    if (state.busy || state.task === null) return;
    if (!els.answers.querySelector('button[data-outcome="' + outcome + '"]')) return;
    const seconds = Math.max(0.001, elapsedMs() / 1000);
    const task = state.task;
    state.busy = true;
    setAnswersEnabled(false);
    const button = els.answers.querySelector('button[data-outcome="' + outcome + '"]');
    button.classList.add("chosen");
    if (outcome === "left" || outcome === "right") $(outcome + "-doc").classList.add("chosen");
    let result;
    try {
      result = await api("POST", config.answer_url.replace("{task}", task), {
        outcome: outcome, seconds: Number(seconds.toFixed(3)),
      });
    } catch (error) {
      state.busy = false;
      setAnswersEnabled(true);
      button.classList.remove("chosen");
      toast("Could not save: connection lost. Try again.", 4000);
      return;
    }
    state.busy = false;
    if (result.status === 201) {
      state.last = { task: task, seconds: seconds, at: Date.now() };
      toast("Saved “" + OUTCOME_NAMES[outcome] + "” — press U to undo", Math.min(UNDO_WINDOW_MS, 4000));
      await loadNext();
    } else if (result.status === 409) {
      toast((result.data && result.data.detail) || "This pair is no longer pending; here is the current one.", 3500);
      await loadNext();
    } else {
      setAnswersEnabled(true);
      button.classList.remove("chosen");
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
    setAnswersEnabled(false);
    let result;
    try {
      result = await api("POST", config.undo_url);
    } catch (error) {
      result = { status: 0, data: null };
    }
    state.busy = false;
    if (result.status === 200 && result.data) {
      state.last = null;
      state.task = result.data.task;
      renderPair(result.data);
      startTimer(last.seconds * 1000);  // carry on with the time already spent on this pair
      setAnswersEnabled(!state.paused);
      toast("Undone: compare this pair again.", 2500);
    } else {
      setAnswersEnabled(!state.paused && state.task !== null);
      const detail = result.data && result.data.detail;
      toast("Could not undo" + (detail ? ": " + detail : "."), 3000);
    }
  }

  function toggleHelp(show) {
    els.help.hidden = show === undefined ? !els.help.hidden : !show;
  }

  // ---------- Keyboard ----------
  const OUTCOME_OF_KEY = new Map([
    ["arrowleft", "left"], ["arrowright", "right"], ["arrowdown", "tie"], ["t", "tie"],
    ["q", "left_bad"], ["w", "right_bad"],
  ]);

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
    if (OUTCOME_OF_KEY.has(key)) { event.preventDefault(); submit(OUTCOME_OF_KEY.get(key)); }
  });

  // ---------- Buttons ----------
  // A clicked button keeps the focus; Space would then press it again as well as pause.
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (button && event.detail > 0) button.blur();
  });
  els.answers.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-outcome]");
    if (button) submit(button.dataset.outcome);
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
