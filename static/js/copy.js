// Copy buttons: a link icon ("Copy link to ...") on every equation (a link to its anchor), "Copy code" on every
// code listing. The buttons are in the HTML hidden (equations) or added here (listings), so a
// page without JavaScript shows no button that cannot work.
(() => {
  "use strict";
  const site = (window.site = window.site || {});

  // One polite live region announces the result to screen readers.
  const status = document.createElement("p");
  status.className = "visually-hidden";
  status.setAttribute("aria-live", "polite");
  document.body.appendChild(status);

  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (e) {
      // No clipboard API (insecure origin, file://, denied): the old selection way.
      const area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      let ok = false;
      try {
        ok = document.execCommand("copy");
      } catch (err) {
        ok = false;
      }
      area.remove();
      return ok;
    }
  }

  async function copyWith(button, text, what) {
    const ok = await copyText(text);
    // the label may be markup (an equation's link icon): kept and put back whole
    const label = button.dataset.label || button.innerHTML;
    button.dataset.label = label;
    button.textContent = ok ? "Copied" : "Copy failed";
    button.dataset.copied = String(ok);
    status.textContent = ok ? `${what} copied` : `Could not copy the ${what.toLowerCase()}`;
    clearTimeout(button._reset);
    button._reset = setTimeout(() => {
      button.innerHTML = label;
    }, 1600);
  }

  // Equations: data-href is the anchor; the copied link is absolute.
  for (const button of document.querySelectorAll(".copy-link[data-href]")) {
    button.hidden = false;
    button.addEventListener("click", () => {
      const url = new URL(button.dataset.href, location.href).href;
      copyWith(button, url, "Link");
    });
  }

  // Listings: the text of the code cells, one line each (line numbers and citations left out).
  site.decorateListings = (scope) => {
    for (const listing of scope.querySelectorAll(".listing")) {
      let wrap = listing.parentElement;
      if (!wrap.classList.contains("listing-wrap")) {
        wrap = document.createElement("div");
        wrap.className = "listing-wrap";
        listing.replaceWith(wrap);
        wrap.appendChild(listing);
      }
      // A body put back from its HTML (a playable example's) keeps the wrap and a button with no listener.
      const old = wrap.querySelector(":scope > .copy-code");
      if (old && old.copies) continue;
      if (old) old.remove();
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.textContent = "Copy code";
      const label = listing.getAttribute("aria-labelledby") || listing.getAttribute("aria-label");
      if (listing.getAttribute("aria-labelledby")) button.setAttribute("aria-describedby", label);
      button.addEventListener("click", () => {
        const lines = [...listing.querySelectorAll("td.code")].map((td) => td.textContent);
        copyWith(button, lines.join("\n") + "\n", "Code");
      });
      button.copies = true;
      wrap.appendChild(button);
    }
  };
  site.decorateListings(document);
})();
