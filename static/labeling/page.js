/* What every page of the app does (templates/base.html): a region that scrolls on its own (a
   wide table or a panel on a phone, a long document) becomes reachable by the keyboard and is
   named for screen readers (WCAG 2.1.1; axe's scrollable-region-focusable). Whether a region
   scrolls depends on the window's width and on what the page's scripts drew, so it is checked
   again when either changes. A region given a tab stop here loses it once it no longer scrolls. */
(function () {
  "use strict";

  const CANDIDATES = ".panel, .table-scroll, .doc-body, .scroll-region";

  function scrolls(element) {
    const style = getComputedStyle(element);
    const x = /auto|scroll/.test(style.overflowX) && element.scrollWidth > element.clientWidth + 1;
    const y = /auto|scroll/.test(style.overflowY) && element.scrollHeight > element.clientHeight + 1;
    return x || y;
  }

  // The region's name: its own label, else its first heading, else its table's caption.
  function nameOf(element) {
    const heading = element.querySelector("h1, h2, h3, h4, caption");
    const text = heading ? heading.textContent.trim() : "";
    return text ? text + " (scrollable)" : "Scrollable content";
  }

  function mark() {
    for (const element of document.querySelectorAll(CANDIDATES)) {
      const marked = element.dataset.scrollRegion === "1";
      if (scrolls(element)) {
        if (marked || element.hasAttribute("tabindex")) continue;
        element.dataset.scrollRegion = "1";
        element.tabIndex = 0;
        // A <section> or <aside> keeps its own role; a plain box becomes a named region.
        if (element.tagName === "DIV" && !element.hasAttribute("role")) element.setAttribute("role", "region");
        if (!element.hasAttribute("aria-label") && !element.hasAttribute("aria-labelledby")) {
          element.setAttribute("aria-label", nameOf(element));
          element.dataset.scrollLabel = "1";
        }
      } else if (marked) {
        delete element.dataset.scrollRegion;
        element.removeAttribute("tabindex");
        if (element.getAttribute("role") === "region") element.removeAttribute("role");
        if (element.dataset.scrollLabel) {
          element.removeAttribute("aria-label");
          delete element.dataset.scrollLabel;
        }
      }
    }
  }

  let queued = false;
  function markSoon() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; mark(); });
  }

  window.addEventListener("resize", markSoon);
  new MutationObserver(markSoon).observe(document.body, { childList: true, subtree: true });
  markSoon();
})();
