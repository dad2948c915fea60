// The New campaign form shows the fields the chosen judging mode reads (data-modes on a field's
// paragraph lists those modes); the others hide, and stay out of the tab order.
(function () {
  "use strict";
  const mode = document.getElementById("id_judging_mode");
  if (!mode) return;
  const fields = Array.from(document.querySelectorAll("[data-modes]"));
  function showFieldsOf(name) {
    for (const field of fields) field.hidden = !field.dataset.modes.split(" ").includes(name);
  }
  mode.addEventListener("change", () => showFieldsOf(mode.value || "graded"));
  showFieldsOf(mode.value || "graded");
})();
