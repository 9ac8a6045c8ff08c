// Search, with the index Pagefind built from the finished site (site_builder/search.py).
// The box is built here, so a page without JavaScript shows none. pagefind.js (an ES module
// in the bundle) is imported only when the reader first types: no cost for pages nobody
// searches from. From file:// browsers refuse to import modules, so the box says to serve the
// site instead of failing. Keys: "/" focuses the box, Down / Up move through the results,
// Escape closes them.
(() => {
  "use strict";
  const box = document.getElementById("search");
  if (!box || !box.dataset.bundle) return;
  const bundle = new URL(box.dataset.bundle, location.href);
  const siteRoot = new URL("../", bundle);

  box.innerHTML =
    '<label class="visually-hidden" for="search-input">Search the site</label>' +
    '<input id="search-input" type="search" placeholder="Search  ( / )" autocomplete="off" ' +
    'spellcheck="false" aria-controls="search-results" aria-keyshortcuts="/">' +
    '<div id="search-results" class="search-results" hidden>' +
    '<p class="search-status" role="status"></p><ol></ol></div>';
  const input = box.querySelector("input");
  const panel = box.querySelector(".search-results");
  const status = panel.querySelector(".search-status");
  const list = panel.querySelector("ol");

  let loading = null;
  function pagefind() {
    if (location.protocol === "file:") return Promise.reject(new Error("file"));
    if (!loading) {
      loading = import(new URL("pagefind.js", bundle).href).then(async (pf) => {
        await pf.options({ baseUrl: siteRoot.pathname });
        if (pf.init) await pf.init();
        return pf;
      });
      loading.catch(() => {
        loading = null;                         // let a later keystroke try again
      });
    }
    return loading;
  }

  let timer = null;
  let latest = 0;
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(run, 120);
  });
  input.addEventListener("focus", () => {
    if (input.value.trim() && list.children.length) panel.hidden = false;
  });

  async function run() {
    const query = input.value.trim();
    const ticket = ++latest;
    if (!query) {
      close();
      return;
    }
    panel.hidden = false;
    let pf;
    try {
      pf = await pagefind();
    } catch (e) {
      show(location.protocol === "file:"
        ? "Search works when the site is served (python3 build_site.py serve, or any web server), not from a file"
        : "Search is unavailable: this build has no search index (pagefind)");
      return;
    }
    const search = await pf.search(query);
    if (ticket !== latest) return;            // a newer query is on its way
    const top = await Promise.all(search.results.slice(0, 20).map((r) => r.data()));
    if (ticket !== latest) return;
    // A query that is a function name (`layer_norm_backward`, `model.ops.layer_norm_backward`)
    // lists first the concepts documenting that function, linked to the concept itself: their
    // page carries the meta "fn-<name>: <concept id>" (partials/concept.html), and the name's
    // weight of 10 keeps that page among the first results.
    const name = /^[A-Za-z_][\w.]*$/.test(query) ? query.split(".").pop() : null;
    const documents = (d) => name && d.meta["fn-" + name];
    const found = [
      ...top.filter(documents).map((d) => item(d, `${d.url.split("#")[0]}#${documents(d)}`, `Documents ${name}`)),
      ...top.filter((d) => !documents(d)).map((d) => item(d)),
    ].slice(0, 8);
    list.replaceChildren(...found);
    const total = search.results.length;
    show(found.length ? `${total} page${total === 1 ? "" : "s"} match` : "No match");
    panel.dataset.query = query;                // tells tests (and styles) which query is shown
  }

  function show(text) {
    status.textContent = text;
    panel.hidden = false;
  }

  function close() {
    panel.hidden = true;
    delete panel.dataset.query;
    list.replaceChildren();
    status.textContent = "";
  }

  // Land where the words are: the sub-result (a heading with an id) holding the most weighted
  // hits. A concept's first heading is "What is it?" (#<concept>--what): land on the concept.
  function landing(data) {
    let best = null;
    let bestScore = -1;
    for (const sub of data.sub_results || []) {
      const weights = sub.weighted_locations || [];
      const score = weights.length ? weights.reduce((a, w) => a + w.weight, 0) : (sub.locations || []).length;
      if (score > bestScore) {
        best = sub;
        bestScore = score;
      }
    }
    const url = (best ? best.url : data.url).replace(/#(.+)--what$/, "#$1");
    const heading = best && best.title !== data.meta.title ? best.title.replace(/^What is it\?$/, "") : "";
    return { url, heading, excerpt: best ? best.excerpt : data.excerpt };
  }

  function item(data, concept, note) {
    const { url: best, heading: sub, excerpt } = landing(data);
    const url = concept || best;
    const heading = note || sub;
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = url;
    const title = document.createElement("span");
    title.className = "search-title";
    title.textContent = data.meta.title || url;
    a.append(title);
    if (data.meta.kind) {
      const kind = document.createElement("span");
      kind.className = "search-kind";
      kind.textContent = data.meta.kind;
      a.append(" ", kind);
    }
    if (heading) {
      const h = document.createElement("span");
      h.className = "search-heading";
      h.textContent = heading;
      a.append(h);
    }
    const p = document.createElement("span");
    p.className = "search-excerpt";
    p.innerHTML = excerpt;                      // Pagefind escapes the text; only <mark> is markup
    a.append(p);
    li.append(a);
    return li;
  }

  // Keyboard.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "/" || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target.closest && event.target.closest("input, textarea, select, [contenteditable]")) return;
    event.preventDefault();
    input.focus();
    input.select();
  });
  box.addEventListener("keydown", (event) => {
    const links = [...list.querySelectorAll("a")];
    const at = links.indexOf(document.activeElement);
    if (event.key === "Escape") {
      input.focus();                            // (focusing reopens a non-empty list: close after)
      panel.hidden = true;
    } else if (event.key === "ArrowDown" && links.length) {
      event.preventDefault();
      links[Math.min(at + 1, links.length - 1)].focus();
    } else if (event.key === "ArrowUp" && at >= 0) {
      event.preventDefault();
      (at === 0 ? input : links[at - 1]).focus();
    }
  });
  document.addEventListener("click", (event) => {
    if (!box.contains(event.target)) panel.hidden = true;
  });
})();
