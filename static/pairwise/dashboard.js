/* A pair campaign's dashboard stays current without a reload: every few seconds it fetches its
   own body again (?fragment=1, rendered by the server like the first time) and swaps it in when
   something changed. No libraries; the page works without this script, just not live. */
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("pair-dashboard-config").textContent);
  const body = document.getElementById("pair-dashboard");
  const dot = document.getElementById("live-dot");
  const updated = document.getElementById("updated");
  // The CSRF token of the Release forms is masked afresh on every render: not a change.
  const TOKEN = /name="csrfmiddlewaretoken" value="[^"]*"/g;
  let shown = body.innerHTML.replace(TOKEN, "");
  let busy = false;

  function stamp(ok) {
    dot.classList.toggle("stale", !ok);
    dot.title = ok ? "live" : "not updated: the server did not answer";
    updated.textContent = (ok ? "updated " : "stale since ") + new Date().toLocaleTimeString([], { hourCycle: "h23" });
  }

  async function refresh() {
    // A hidden tab need not poll; a coordinator on a Release button should not see it move.
    const focused = document.activeElement;
    if (busy || document.hidden || (focused && focused.tagName === "BUTTON" && body.contains(focused))) return;
    busy = true;
    try {
      const response = await fetch(config.fragment_url, { credentials: "same-origin", headers: { "Accept": "text/html" } });
      if (!response.ok) { stamp(false); return; }
      const html = await response.text();
      const comparable = html.replace(TOKEN, "");
      if (comparable !== shown) {
        // Tables scroll sideways on a phone: keep where each one was.
        const scrolled = Array.from(body.querySelectorAll(".table-scroll"), (wrapper) => wrapper.scrollLeft);
        body.innerHTML = html;
        body.querySelectorAll(".table-scroll").forEach((wrapper, i) => { wrapper.scrollLeft = scrolled[i] || 0; });
        shown = comparable;
      }
      stamp(true);
    } catch (error) {
      stamp(false);
    } finally {
      busy = false;
    }
  }

  stamp(true);
  setInterval(refresh, 1000 * config.poll_seconds);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
})();
