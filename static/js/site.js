// Progressive enhancement only: every page reads completely without JavaScript.
// Each file in static/js is one small, independent feature; a page loads the features it has
// as one deferred file, this one first and each other in a task of its own
// (site_builder/assets.py). Classic scripts, not ES modules, so that pages opened from
// file:// run them without CORS errors:
//   site.js     the Menu button on narrow screens, keyboard shortcuts between pages
//   theme.js    light / dark toggle, remembered
//   copy.js     "Copy link" on equations, "Copy code" on listings
//   stepper.js  step through one row of a traced example
//   flow.js     select a step of a flow diagram; the URL remembers it
//   symbols.js  point at a symbol: it lights up in equations, tables and code
//   search.js   Pagefind search box
//   lines.js    source pages: mark the rows of a #L113-L116 range
//   figures.js  charts and heatmaps: the value under the pointer or the keyboard cursor
(() => {
  "use strict";
  document.documentElement.classList.add("js");

  // Menu: below 860px wide the sidebar folds away behind this button (see site.css).
  const toggle = document.querySelector(".nav-toggle");
  const sidebar = document.getElementById("sidebar");
  if (toggle && sidebar) {
    toggle.hidden = false;
    toggle.addEventListener("click", () => {
      const open = sidebar.classList.toggle("open");
      toggle.setAttribute("aria-expanded", String(open));
    });
  }

  // Line numbers of listings are plain text (a link on every line was a tenth of the bytes
  // of a page). A click opens that line on the source page (data-src on the listing), or on a
  // source page puts the line in the URL. Each listing's heading links to its lines anyway.
  document.addEventListener("click", (event) => {
    const cell = event.target.closest ? event.target.closest(".code-table td.ln") : null;
    if (!cell) return;
    const row = cell.parentElement, src = row.closest("table").dataset.src;
    if (src && row.dataset.line) location.href = `${src}#L${row.dataset.line}`;
    else if (row.id) location.hash = row.id;
  });

  // Keyboard: p / n go to the previous / next page (the <link rel> in <head>).
  // Ignored while typing, and with modifier keys (so browser shortcuts keep working).
  const keys = document.querySelector(".footer .keys");
  if (keys) keys.hidden = false;
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    if (typing(event.target)) return;
    const rel = { n: "next", p: "prev" }[event.key];
    const link = rel && document.querySelector(`link[rel="${rel}"]`);
    if (link) {
      event.preventDefault();
      location.href = link.href;
    }
  });

  // A wide equation or table scrolls inside its own box (.scroll). When it does overflow, the
  // box takes keyboard focus (arrow keys scroll it) and a name, so it is reachable without a
  // mouse; boxes that fit leave the tab order. Measuring a box (scrollWidth) lays it out, and
  // off-screen sections are not laid out (content-visibility in site.css): measuring every
  // box at once was a long task that kept a phone from answering taps. So every box starts
  // focusable and named (no measuring), and a box is measured when it comes near the screen,
  // where it is laid out anyway. Again for every box when the window resizes.
  // A box that site.css skips while far off screen (content-visibility) has no width of its
  // own content until drawn: it is measured when the browser says it drew it.
  const near = "IntersectionObserver" in window
    ? new IntersectionObserver((entries) => {
        for (const entry of entries) if (entry.isIntersecting && drawn(entry.target)) mark(entry.target);
      }, { rootMargin: "100% 0px" })
    : null;
  function drawn(box) {
    const inner = box.firstElementChild;
    return !inner || !inner.checkVisibility || inner.checkVisibility({ contentVisibilityAuto: true });
  }
  document.addEventListener("contentvisibilityautostatechange", (event) => {
    if (!event.skipped && event.target.matches(".scroll")) mark(event.target);
  }, true);
  function scrollables() {
    for (const box of document.querySelectorAll(".scroll")) {
      if (!box.hasAttribute("tabindex")) focusable(box);    // listings are focusable regions already
      if (near) {
        near.unobserve(box);
        near.observe(box);
      } else mark(box);
    }
  }
  function focusable(box) {
    box.tabIndex = 0;
    if (box.localName !== "figure") box.setAttribute("role", "group");   // a figure keeps its own role
    box.setAttribute("aria-label", labelOf(box));
  }
  function mark(box) {
    const wide = box.scrollWidth > box.clientWidth;
    if (wide && !box.edgesWatched) {
      box.edgesWatched = true;
      box.addEventListener("scroll", () => edges(box), { passive: true });
    }
    edges(box);
    if (box.matches(".listing")) return;
    if (wide) {
      if (!box.hasAttribute("tabindex")) focusable(box);
      box.dataset.scrollFocus = "";
    } else if (box.hasAttribute("aria-label")) {
      box.removeAttribute("tabindex");
      box.removeAttribute("role");
      box.removeAttribute("aria-label");
      delete box.dataset.scrollFocus;
    }
  }
  // data-more-right / data-more-left: the box has more to scroll to on that side; site.css
  // draws a shadow there, over the code, so a cut line never looks like its end.
  function edges(box) {
    const left = box.scrollLeft, room = box.scrollWidth - box.clientWidth;
    box.toggleAttribute("data-more-right", room - left > 1);
    box.toggleAttribute("data-more-left", left > 1);
  }
  function labelOf(box) {
    const figure = box.closest("figure.equation");
    const name = figure && figure.querySelector(".eq-name");
    if (name) return `Equation: ${name.textContent.trim()} (scrolls sideways)`;
    const caption = box.querySelector("caption, .matrix-name");
    return caption ? `${caption.textContent.trim()} (scrolls sideways)` : "Wide table (scrolls sideways)";
  }
  scrollables();
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(scrollables, 150);
  });
  // Again once the other scripts have drawn their parts, and once the math font has loaded
  // (it changes the equations' widths). Not `document.fonts.ready`: reading it makes the
  // browser work out the style of the whole page at once, to know which fonts are pending (on
  // the longest page, 90-430 ms of one task on a phone-speed CPU); the event costs nothing.
  window.addEventListener("load", scrollables);
  if (document.fonts) document.fonts.addEventListener("loadingdone", scrollables);

  // Each section's evidence (the code-and-math connection, the tests that reach it) is one
  // collapsed <details>: in the HTML for search and for readers without JavaScript, drawn only
  // when opened. A link to something inside one opens it (also a link to the hash the page is
  // already at, which fires no hashchange), and printing opens them all.
  function openTarget() {
    const id = decodeURIComponent(location.hash.slice(1));
    const target = id && document.getElementById(id);
    if (!target) return;
    let part = target.closest("details:not([open])");
    if (!part) return;
    for (; part; part = part.parentElement.closest("details:not([open])")) part.open = true;
    target.scrollIntoView();
  }
  openTarget();
  window.addEventListener("hashchange", openTarget);
  document.addEventListener("click", event => {
    const link = event.target.closest && event.target.closest('a[href^="#"]');
    if (link && link.getAttribute("href") === location.hash) openTarget();
  });
  let closedForPrint = [];
  window.addEventListener("beforeprint", () => {
    closedForPrint = [...document.querySelectorAll("details.reference:not([open])")];
    for (const part of closedForPrint) part.open = true;
  });
  window.addEventListener("afterprint", () => {
    for (const part of closedForPrint) part.open = false;
    closedForPrint = [];
  });

  function typing(target) {
    return !!(target && target.closest && target.closest("input, textarea, select, [contenteditable]"));
  }
})();
