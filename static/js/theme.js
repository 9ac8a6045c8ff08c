// Light and dark themes.
// With no choice made, the system preference applies (the prefers-color-scheme block of
// site.css). The toggle stores a choice in localStorage and sets data-theme on <html>; the
// tiny inline script in <head> applies it again on the next page before the first paint, so
// a chosen theme never flashes. The button says what a click does ("Switch to light theme"
// while dark shows): a label that changes with the state is an action, so it carries no
// aria-pressed (which would announce "pressed" beside a label naming the other theme).
(() => {
  "use strict";
  const button = document.querySelector(".theme-toggle");
  if (!button) return;
  const root = document.documentElement;
  const system = window.matchMedia("(prefers-color-scheme: dark)");
  const current = () => root.dataset.theme || (system.matches ? "dark" : "light");
  const other = () => (current() === "dark" ? "light" : "dark");
  // "Switch to <dark> theme": on a phone site.css shows only the theme's name, so the title and
  // the button share the header's first row; the accessible name stays the whole sentence.
  const part = (text, cls) => Object.assign(document.createElement("span"), { textContent: text, className: cls });
  const show = () => {
    const name = other();
    button.setAttribute("aria-label", `Switch to ${name} theme`);
    button.replaceChildren(part("Switch to ", "theme-words"), part(name, "theme-name"), part(" theme", "theme-words"));
  };

  button.hidden = false;
  show();
  button.addEventListener("click", () => {
    const next = other();
    root.dataset.theme = next;
    try {
      localStorage.setItem("theme", next);
    } catch (e) {
      // Storage can be disabled (private windows, file://): the choice lasts for this page.
    }
    show();
  });
  system.addEventListener("change", show);

  // Paper is white: print in the light theme whatever the screen shows, then switch back.
  let before = null;
  window.addEventListener("beforeprint", () => {
    before = root.dataset.theme || null;
    root.dataset.theme = "light";
  });
  window.addEventListener("afterprint", () => {
    if (before) root.dataset.theme = before;
    else delete root.dataset.theme;
  });
})();
