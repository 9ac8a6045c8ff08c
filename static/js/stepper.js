// Step through one row of a traced example.
// The build embeds the steps as JSON in data-steps (label, local name, line, code, the row
// after the line, the row before it and its name, for an add both terms, and one sentence on
// what the line does). Without JavaScript the page
// lists every step and marks the first step's line; with it, one step shows at a time with
// Previous / Next / Reset, the arrow keys (Left / Right, Home for the first step, End for the
// last) and the line being run highlighted in the listing above.
(() => {
  "use strict";

  // play.js swaps an example's body for another input's: it calls this on the new body.
  window.stepperInit = (root) => {
    for (const box of root.querySelectorAll(".stepper[data-steps]")) {
      try {
        init(box);
      } catch (e) {
        box.classList.remove("stepper-live");     // keep the static list readable
      }
    }
  };
  window.stepperInit(document);

  function el(tag, attrs = {}, text = "") {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text) node.textContent = text;
    return node;
  }

  function init(box) {
    const steps = JSON.parse(box.dataset.steps);
    if (!steps.length) return;
    const row = box.dataset.row;
    const rows = new Map();                       // line number -> <tr> of the listing
    for (const tr of box.querySelectorAll(".stepper-code tr[data-line]")) rows.set(Number(tr.dataset.line), tr);

    // A body put back from its HTML (play.js, the build's own choice) holds its first run's controls, without listeners.
    for (const stale of box.querySelectorAll(":scope > .stepper-controls, :scope > .stepper-panel")) stale.remove();
    const controls = el("div", { class: "stepper-controls", role: "group", "aria-label": "Step through the example" });
    const prev = el("button", { type: "button", class: "stepper-prev" }, "Previous");
    const next = el("button", { type: "button", class: "stepper-next" }, "Next");
    const reset = el("button", { type: "button", class: "stepper-reset" }, "Reset");
    const status = el("p", { class: "stepper-status", "aria-live": "polite" });
    controls.append(prev, next, reset, status);
    const panel = el("div", { class: "stepper-panel" });
    const code = box.querySelector(".stepper-code");
    box.insertBefore(controls, code || box.querySelector(".stepper-steps"));
    box.insertBefore(panel, box.querySelector(".stepper-steps"));
    box.classList.add("stepper-live");

    let k = 0;
    prev.addEventListener("click", () => show(k - 1));
    next.addEventListener("click", () => show(k + 1));
    reset.addEventListener("click", () => show(0));
    box.addEventListener("keydown", (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      if (event.target.closest(".listing")) return;   // arrows scroll a listing sideways
      const to = { ArrowLeft: k - 1, ArrowRight: k + 1, Home: 0, End: steps.length - 1 }[event.key];
      if (to === undefined) return;
      event.preventDefault();
      show(to);
    });
    show(0);

    function show(i) {
      k = Math.max(0, Math.min(steps.length - 1, i));
      const st = steps[k];
      status.textContent = `Step ${k + 1} of ${steps.length}: ${st.label}`;
      // aria-disabled, not disabled: a disabled button drops keyboard focus, and the arrows with it.
      prev.setAttribute("aria-disabled", String(k === 0));
      next.setAttribute("aria-disabled", String(k === steps.length - 1));
      for (const [line, tr] of rows) {
        const on = line === st.line;
        tr.classList.toggle("current", on);
        if (on) tr.setAttribute("aria-current", "step");
        else tr.removeAttribute("aria-current");
      }
      const parts = [lineOf(st)];
      if (st.says) parts.push(el("p", { class: "stepper-says" }, st.says));
      panel.replaceChildren(...parts, values(st, k ? steps[k - 1] : null));
    }

    function lineOf(st) {
      const p = el("p", { class: "stepper-line" });
      const a = el("a", { href: `${box.dataset.href}#L${st.line}` }, `${box.dataset.file}:${st.line}`);
      p.append("Runs ", a, " ", el("code", {}, st.code));
      return p;
    }

    function label(name) {
      return name.startsWith("return") ? "out" : name;
    }

    function values(st, before) {
      const wrap = el("div", { class: "scroll" });
      const table = el("table", { class: "numbers row-values" });
      table.append(el("caption", {}, `Row ${row}, before and after the line`));
      const add = (cls, name, head, nums) => {
        const tr = el("tr", { class: cls, "data-name": name });
        const th = el("th", { scope: "row" });
        th.append(head, el("code", {}, `${label(name)}[${row}]`));
        tr.append(th);
        for (const x of nums) tr.append(el("td", {}, x));
        table.append(tr);
      };
      // At an add, "before" is the stream being added to (the first term), then "+ branch".
      const terms = st.terms || [];
      if (terms.length) {
        add("before", terms[0].name, "before: ", terms[0].row);
        terms.slice(1).forEach((t) => add("term", t.name, "+ ", t.row));
      } else if (st.before && before) {
        add("before", st.before_name || before.name, "before: ", st.before);
      }
      add("after", st.name, terms.length ? "= " : "after: ", st.after);
      wrap.append(table);
      return wrap;
    }
  }
})();
