/* What the graded page (graded/judge.js) and the pairwise page (pairwise/compare.js) share:
   the REST helper, query-term highlighting, and a judging session (timer with pause, hidden-tab
   pause, toast, help overlay, empty state, load / answer / undo round trips, keyboard and button
   wiring). A plain script, loaded before the page script; it defines window.JudgingCommon. */
window.JudgingCommon = (function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const STOPWORDS = new Set(("a an and are as at be by for from has have how in is it its of on or " +
    "that the their this to was were what when where which who why will with about into than " +
    "does do did not no any all can").split(" "));

  // ---------- HTTP ----------
  function csrfToken(fallback) {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : fallback;
  }

  // An api(method, path, body) that answers {status, data}; data is null for 204 or non-JSON.
  function makeApi(csrfFallback) {
    return async function api(method, path, body) {
      const options = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
      if (method !== "GET" || body !== undefined) options.headers["X-CSRFToken"] = csrfToken(csrfFallback);
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
    };
  }

  // ---------- Query terms ----------
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

  // Fills one document panel: parts = {docno, title, url, body} elements; linkHint ends the
  // sentence shown for a document without text but with a link.
  function renderDocument(parts, doc, terms, linkHint) {
    parts.docno.textContent = doc.docno || "";
    parts.title.replaceChildren(highlighted(doc.title || "(no title)", terms));
    parts.url.hidden = !doc.url;
    if (doc.url) parts.url.href = doc.url;
    const body = parts.body;
    body.replaceChildren();
    const text = (doc.text || "").trim();
    if (!text) {
      const p = document.createElement("p");
      p.className = "muted";
      p.textContent = doc.url
        ? "No text was uploaded for this document: open it by its link above" + linkHint + "."
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
  }

  // ---------- Shortcut keys ----------
  // The assessor's keys for this page (labeling/shortcuts.py renders them as #judge-shortcuts):
  // whether single keys act at all, each action's key as KeyboardEvent.key names it ("p",
  // "ArrowLeft"; "" for none) and as the page shows it. Page scripts ask here; none names a letter.
  function readShortcuts() {
    const element = $("judge-shortcuts");
    const data = element ? JSON.parse(element.textContent) : { enabled: true, keys: {}, shown: {} };
    const enabled = Boolean(data.enabled);
    // The key of an action, "" when keys are off or it has none.
    const key = (action) => (enabled && data.keys[action]) || "";
    return {
      enabled: enabled,
      key: key,
      // How the page shows the action's key ("P", "←"), "" when none.
      shown: (action) => (enabled && data.shown[action]) || "",
      // A Map from key to answer for [action, answer] pairs, leaving out actions without a key.
      answers: (pairs) => new Map(pairs.filter(([action]) => key(action)).map(([action, answer]) => [key(action), answer])),
      // The event's key in the stored form: one character in lower case, or its name.
      typed: (event) => (event.key.length === 1 ? event.key.toLowerCase() : event.key),
      // "Press P to resume" style words, or "" when the action has no key.
      press: (action, what) => (key(action) ? "Press " + data.shown[action] + " to " + what : ""),
    };
  }
  const shortcuts = readShortcuts();

  function formatSeconds(ms) {
    const total = Math.floor(ms / 1000);
    return Math.floor(total / 60) + ":" + String(total % 60).padStart(2, "0");
  }

  // ---------- A judging session ----------
  // options: config (the page's judge-config; its lease_url, when given, is told when the page
  // is hidden, shown again or closed), answers (the element holding the answer buttons),
  // render(data) (puts an item from the API on screen), csrfFallback, onEmpty() (extra clearing
  // when the empty state shows), itemKind() (the kind of the item on screen; default "grade"),
  // describe(data) (what the live region says of a new item after its topic; default nothing).
  function session(options) {
    const config = options.config;
    const UNDO_WINDOW_MS = config.undo_window_seconds * 1000;
    const api = makeApi(options.csrfFallback);
    const els = {
      root: $("judge"), item: $("item"), empty: $("empty"), emptyTitle: $("empty-title"),
      emptyText: $("empty-text"), retry: $("retry-button"), title: $("topic-title"),
      topicId: $("topic-id"), description: $("topic-description"), narrative: $("topic-narrative"),
      answers: options.answers, timer: $("timer"), pauseButton: $("pause-button"),
      progressText: $("progress-text"), toast: $("toast"), help: $("help"),
      announcer: $("announcer"),
    };
    const state = {
      task: null,          // the item on screen
      lease: null,         // the lease it was served with: lease reports name it
      busy: false,         // a request is in flight: ignore answer keys
      paused: false,
      elapsedMs: 0,        // time spent on this item before the current running stretch
      runningSince: null,  // performance.now() when the current stretch started
      last: null,          // {task, seconds, at}: the answer that can still be undone
      // Set by an answer, a skip or an undo: the next item (or the empty state) takes the focus
      // and the live region says this first ("Skipped.", "Undone."; "" after an answer).
      after: null,
    };

    function setAnswersEnabled(enabled) {
      for (const button of els.answers.querySelectorAll("button")) button.disabled = !enabled;
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
      const resume = shortcuts.press("pause", "resume");
      announce(paused ? "Paused." + (resume ? " " + resume + "." : "") : "Resumed.");
      els.root.classList.toggle("is-paused", paused);
      const hint = shortcuts.shown("pause") ? " (" + shortcuts.shown("pause") + ")" : "";
      els.pauseButton.textContent = (paused ? "Resume" : "Pause") + hint;
      els.pauseButton.setAttribute("aria-pressed", String(paused));
      setAnswersEnabled(!paused && !state.busy && state.task !== null);
      renderTimer();
    }

    // ---------- Rendering ----------
    function renderTopic(topic) {
      els.topicId.textContent = topic.id !== undefined ? "Topic " + topic.id : "";
      els.title.textContent = topic.title || "(untitled topic)";
      els.description.textContent = topic.description || "—";
      els.narrative.textContent = topic.narrative || "—";
    }

    // The item is rendered: clear the last choice and show it.
    function showItem() {
      for (const button of els.answers.querySelectorAll("button")) button.classList.remove("chosen");
      els.item.hidden = false;
      els.empty.hidden = true;
    }

    // ---------- Screen readers and focus ----------
    // The live region (a polite status) says what changed; the same words twice are still read.
    function announce(text) {
      if (!els.announcer) return;
      els.announcer.textContent = els.announcer.textContent === text ? text + "\u00a0" : text;
    }

    function describeItem(data) {
      const topic = data.topic || {};
      const words = ["Topic " + (topic.id !== undefined ? topic.id + ": " : "") + (topic.title || "untitled") + "."];
      const more = options.describe ? options.describe(data) : "";
      if (more) words.push(more);
      return words.join(" ");
    }

    // After an answer, a skip or an undo, focus goes to the heading of what is on screen, never
    // to <body> (a pressed button is disabled while the next item loads and loses the focus);
    // preventScroll leaves a phone's scroll position to phoneScroll.
    // Answers what the live region says first.
    function settleFocus(heading) {
      const after = state.after;
      state.after = null;
      if (after !== null && els.help.hidden) heading.focus({ preventScroll: true });
      return after || "";
    }

    // An item from the API on screen, its timer started at fromMs.
    function show(data, fromMs) {
      state.task = data.task;
      state.lease = data.lease || null;
      options.render(data);
      phoneScroll(data);
      startTimer(fromMs);
      const prefix = settleFocus(els.title);
      announce((prefix ? prefix + " " : "") + describeItem(data));
    }

    // On a phone the bar and the topic fill the first screen: a new topic starts at the top (its
    // description is read once), the next items of the same topic at the page's `phoneStart`
    // element (the documents), so their text shows without scrolling each time.
    let shownTopic = null;
    function phoneScroll(data) {
      const topic = data.topic && data.topic.id !== undefined ? String(data.topic.id) : null;
      const sameTopic = topic !== null && topic === shownTopic;
      shownTopic = topic;
      if (!options.phoneStart || !window.matchMedia("(max-width: 640px)").matches) return;
      const start = options.phoneStart(data);
      if (sameTopic && start) start.scrollIntoView({ block: "start" });
      else window.scrollTo(0, 0);
    }

    // An empty page with recheckMs asks for an item again by itself after that long (only while
    // it is still empty and the tab is visible): held items come back when their leases run
    // out, and a training round's next items appear without a reload.
    const NOTHING_LEFT_RECHECK_MS = 30000;
    let recheckTimer = null;
    let recheckHandler = null;
    function renderEmpty(title, text, canRetry, recheckMs) {
      clearTimeout(recheckTimer);
      if (recheckMs && recheckHandler) {
        recheckTimer = setTimeout(function recheck() {
          if (!els.item.hidden) return;
          if (document.hidden) { recheckTimer = setTimeout(recheck, recheckMs); return; }
          recheckHandler();
        }, recheckMs);
      }
      state.task = null;
      state.lease = null;
      els.item.hidden = true;
      els.empty.hidden = false;
      els.emptyTitle.textContent = title;
      els.emptyText.textContent = text;
      els.retry.hidden = !canRetry;
      if (options.onEmpty) options.onEmpty();
      setAnswersEnabled(false);
      const prefix = settleFocus(els.emptyTitle);
      announce((prefix ? prefix + " " : "") + title + ". " + text);
    }

    let toastTimer = null;
    function toast(message, ms) {
      els.toast.textContent = message;
      els.toast.classList.add("show");
      clearTimeout(toastTimer);
      toastTimer = setTimeout(() => els.toast.classList.remove("show"), ms || 2500);
    }

    // The help is a modal dialog: while open, everything behind it is inert (out of the tab order
    // and of a screen reader's reach), Tab cycles inside it, and closing it gives the focus back
    // to where it was (the ? button, a grade button, the item).
    let helpReturn = null;
    function toggleHelp(show) {
      const open = show === undefined ? els.help.hidden : show;
      if (open === !els.help.hidden) return;
      const behind = [document.querySelector(".skip-link"), document.querySelector("header.topbar"), els.root];
      for (const element of behind) if (element) element.inert = open;
      els.help.hidden = !open;
      if (open) {
        helpReturn = document.activeElement;
        $("help-title").focus();
      } else {
        const back = helpReturn && helpReturn.isConnected && !helpReturn.disabled && helpReturn !== document.body
          ? helpReturn : (state.task !== null ? els.title : null);
        helpReturn = null;
        if (back) back.focus({ preventScroll: true });
      }
    }

    function trapHelpFocus(event) {
      if (els.help.hidden || event.key !== "Tab") return;
      const focusable = Array.from(els.help.querySelectorAll(
        "a[href], button:not([disabled]), input:not([disabled]), select, textarea, summary, [tabindex='0']"))
        .filter((element) => element.getClientRects().length > 0);
      if (!focusable.length) return;
      const first = focusable[0], last = focusable[focusable.length - 1];
      const inside = els.help.contains(document.activeElement);
      if (event.shiftKey && (!inside || document.activeElement === first || document.activeElement === $("help-title"))) {
        event.preventDefault();
        last.focus();
      } else if (!event.shiftKey && (!inside || document.activeElement === last)) {
        event.preventDefault();
        first.focus();
      }
    }

    // ---------- Round trips ----------
    // GET the next item: 200 shows it, any other answer goes to otherwise(result).
    async function load(url, otherwise) {
      state.busy = true;
      setAnswersEnabled(false);
      try {
        const result = await api("GET", url);
        if (result.status === 200 && result.data) {
          show(result.data, 0);
        } else {
          await otherwise(result);
        }
      } catch (error) {
        renderEmpty("Connection lost", "Could not reach the server.", true);
      } finally {
        state.busy = false;
        setAnswersEnabled(!state.paused && state.task !== null);
      }
    }

    // POSTs an answer for the item on screen through button: url(task) and body(seconds) build
    // the request. Answers {result, task, seconds}, or null when nothing was sent or the
    // connection failed (the assessor was told).
    async function answer(button, url, body, alsoChosen) {
      if (state.paused) {
        const resume = shortcuts.key("pause") ? "press " + shortcuts.shown("pause") : "use the Resume button";
        toast("Paused: " + resume + " to resume judging.", 2000);
        return null;
      }
      if (state.busy || state.task === null || !button) return null;
      const seconds = Math.max(0.001, elapsedMs() / 1000);
      const task = state.task;
      state.busy = true;
      setAnswersEnabled(false);
      button.classList.add("chosen");
      if (alsoChosen) alsoChosen.classList.add("chosen");
      let result;
      try {
        result = await api("POST", url(task), body(Number(seconds.toFixed(3))));
      } catch (error) {
        state.busy = false;
        setAnswersEnabled(true);
        button.classList.remove("chosen");
        toast("Could not save: connection lost. Try again.", 4000);
        return null;
      }
      state.busy = false;
      state.after = "";
      return { result: result, task: task, seconds: seconds };
    }

    // The answer is stored: it can be undone for a while.
    function saved(sent, name) {
      state.last = { task: sent.task, seconds: sent.seconds, at: Date.now() };
      const undoHint = shortcuts.key("undo") ? "press " + shortcuts.shown("undo") + " to undo" : "Undo to take it back";
      toast("Saved “" + name + "” — " + undoHint, Math.min(UNDO_WINDOW_MS, 4000));
    }

    // The server refused the answer: the item stays, to answer again.
    function notSaved(result, button) {
      state.after = null;
      setAnswersEnabled(true);
      button.focus({ preventScroll: true });
      button.classList.remove("chosen");
      const detail = result.data && (result.data.detail || JSON.stringify(result.data));
      toast("Not saved (" + result.status + "): " + (detail || "unknown error"), 5000);
    }

    // Undoes the last answer within the window: url(last) is the undo endpoint; the item comes
    // back with the time already spent on it, then done() runs.
    async function undo(url, message, done) {
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
        result = await api("POST", url(last));
      } catch (error) {
        result = { status: 0, data: null };
      }
      state.busy = false;
      if (result.status === 200 && result.data) {
        state.last = null;
        state.after = "Undone.";
        show(result.data, last.seconds * 1000);  // carry on with the time already spent
        setAnswersEnabled(!state.paused);
        toast(message, 2500);
        if (done) done();
      } else {
        setAnswersEnabled(!state.paused && state.task !== null);
        const detail = result.data && result.data.detail;
        toast("Could not undo" + (detail ? ": " + detail : "."), 3000);
      }
    }

    // ---------- The lease of the item on screen ----------
    // Tells the server the page is "active", "idle" (its tab hidden) or "left" (closed), so an
    // item nobody looks at goes back soon (labeling.leases.lease_hold). Answers whether the
    // assessor still holds the item (null: unknown, or no lease_url). "left" goes by
    // navigator.sendBeacon, which a closing page still sends (a form body carries the CSRF token).
    // Each report names the lease the item was served with: the "left" of a page being reloaded
    // may reach the server after the new page was served the same item, and must not give it back.
    function reportLease(leaseState) {
      if (!config.lease_url || state.task === null) return Promise.resolve(null);
      const url = config.lease_url.replace("{task}", state.task);
      const kind = options.itemKind ? options.itemKind() : "grade";
      if (leaseState === "left") {
        const form = new FormData();
        form.append("state", leaseState);
        form.append("kind", kind);
        if (state.lease) form.append("lease", state.lease);
        form.append("csrfmiddlewaretoken", csrfToken(options.csrfFallback));
        if (navigator.sendBeacon) navigator.sendBeacon(url, form);
        return Promise.resolve(null);
      }
      return api("POST", url, { state: leaseState, kind: kind, lease: state.lease })
        .then((result) => (result.status === 200 && result.data ? result.data.held : null))
        .catch(() => null);
    }

    // ---------- Wiring ----------
    // handlers: answerOfKey (Map of key, as shortcuts.typed gives it, to answer), submit(answer),
    // answerSelector and answerOfButton(button) for clicks, undo(), loadNext(). Starts with loadNext().
    function start(handlers) {
      document.addEventListener("keydown", trapHelpFocus);
      document.addEventListener("keydown", (event) => {
        if (event.altKey || event.metaKey || event.repeat) return;
        const target = event.target;
        if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.isContentEditable)) return;
        const key = shortcuts.typed(event);
        // Space and Enter belong to a focused control (a grade button, a link, the guidelines):
        // they press it, never pause or answer something else.
        if ((key === " " || key === "Enter") && target && target.closest &&
            target.closest("button, a[href], summary, select, [role=button]")) return;
        // A scrolling region with the focus (a long document) scrolls with the arrow keys.
        if (key.startsWith("Arrow") && !event.shiftKey && target && target.dataset && target.dataset.scrollRegion) return;
        if (event.ctrlKey) {
          if (key === "z") { event.preventDefault(); handlers.undo(); }
          return;
        }
        if (key === "Escape") { toggleHelp(false); return; }
        // Single keys switched off (WCAG 2.1.4): only the buttons, Ctrl+Z and Esc act.
        if (!shortcuts.enabled) return;
        const help = shortcuts.key("help");
        if (help && (key === help || (help === "?" && key === "/" && event.shiftKey))) {
          event.preventDefault(); toggleHelp(); return;
        }
        if (!els.help.hidden) return;
        if (key === shortcuts.key("pause") || key === " ") { event.preventDefault(); setPaused(!state.paused); return; }
        if (key === shortcuts.key("undo")) { event.preventDefault(); handlers.undo(); return; }
        if (handlers.answerOfKey.has(key)) { event.preventDefault(); handlers.submit(handlers.answerOfKey.get(key)); }
      });

      // A clicked button keeps the focus; Space would then press it again as well as pause.
      document.addEventListener("click", (event) => {
        const button = event.target.closest("button");
        if (button && event.detail > 0) button.blur();
      });
      els.answers.addEventListener("click", (event) => {
        const button = event.target.closest(handlers.answerSelector);
        if (button) handlers.submit(handlers.answerOfButton(button));
      });
      els.pauseButton.addEventListener("click", () => setPaused(!state.paused));
      $("help-button").addEventListener("click", () => toggleHelp(true));
      $("help-close").addEventListener("click", () => toggleHelp(false));
      els.help.addEventListener("click", (event) => { if (event.target === els.help) toggleHelp(false); });
      $("undo-button").addEventListener("click", handlers.undo);
      els.retry.addEventListener("click", handlers.loadNext);
      recheckHandler = handlers.loadNext;

      // A hidden tab is not time spent judging, and its item should not keep others waiting: the
      // lease shrinks while hidden and is renewed on return, unless the item went to someone
      // else meanwhile (then the next one comes). A closed page gives its item back at once; one
      // restored from the browser's cache asks for an item again.
      document.addEventListener("visibilitychange", () => {
        if (document.hidden) {
          setPaused(true);
          reportLease("idle");
          return;
        }
        reportLease("active").then((held) => {
          if (held !== false) return;
          toast("This item went to someone else while the tab was hidden; here is the next one.", 4000);
          handlers.loadNext();
        });
      });
      window.addEventListener("pagehide", () => reportLease("left"));
      window.addEventListener("pageshow", (event) => { if (event.persisted) handlers.loadNext(); });

      setInterval(renderTimer, 250);
      handlers.loadNext();
    }

    return {
      api: api, els: els, state: state, setAnswersEnabled: setAnswersEnabled, renderTopic: renderTopic,
      showItem: showItem, show: show, renderEmpty: renderEmpty, toast: toast, load: load,
      answer: answer, saved: saved, notSaved: notSaved, undo: undo, start: start, announce: announce,
      nothingLeftRecheckMs: NOTHING_LEFT_RECHECK_MS,
    };
  }

  // ---------- Skip ----------
  // The skip box (templates/labeling/_skip_form.html) of a judging session `page`: the skip key
  // (S unless remapped) opens it, unless it is one of the page's `reserved` answer keys; while it
  // is open (it holds the focus) 1-4 pick a reason, Enter skips, Esc
  // cancels. options: url(task), kind (the item kind the API expects), unit ("item", "pair"),
  // each a value or a function of nothing (a page whose items change kind), reserved (keys the
  // page's answers take), loggedOut(result), loadNext(), onSkipped().
  function skipBox(page, options) {
    const form = $("skip-form"), button = $("skip-button"), note = $("skip-note");
    const reasons = Array.from(form.querySelectorAll("input[name=reason]"));

    function open() {
      if (page.state.task === null || page.state.busy) return;
      form.hidden = false;
      button.setAttribute("aria-expanded", "true");
      form.querySelector("input[name=reason]:checked").focus();
    }

    function close() {
      form.hidden = true;
      note.value = "";
      button.setAttribute("aria-expanded", "false");
    }

    async function send(event) {
      event.preventDefault();
      const task = page.state.task;
      if (task === null || page.state.busy) return;
      const reason = form.querySelector("input[name=reason]:checked").value;
      const valueOf = (option) => (typeof option === "function" ? option() : option);
      const body = { reason: reason, note: note.value.trim(), kind: valueOf(options.kind) };
      const result = await page.api("POST", options.url(task), body);
      if (options.loggedOut && options.loggedOut(result)) return;
      if (result.status === 200) {
        close();
        page.state.after = "Skipped.";
        if (options.onSkipped) options.onSkipped();
        page.toast("Skipped: someone else gets this " + valueOf(options.unit) + ".", 2500);
        await options.loadNext();
      } else {
        page.toast("Could not skip: " + ((result.data && result.data.detail) || result.status), 3500);
        if (result.status === 409) { close(); await options.loadNext(); }
      }
    }

    button.addEventListener("click", () => (form.hidden ? open() : close()));
    $("skip-cancel").addEventListener("click", close);
    form.addEventListener("submit", send);
    // Capture phase: while the box is open its keys must not reach the answer keys.
    document.addEventListener("keydown", (event) => {
      if (event.altKey || event.metaKey || event.ctrlKey || event.repeat) return;
      const key = shortcuts.typed(event);
      if (!form.hidden) {
        if (key === "Escape") { event.preventDefault(); event.stopImmediatePropagation(); close(); return; }
        const index = Number(key) - 1;
        if (event.target !== note && Number.isInteger(index) && index >= 0 && index < reasons.length) {
          event.preventDefault();
          event.stopImmediatePropagation();
          reasons[index].checked = true;
          // The reason is chosen: what is typed next is the note, and Enter skips.
          note.focus();
        }
        return;
      }
      const target = event.target;
      if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA")) return;
      if (!shortcuts.key("skip") || key !== shortcuts.key("skip")) return;
      if ((options.reserved && options.reserved.has(key)) || !$("help").hidden) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      open();
    }, true);
    return { open: open, close: close, isOpen: () => !form.hidden };
  }

  // ---------- Campaign progress ----------
  // The progress bar follows the campaign at most every PROGRESS_EVERY_MS: /progress/ counts
  // over the whole campaign, and fifty assessors asking after every item would keep the database
  // busy for a bar that moves by a fraction of a percent. A call inside the interval schedules
  // one trailing refresh, so the bar still ends up current. Returns the "refresh soon" function.
  const PROGRESS_EVERY_MS = 10000;
  function throttledProgress(refresh) {
    let refreshedAt = 0;
    let timer = null;
    return function refreshSoon() {
      if (timer !== null) return;
      const wait = Math.max(0, refreshedAt + PROGRESS_EVERY_MS - Date.now());
      timer = setTimeout(() => {
        timer = null;
        refreshedAt = Date.now();
        refresh();
      }, wait);
    };
  }

  return {
    $: $, makeApi: makeApi, queryTerms: queryTerms, highlighted: highlighted,
    renderDocument: renderDocument, formatSeconds: formatSeconds, session: session,
    throttledProgress: throttledProgress, skipBox: skipBox, shortcuts: shortcuts,
  };
})();
