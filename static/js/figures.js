// Figures: read a value off a chart or a heatmap (drawn by site_builder/plots.py), by pointer
// or by keyboard. Every value is in the SVG already (data-x / data-y on each line, data-v on
// each heatmap row), so nothing is computed here but which point is nearest.
//   line plot: hover shows the nearest point of any series; focused (Tab), the arrow keys
//     walk the points (Shift: ten at a time, Home / End), Up / Down change series.
//   heatmap: hover shows the cell under the pointer; focused, the arrow keys move a cursor.
// The read-out is a role="status" element, so a screen reader speaks it; Escape hides it.
(() => {
  "use strict";
  const SVGNS = "http://www.w3.org/2000/svg";

  for (const svg of document.querySelectorAll("svg.chart")) chart(svg);
  for (const svg of document.querySelectorAll("svg.heatmap[data-grid]")) heatmap(svg);

  function tipFor(svg) {
    const box = svg.parentElement;
    const tip = document.createElement("div");
    tip.className = "fig-tip";
    tip.setAttribute("role", "status");
    tip.hidden = true;
    box.appendChild(tip);
    return {
      show(text, x, y) {               // x, y in the SVG's own units
        tip.textContent = text;
        tip.hidden = false;
        const m = svg.getScreenCTM();
        if (!m) return;
        const p = new DOMPoint(x, y).matrixTransform(m);
        const outer = box.getBoundingClientRect();
        const left = p.x - outer.left + box.scrollLeft + 12;
        const maxLeft = box.scrollLeft + box.clientWidth - tip.offsetWidth - 4;
        tip.style.left = Math.max(box.scrollLeft + 4, Math.min(left, maxLeft)) + "px";
        const top = p.y - outer.top - tip.offsetHeight - 10;
        tip.style.top = (top < 0 ? p.y - outer.top + 14 : top) + "px";
      },
      hide() { tip.hidden = true; },
    };
  }

  function local(svg, event) {
    const m = svg.getScreenCTM();
    return m ? new DOMPoint(event.clientX, event.clientY).matrixTransform(m.inverse()) : null;
  }

  function chart(svg) {
    const series = [...svg.querySelectorAll("polyline.line[data-x]")].map((line) => ({
      label: line.dataset.label,
      px: line.getAttribute("points").trim().split(/\s+/).map((p) => p.split(",").map(Number)),
      xs: line.dataset.x.split(" "),
      ys: line.dataset.y.split(" "),
    }));
    if (!series.length) return;
    const tip = tipFor(svg);
    const marker = document.createElementNS(SVGNS, "circle");
    marker.setAttribute("class", "fig-marker");
    marker.setAttribute("r", "4.5");
    marker.style.display = "none";
    svg.appendChild(marker);
    const xName = svg.dataset.xlabel, yName = svg.dataset.ylabel;
    let s = 0, i = 0;

    function show() {
      const [x, y] = series[s].px[i];
      marker.setAttribute("cx", x);
      marker.setAttribute("cy", y);
      marker.style.display = "";
      tip.show(series[s].label + ": " + yName + " " + series[s].ys[i] + " at " + xName + " " + series[s].xs[i], x, y);
    }
    function hide() { marker.style.display = "none"; tip.hide(); }
    function nearestIn(k, x, y) {
      let best = 0, dist = Infinity;
      series[k].px.forEach(([px, py], j) => {
        const d = (px - x) ** 2 + (y === null ? 0 : (py - y) ** 2);
        if (d < dist) { dist = d; best = j; }
      });
      return [best, dist];
    }

    svg.addEventListener("pointermove", (event) => {
      const p = local(svg, event);
      if (!p) return;
      let dist = Infinity;
      series.forEach((_, k) => {
        const [j, d] = nearestIn(k, p.x, p.y);
        if (d < dist) { dist = d; s = k; i = j; }
      });
      show();
    });
    svg.addEventListener("pointerleave", () => { if (document.activeElement !== svg) hide(); });
    svg.addEventListener("focus", show);
    svg.addEventListener("blur", hide);
    svg.addEventListener("keydown", (event) => {
      const n = series[s].px.length;
      const step = event.shiftKey ? 10 : 1;
      if (event.key === "ArrowRight") i = Math.min(n - 1, i + step);
      else if (event.key === "ArrowLeft") i = Math.max(0, i - step);
      else if (event.key === "Home") i = 0;
      else if (event.key === "End") i = n - 1;
      else if (event.key === "ArrowUp" || event.key === "ArrowDown") {
        const x = series[s].px[i][0];
        s = (s + (event.key === "ArrowDown" ? 1 : series.length - 1)) % series.length;
        i = nearestIn(s, x, null)[0];
      } else if (event.key === "Escape") { hide(); return; }
      else return;
      event.preventDefault();
      show();
    });
  }

  function heatmap(svg) {
    const [x0, y0, cell, rows, cols] = svg.dataset.grid.split(" ").map(Number);
    const values = [...svg.querySelectorAll("g.cells")].map((g) => g.dataset.v.split(" "));
    const rowNames = svg.dataset.rows.split("\u001f"), colNames = svg.dataset.cols.split("\u001f");
    const d = svg.dataset;
    const tip = tipFor(svg);
    const cursor = document.createElementNS(SVGNS, "rect");
    cursor.setAttribute("class", "fig-cursor");
    cursor.setAttribute("width", cell);
    cursor.setAttribute("height", cell);
    cursor.style.display = "none";
    svg.appendChild(cursor);
    let r = 0, c = 0;

    function show() {
      const x = x0 + c * cell, y = y0 + r * cell;
      cursor.setAttribute("x", x);
      cursor.setAttribute("y", y);
      cursor.style.display = "";
      const v = values[r][c];
      const where = d.ylabel + " " + (rowNames[r] || r) + ", " + d.xlabel + " " + (colNames[c] || c);
      // Plain concatenation: the minifier (rjsmin) does not know template literals.
      tip.show(where + ": " + (v === "m" ? d.masked : d.value + " " + v), x + cell, y);
    }
    function hide() { cursor.style.display = "none"; tip.hide(); }

    svg.addEventListener("pointermove", (event) => {
      const p = local(svg, event);
      if (!p) return;
      const cc = Math.floor((p.x - x0) / cell), rr = Math.floor((p.y - y0) / cell);
      if (rr < 0 || cc < 0 || rr >= rows || cc >= cols) { if (document.activeElement !== svg) hide(); return; }
      r = rr; c = cc;
      show();
    });
    svg.addEventListener("pointerleave", () => { if (document.activeElement !== svg) hide(); });
    svg.addEventListener("focus", show);
    svg.addEventListener("blur", hide);
    svg.addEventListener("keydown", (event) => {
      if (event.key === "ArrowRight") c = Math.min(cols - 1, c + 1);
      else if (event.key === "ArrowLeft") c = Math.max(0, c - 1);
      else if (event.key === "ArrowDown") r = Math.min(rows - 1, r + 1);
      else if (event.key === "ArrowUp") r = Math.max(0, r - 1);
      else if (event.key === "Home") c = 0;
      else if (event.key === "End") c = cols - 1;
      else if (event.key === "Escape") { hide(); return; }
      else return;
      event.preventDefault();
      show();
    });
  }
})();
