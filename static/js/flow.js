// Flow diagrams: the statements of a function in code order (drawn by the build from the
// syntax tree). Selecting a step shows, under the diagram, its function and lines, the
// gradients it fills, the listing of the function it calls, and its lines highlighted in the
// function's own listing. The selection goes into the URL (#<concept>--flow-<k>), so a link
// or a reload shows the same step; without JavaScript that anchor still scrolls to the step.
(() => {
  "use strict";

  for (const list of document.querySelectorAll("ol.flow")) init(list);

  function init(list) {
    const detail = list.nextElementSibling;
    if (!detail || !detail.classList.contains("flow-detail")) return;
    const items = [...list.querySelectorAll(":scope > li.flow-step")];
    if (!items.length) return;
    const selected = detail.querySelector(".flow-selected");
    const slot = detail.querySelector(".flow-callee-slot");
    const fnRows = [...detail.querySelectorAll(".flow-fn-listing tr[data-line]")];
    const fnName = (list.dataset.function || "").split(".").pop();

    const buttons = items.map((li, i) => {
      const code = li.querySelector(":scope > code");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "flow-select";
      button.setAttribute("aria-pressed", "false");
      button.setAttribute("aria-describedby", selected.id);
      button.append(code ? code.cloneNode(true) : `Step ${i + 1}`);
      if (code) code.replaceWith(button);
      else li.prepend(button);
      button.addEventListener("click", () => select(i, true));
      button.addEventListener("keydown", (event) => {
        const to = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: items.length - 1 }[event.key];
        if (to === undefined || to < 0 || to >= items.length) return;
        event.preventDefault();
        buttons[to].focus();
        select(to, true);
      });
      return button;
    });
    detail.hidden = false;
    list.classList.add("flow-live");

    const fromHash = items.findIndex((li) => "#" + li.id === decodeURIComponent(location.hash));
    select(fromHash >= 0 ? fromHash : 0, false);
    window.addEventListener("hashchange", () => {
      const i = items.findIndex((li) => "#" + li.id === decodeURIComponent(location.hash));
      if (i >= 0) select(i, false);
    });

    // The lines a step stands for: the statement itself and the `grads[...] +=` lines the
    // build folded into it.
    function linesOf(li) {
      const start = Number(li.dataset.line);
      const end = Number(li.dataset.end || start);
      const lines = [];
      for (let n = start; n <= end; n++) lines.push(n);
      for (const g of (li.dataset.gradLines || "").split(" ")) if (g) lines.push(Number(g));
      return lines;
    }

    function select(i, remember) {
      items.forEach((li, j) => {
        li.classList.toggle("selected", i === j);
        buttons[j].setAttribute("aria-pressed", String(i === j));
      });
      const li = items[i];
      const lines = linesOf(li);
      const where = li.querySelector(".flow-line");
      const grads = [...li.querySelectorAll(".fills code")].map((c) => c.textContent);
      const file = where ? where.textContent.split(":")[0] : "";
      selected.textContent =
        `Selected: step ${i + 1} of ${items.length}, in ${fnName}, ` +
        `${file}:${lines.join(", ")}. ` +
        (grads.length ? `Fills grads: ${grads.join(", ")}.` : "Fills no gradient itself.");
      selected.dataset.lines = lines.join(" ");
      for (const tr of fnRows) {
        const on = lines.includes(Number(tr.dataset.line));
        tr.classList.toggle("current", on);
        if (on) tr.setAttribute("aria-current", "true");
        else tr.removeAttribute("aria-current");
      }
      const template = li.querySelector("template.flow-callee");
      slot.replaceChildren(template ? template.content.cloneNode(true) : "");
      if (window.site && window.site.decorateListings) window.site.decorateListings(slot);
      if (remember) history.replaceState(null, "", "#" + li.id);
    }
  }
})();
