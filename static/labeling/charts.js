/* Formatting, DOM/SVG and fetch helpers shared by the dashboards' inline SVG charts
   (`window.Charts`). No libraries, no build step. */
(function () {
  "use strict";

  const SVG = "http://www.w3.org/2000/svg";

  // ---------- formatting ----------

  /** 3-4 significant digits, no exponent for ordinary magnitudes, "—" for missing. */
  function fmt(value, digits) {
    if (value === null || value === undefined || !Number.isFinite(value)) return "—";
    if (value === 0) return "0";
    const magnitude = Math.abs(value);
    if (magnitude >= 1e6 || magnitude < 1e-4) return value.toExponential(2);
    const precise = Number(value.toPrecision(digits || 4));
    const decimals = Math.max(0, (digits || 4) - 1 - Math.floor(Math.log10(magnitude)));
    return precise.toFixed(Math.min(decimals, 6)).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
  }

  /** Decimals that show a table's numbers alike: one count for every number of a group (a
      metric's estimates, SEs and bounds), from the largest of them. */
  function decimalsFor(values) {
    const finite = values.filter((v) => v !== null && v !== undefined && Number.isFinite(v)).map(Math.abs);
    const largest = finite.length ? Math.max(...finite) : 0;
    return largest >= 1000 ? 0 : largest >= 100 ? 1 : largest >= 10 ? 2 : 3;
  }

  /** A number with exactly `decimals` decimals, "—" for missing. */
  function fixed(value, decimals) {
    if (value === null || value === undefined || !Number.isFinite(value)) return "—";
    const text = value.toFixed(decimals);
    return Number(text) === 0 ? (0).toFixed(decimals) : text; // no "-0.000"
  }

  function fixedInterval(pair, decimals) {
    if (!pair || pair[0] === null || pair[1] === null) return "—";
    return "[" + fixed(pair[0], decimals) + ", " + fixed(pair[1], decimals) + "]";
  }

  function fmtInterval(pair) {
    if (!pair || pair[0] === null || pair[1] === null) return "—";
    return "[" + fmt(pair[0]) + ", " + fmt(pair[1]) + "]";
  }

  function percent(fraction) {
    if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return "—";
    // Never round a probability below 1 up to a certainty.
    if (fraction > 0.999 && fraction < 1) return "> 99.9 %";
    return (100 * fraction).toFixed(fraction >= 0.995 || fraction < 0.1 ? 1 : 0) + " %";
  }

  // ---------- DOM and SVG helpers ----------

  function el(tag, attributes, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  function svg(tag, attributes, children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined) continue;
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  function titled(node, text) {
    node.append(svg("title", { text: text }));
    return node;
  }

  /** Linear scale from [d0, d1] to [r0, r1]. */
  function scale(d0, d1, r0, r1) {
    const span = d1 - d0 || 1;
    return (value) => r0 + ((value - d0) / span) * (r1 - r0);
  }

  /** About `count` round tick values covering [low, high]. */
  function ticks(low, high, count) {
    if (!(high > low)) return [low];
    const raw = (high - low) / count;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw) || raw;
    const values = [];
    for (let v = Math.ceil(low / step) * step; v <= high + step * 1e-9; v += step) values.push(Number(v.toPrecision(12)));
    return values;
  }

  /** A padded [low, high] around the values (and 0 when asked). */
  function extent(values, includeZero) {
    const finite = values.filter((v) => v !== null && Number.isFinite(v));
    if (includeZero) finite.push(0);
    if (!finite.length) return [0, 1];
    let low = Math.min(...finite);
    let high = Math.max(...finite);
    if (low === high) {
      const pad = Math.abs(low) * 0.1 || 1;
      low -= pad;
      high += pad;
    }
    const pad = (high - low) * 0.06;
    return [includeZero && low >= 0 ? 0 : low - pad, high + pad];
  }

  function axes(root, x, y, box, xTicks, yTicks, labels) {
    const grid = svg("g", { class: "grid" });
    for (const t of yTicks) {
      grid.append(svg("line", { x1: box.left, x2: box.right, y1: y(t), y2: y(t) }));
      root.append(svg("text", { x: box.left - 6, y: y(t) + 4, class: "tick", "text-anchor": "end", text: fmt(t, 3) }));
    }
    for (const t of xTicks) {
      root.append(svg("line", { x1: x(t), x2: x(t), y1: box.bottom, y2: box.bottom + 4, class: "axis" }));
      root.append(svg("text", { x: x(t), y: box.bottom + 17, class: "tick", "text-anchor": "middle", text: fmt(t, 3) }));
    }
    root.prepend(grid);
    root.append(svg("line", { x1: box.left, x2: box.right, y1: box.bottom, y2: box.bottom, class: "axis" }));
    root.append(svg("line", { x1: box.left, x2: box.left, y1: box.top, y2: box.bottom, class: "axis" }));
    root.append(svg("text", { x: (box.left + box.right) / 2, y: box.bottom + 34, class: "label", "text-anchor": "middle", text: labels.x }));
    root.append(
      svg("text", {
        x: 0,
        y: 0,
        class: "label",
        "text-anchor": "middle",
        transform: "translate(" + (box.left - 44) + " " + (box.top + box.bottom) / 2 + ") rotate(-90)",
        text: labels.y,
      })
    );
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  // ---------- fetching ----------

  async function getJson(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (response.status === 401 || response.status === 403) {
      window.location.assign("/accounts/login/?next=" + encodeURIComponent(window.location.pathname));
      throw new Error("signed out");
    }
    if (!response.ok) throw new Error(url + " answered " + response.status);
    return response.json();
  }

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  window.Charts = { fmt, fmtInterval, decimalsFor, fixed, fixedInterval, percent, el, svg, titled, scale, ticks, extent, axes, clear, getJson, csrfToken };
})();
