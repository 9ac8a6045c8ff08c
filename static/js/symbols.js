// Linked symbols. Each concept's symbol table row carries the symbol's number (data-sym),
// its names in code (data-names) and other code expressions (data-exprs); the build wrapped
// the symbol inside every equation of the concept in class "sym-<n>" (site_builder/symbols.py).
// Hovering or focusing a symbol (its table row, its atom in an equation, or a code token with
// one of its names) highlights it in all four places within that concept: the equations, the
// symbol table, the code listings and the example tables.
(() => {
  "use strict";

  for (const section of document.querySelectorAll("section.concept")) init(section);

  function init(section) {
    const symbols = new Map();                    // n -> {row, names, exprs}
    for (const row of section.querySelectorAll("table.symbols tr[data-sym]")) {
      let exprs = [];
      try {
        exprs = JSON.parse(row.dataset.exprs || "[]");
      } catch (e) {
        exprs = [];
      }
      symbols.set(row.dataset.sym, {
        row,
        names: (row.dataset.names || "").split(" ").filter(Boolean),
        exprs: exprs.map(squash),
      });
      row.tabIndex = 0;                           // keyboard users focus a row to highlight
      row.classList.add("sym-row");
    }
    if (!symbols.size) return;
    const byName = new Map();                     // code name -> symbol number
    for (const [n, s] of symbols) for (const name of s.names) if (!byName.has(name)) byName.set(name, n);

    let active = null;
    const on = (n) => {
      if (n === active) return;
      off();
      const s = symbols.get(n);
      if (!s) return;
      active = n;
      for (const node of targets(n, s)) node.classList.add("sym-hl");
    };
    const off = () => {
      if (active === null) return;
      for (const node of section.querySelectorAll(".sym-hl")) node.classList.remove("sym-hl");
      active = null;
    };

    // Looked up on every highlight: the stepper and the flow diagram redraw their tables.
    function targets(n, s) {
      const out = [s.row, ...section.querySelectorAll(`.katex .sym-${n}`)];
      const names = new Set(s.names);
      if (names.size) {
        for (const span of section.querySelectorAll(".listing td.code span")) {
          if (names.has(tokenName(span))) out.push(span);
        }
        for (const node of section.querySelectorAll("[data-name], code.sym")) {
          if (node.closest("table.symbols")) continue;
          const name = node.dataset.name || node.textContent.trim();
          if (names.has(name)) out.push(node);
        }
      }
      if (s.exprs.length) {
        for (const td of section.querySelectorAll(".listing td.code")) {
          const text = squash(td.textContent);
          if (s.exprs.some((x) => x && text.includes(x))) out.push(td);
        }
      }
      return out;
    }

    // Which symbol, if any, does this node stand for?
    function symbolOf(node) {
      if (!(node instanceof Element)) return null;
      const row = node.closest("tr.sym-row");
      if (row && section.contains(row)) return row.dataset.sym;
      const atom = node.closest(".katex [class*='sym-']");
      if (atom) {
        const m = /(?:^|\s)sym-(\d+)(?:\s|$)/.exec(atom.className);
        if (m) return m[1];
      }
      if (node.matches(".listing td.code span")) {
        const n = byName.get(tokenName(node));
        if (n !== undefined) return n;
      }
      return null;
    }

    section.addEventListener("mouseover", (event) => {
      const n = symbolOf(event.target);
      if (n !== null) on(n);
      else if (!event.target.closest(".sym-hl")) off();
    });
    section.addEventListener("mouseleave", off);
    section.addEventListener("focusin", (event) => {
      const n = symbolOf(event.target);
      if (n !== null) on(n);
    });
    section.addEventListener("focusout", (event) => {
      if (symbolOf(event.target) !== null) off();
    });
  }

  // A Pygments token's text; a string token ("ff1_w") counts by its contents.
  function tokenName(span) {
    return span.textContent.replace(/^(["'])(.*)\1$/, "$2");
  }

  function squash(text) {
    return String(text).replace(/\s+/g, "");
  }
})();
