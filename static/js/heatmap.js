// A heatmap as site_builder/render/plots.py's heatmap() draws it, for a result the reader's
// browser recomputed (replay.js): the same SVG, byte for byte, which tests/test_tape.py checks
// against the Python drawing on the replayed matrices. Number formats follow Python's
// (round half to even at a tie, as f"{x:.1f}" does).
(() => {
  "use strict";
  const FONT_TICK = 11, FONT_LABEL = 12, CHAR_EM = 0.62, SCALE_STEPS = 16;
  const SUPERSCRIPT = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };
  const chars = (s) => [...String(s)].length;
  const textWidth = (t, size) => chars(t) * size * CHAR_EM;
  const esc = (t) => String(t).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");

  // f"{x:.{d}f}": JavaScript rounds a tie up, Python to the even digit (on the exact double).
  function fixed(x, d) {
    // x is a tie at d decimals iff x * 2^(d+1) (exact) is a whole number whose product with 5^d is odd.
    const y = x * 2 ** (d + 1);
    if (Number.isInteger(y) && Math.abs(y * 5 ** d) < 2 ** 53 && Math.abs(y * 5 ** d) % 2 === 1) {
      const n = (y * 5 ** d - Math.sign(y)) / 2;              // the digit string below the tie
      const even = n % 2 === 0 ? n : n + Math.sign(y);
      return (even / 10 ** d).toFixed(d);
    }
    return Object.is(x, -0) || (x < 0 && Number(x.toFixed(d)) === 0) ? "-" + Math.abs(x).toFixed(d) : x.toFixed(d);
  }
  const grouped = (s) => s.replace(/^(-?\d+)/, (m) => m.replace(/\B(?=(\d{3})+(?!\d))/g, ","));
  // f"{v:.{p}g}"
  function general(v, p) {
    if (v === 0) return Object.is(v, -0) ? "-0" : "0";
    const e = Math.floor(Math.log10(Math.abs(Number(v.toPrecision(p)))));
    if (e < -4 || e >= p) {
      const [m, x] = v.toExponential(p - 1).split("e");
      const mant = m.includes(".") ? m.replace(/0+$/, "").replace(/\.$/, "") : m;
      const n = Number(x);
      return `${mant}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
    }
    const s = v.toFixed(Math.max(0, p - 1 - e));
    return s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
  }
  const pyRound12 = (x) => Number(x.toFixed(12));

  function niceStep(span, target = 5) {
    const raw = span / Math.max(target, 1), mag = 10 ** Math.floor(Math.log10(raw));
    return [1, 2, 5, 10].map((s) => s * mag).find((s) => s >= raw * (1 - 1e-9));
  }
  function linearTicks(lo, hi, target = 5) {
    if (!(hi > lo)) [lo, hi] = lo === 0 ? [lo - 1, hi + 1] : [lo - Math.abs(lo) / 2, hi + Math.abs(hi) / 2];
    const step = niceStep(hi - lo, target);
    const first = Math.floor(lo / step + 1e-9), last = Math.ceil(hi / step - 1e-9);
    const ticks = [];
    for (let k = first; k <= last; k++) ticks.push(pyRound12(k * step) || 0);
    return [ticks, step];
  }
  const superscript = (n) => String(n).split("").map((c) => SUPERSCRIPT[c]).join("");
  function sci(v, digits = 2) {
    let e = Math.floor(Math.log10(Math.abs(v)));
    let mant = general(v / 10 ** e, digits);
    if (mant === "10" || mant === "-10") { e += 1; mant = mant.slice(0, -1); }
    const power = "10" + superscript(e);
    return mant === "1" ? power : mant === "-1" ? "-" + power : `${mant}×${power}`;
  }
  function tickLabels(ticks, step) {
    const nonzero = ticks.filter((t) => t).map(Math.abs);
    if (!nonzero.length) return ticks.map(() => "0");
    const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    const big = Math.max(...nonzero);
    if (decimals > 4 || big >= 1e7) return ticks.map((t) => (t === 0 ? "0" : sci(t)));
    if (big >= 10000 && ticks.every((t) => t % 1000 === 0)) return ticks.map((t) => (t === 0 ? "0" : grouped(fixed(t / 1000, 0)) + "k"));
    return ticks.map((t) => (t === 0 ? "0" : grouped(fixed(t, decimals))));
  }
  function valueLabel(v) {
    if (v === 0 || !Number.isFinite(v)) return v === 0 ? "0" : v > 0 ? "inf" : Number.isNaN(v) ? "nan" : "-inf";
    if (Number.isInteger(v) && Math.abs(v) < 1e7) return grouped(String(v));
    if (Math.abs(v) >= 1e-3 && Math.abs(v) < 1e6) return general(v, 4);
    return sci(v, 4);
  }
  const every = (labels, room, size) => {
    const widest = Math.max(0, ...labels.filter((l) => String(l)).map((l) => textWidth(l, size)));
    return room > 0 ? Math.max(1, Math.ceil((widest + 4) / room)) : 1;
  };

  // plots.hatch: three diagonal strokes across a masked cell, so it recedes in both themes.
  function hatch(x, y, size) {
    const h = size / 2;
    return `<path class="hatch" d="M${fixed(x, 1)} ${fixed(y + size, 1)}L${fixed(x + size, 1)} ${fixed(y, 1)}` +
      `M${fixed(x, 1)} ${fixed(y + h, 1)}L${fixed(x + h, 1)} ${fixed(y, 1)}` +
      `M${fixed(x + h, 1)} ${fixed(y + size, 1)}L${fixed(x + size, 1)} ${fixed(y + h, 1)}"/>`;
  }

  // grid: rows of numbers; masked: rows of booleans or null. Returns the SVG text.
  function heatmap(grid, rowLabels, colLabels, title, masked = null, xlabel = "column", ylabel = "row",
    valueName = "value", maskedName = "masked") {
    const rows = grid.length, cols = grid[0].length;
    const isMasked = (i, j) => masked !== null && !!masked[i][j];
    const shown = [];
    for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) if (!isMasked(i, j)) shown.push(grid[i][j]);
    const lo = Math.min(...shown), hi = Math.max(...shown), signed = lo < 0;
    const topVal = signed ? Math.max(Math.abs(lo), Math.abs(hi)) : hi;
    let [ticks, step] = linearTicks(0, topVal || 1, 4);
    const vmax = ticks[ticks.length - 1];
    if (signed) ticks = [...new Set([...ticks.map((t) => -t || 0), ...ticks])].sort((a, b) => a - b);
    const vmin = signed ? -vmax : 0;
    const tlabels = tickLabels(ticks, step);
    const decimals = Math.max(0, 3 - Math.floor(Math.log10(vmax)));
    const fmt = vmax >= 1e-3 && vmax < 1e5 ? (v) => fixed(v, decimals) : valueLabel;
    const cell = Math.max(14, Math.min(32, Math.floor(480 / Math.max(rows, cols))));
    const colEvery = every(colLabels, cell, FONT_TICK);
    const rowW = Math.max(0, ...rowLabels.map((l) => textWidth(l, FONT_TICK)));
    const left = 8 + FONT_LABEL + 8 + rowW + 6, top = 8 + FONT_LABEL + 6 + FONT_TICK + 6;
    const gw = cols * cell, gh = rows * cell;
    const barX = left, barW = Math.max(160, Math.min(gw, 260));
    const barTop = top + gh + 14 + FONT_LABEL + 6, swatchX = barX + barW + 24;
    const halfLast = textWidth(tlabels[tlabels.length - 1], FONT_TICK) / 2;
    const width = Math.max(left + gw + 8, barX + barW + halfLast + 8,
      masked !== null ? swatchX + 18 + textWidth(maskedName, FONT_TICK) + 8 : 0);
    const height = barTop + 12 + 6 + FONT_TICK + 8;
    const shade = (v) => {
      const frac = Math.max(0, Math.min(1, signed ? Math.abs(v) / vmax : (v - vmin) / (vmax - vmin)));
      const op = fixed(frac, 2).replace(/0+$/, "").replace(/\.$/, "");
      return [signed && v < 0 ? "n" : "", (op.startsWith("0.") ? op.slice(1) : op) || "0"];
    };
    let pos = null, neg = null, nMasked = 0;
    for (let i = 0; i < rows; i++) {
      for (let j = 0; j < cols; j++) {
        if (isMasked(i, j)) { nMasked++; continue; }
        if (pos === null || grid[i][j] > grid[pos[0]][pos[1]]) pos = [i, j];
        if (neg === null || grid[i][j] < grid[neg[0]][neg[1]]) neg = [i, j];
      }
    }
    const name = (labels, k) => (String(labels[k]) ? String(labels[k]) : String(k));
    const desc = `${rows} rows (${ylabel}) by ${cols} columns (${xlabel}) of ${valueName}; ` +
      `${signed ? "signed, " : ""}from ${fmt(lo)} (${ylabel} ${name(rowLabels, neg[0])}, ${xlabel} ${name(colLabels, neg[1])}) ` +
      `to ${fmt(hi)} (${ylabel} ${name(rowLabels, pos[0])}, ${xlabel} ${name(colLabels, pos[1])})` +
      (nMasked ? `; ${nMasked} cells ${maskedName}.` : ".");
    const out = [`<svg class="heatmap" viewBox="0 0 ${fixed(width, 0)} ${fixed(height, 0)}" width="${fixed(width, 0)}" height="${fixed(height, 0)}" role="img" tabindex="0" ` +
      `aria-label="${esc(title)}" data-grid="${fixed(left, 1)} ${top} ${cell} ${rows} ${cols}" data-xlabel="${esc(xlabel)}" ` +
      `data-ylabel="${esc(ylabel)}" data-value="${esc(valueName)}" data-masked="${esc(maskedName)}" ` +
      `data-rows="${esc(rowLabels.map(String).join("\x1f"))}" data-cols="${esc(colLabels.map(String).join("\x1f"))}" ` +
      'xmlns="http://www.w3.org/2000/svg">', `<title>${esc(title)}</title><desc>${esc(desc)}</desc>`];
    out.push(`<text class="axis-label" x="${fixed(left + gw / 2, 1)}" y="${8 + FONT_LABEL - 2}" text-anchor="middle">${esc(xlabel)}</text>`);
    const cy = top + gh / 2;
    out.push(`<text class="axis-label" x="${8 + FONT_LABEL - 2}" y="${fixed(cy, 1)}" text-anchor="middle" ` +
      `transform="rotate(-90 ${8 + FONT_LABEL - 2} ${fixed(cy, 1)})">${esc(ylabel)}</text>`);
    colLabels.forEach((lab, j) => {
      if (String(lab) && j % colEvery === 0) {
        out.push(`<text class="tick" x="${fixed(left + j * cell + cell / 2, 1)}" y="${top - 6}" text-anchor="middle">${esc(lab)}</text>`);
      }
    });
    rowLabels.forEach((lab, i) => {
      const y = top + i * cell;
      if (String(lab)) out.push(`<text class="tick" x="${fixed(left - 6, 1)}" y="${fixed(y + cell / 2 + 4, 1)}" text-anchor="end">${esc(lab)}</text>`);
      const values = [], cells = [];
      for (let j = 0; j < cols; j++) {
        const x = left + j * cell;
        values.push(isMasked(i, j) ? "m" : fmt(grid[i][j]));
        if (isMasked(i, j)) cells.push(`<rect class="masked" x="${fixed(x, 0)}" width="${cell}" height="${cell}"/>` + hatch(x, 0, cell));
        else {
          const [cls, op] = shade(grid[i][j]);
          const named = cls ? ' class="' + cls + '"' : "";     // not a nested template: see assets.py
          cells.push(`<rect${named} x="${fixed(x, 0)}" width="${cell}" height="${cell}" fill-opacity="${op}"/>`);
        }
      }
      out.push(`<g class="cells" transform="translate(0 ${y})" data-v="${values.join(" ")}">${cells.join("")}</g>`);
    });
    out.push(`<rect class="grid-frame" x="${fixed(left, 1)}" y="${top}" width="${gw}" height="${gh}"/>`);
    out.push(`<g class="scale"><text class="axis-label" x="${fixed(barX, 1)}" y="${barTop - 6}">${esc(valueName)}</text>`);
    const seg = barW / SCALE_STEPS;
    for (let k = 0; k < SCALE_STEPS; k++) {
      const [cls, op] = shade(vmin + (k + 0.5) / SCALE_STEPS * (vmax - vmin));
      out.push(`<rect class="cells-key${cls ? " n" : ""}" x="${fixed(barX + k * seg, 1)}" y="${barTop}" width="${fixed(seg + 0.3, 1)}" height="12" fill-opacity="${op}"/>`);
    }
    out.push(`<rect class="key-frame" x="${fixed(barX, 1)}" y="${barTop}" width="${fixed(barW, 1)}" height="12"/>`);
    ticks.forEach((t, k) => {
      const x = barX + (t - vmin) / (vmax - vmin) * barW;
      out.push(`<line class="key-tick" x1="${fixed(x, 1)}" x2="${fixed(x, 1)}" y1="${barTop + 12}" y2="${barTop + 16}"/>` +
        `<text class="tick" x="${fixed(x, 1)}" y="${barTop + 16 + FONT_TICK - 1}" text-anchor="middle">${esc(tlabels[k])}</text>`);
    });
    if (masked !== null) {
      out.push(`<rect class="masked" x="${fixed(swatchX, 1)}" y="${barTop}" width="12" height="12"/>` +
        hatch(swatchX, barTop, 12) + `<text class="tick" x="${fixed(swatchX + 18, 1)}" y="${barTop + 10}">${esc(maskedName)}</text>`);
    }
    out.push("</g></svg>");
    return out.join("");
  }

  const api = { heatmap, fixed, general };
  globalThis.playHeatmap = api;
})();
