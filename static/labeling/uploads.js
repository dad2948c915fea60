// Campaign page uploads: while a file is sent and every line checked (a large run takes a
// while), say so, show time passing, and keep the button from sending it twice. The form posts
// as usual; the page changes when the server has imported the file or listed its errors.
(function () {
  "use strict";

  function size(bytes) {
    if (bytes < 1e6) return Math.max(1, Math.round(bytes / 1e3)) + " kB";
    return (bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0) + " MB";
  }

  // A page answering a rejected upload (or another form) names the campaign page's address:
  // show it, so a reload does not post again to the upload address.
  const canonical = document.querySelector("[data-canonical-url]");
  if (canonical && window.history.replaceState) {
    window.history.replaceState(null, "", canonical.dataset.canonicalUrl + window.location.hash);
  }

  for (const form of document.querySelectorAll("form[data-upload]")) {
    form.addEventListener("submit", () => {
      const input = form.querySelector('input[type="file"]');
      const files = Array.from((input && input.files) || []);
      const bytes = files.reduce((sum, file) => sum + file.size, 0);
      const what = files.length === 1 ? files[0].name : files.length + " files";
      const status = form.querySelector(".upload-status");
      const text = status.querySelector(".upload-text");
      const started = Date.now();
      const show = () => {
        const seconds = Math.round((Date.now() - started) / 1000);
        text.textContent = "Uploading " + what + " (" + size(bytes) + ") and checking every line… " + seconds + " s";
      };
      show();
      status.hidden = false;
      window.setInterval(show, 1000);
      // Disabled after the submit has started, so the button's own click still submits.
      window.setTimeout(() => { form.querySelector('button[type="submit"]').disabled = true; }, 0);
    });
  }
})();
