// Choose an example's input. On any static host: the build ran every combination of the
// declared choices; the page shows the first and loads another's body (a small script under
// play/, which works from file:// too, where fetch does not) when the reader picks it. The
// choice is kept in the URL (?row=2&layer=1), so a link shares the exact view. Under
// `python3 build_site.py serve` (its /__reload.js is on the page) the free-input fields appear:
// the serve process validates the value, runs the same example function on it and answers
// with the body rendered by the same template (site_builder/playground.py). A value typed
// there and run is kept in the URL too, under a key of its own (?typed-prompt=the+cat: a menu's
// value may be the same text, ?prompt=1 is its second choice), and a link with it runs it again.
// On any other host, an example whose build recorded a tape (data-replay) takes free input too:
// the value is checked here against the declaration /__play checks it with (data-spec), and on
// first use the replayer (static/js/replay.js, heatmap.js, replay-views.js) and the tape load,
// and recompute it in the browser (site_builder/run/tape.py). A static host without a tape has
// no code to run, so it says so. The status line says which path computed what the page shows.
(() => {
  "use strict";
  const forms = [...document.querySelectorAll("form.play[data-example]")];
  if (!forms.length) return;
  // The site's root, from the page's script bundle (static/js/<features>.js, site_builder/assets.py).
  const me = document.querySelector('script[src*="static/js/"]');
  const root = me ? me.getAttribute("src").replace(/static\/js\/[^/]*$/, "") : "";
  const serve = !!document.querySelector('script[src="/__reload.js"]');
  const replayable = (form) => !serve && !!form.dataset.replay;
  const waiting = new Map();          // "example key" -> resolve
  const loaded = new Map();           // "example key" -> body HTML
  const first = new Map();            // form -> the body the page was built with

  window.playFragment = (id, key, html) => {
    loaded.set(`${id} ${key}`, html);
    const done = waiting.get(`${id} ${key}`);
    if (done) done(html);
  };

  function load(id, key) {
    const k = `${id} ${key}`;
    if (loaded.has(k)) return Promise.resolve(loaded.get(k));
    return new Promise((resolve, reject) => {
      waiting.set(k, (html) => { waiting.delete(k); resolve(html); });
      const s = document.createElement("script");
      s.src = `${root}play/${encodeURIComponent(id)}/${encodeURIComponent(key)}.js`;
      s.onerror = () => { waiting.delete(k); reject(new Error(`could not load ${s.src}`)); };
      s.onload = () => s.remove();
      document.head.append(s);
    });
  }

  // The replayer's scripts, then an example's tape (a script calling playTape), each loaded once.
  const scripts = new Map();
  const script = (src) => {
    if (!scripts.has(src)) {
      scripts.set(src, new Promise((resolve, reject) => {
        const s = document.createElement("script");
        s.src = src;
        s.onload = () => resolve();
        s.onerror = () => { scripts.delete(src); reject(new Error(`could not load ${src}`)); };
        document.head.append(s);
      }));
    }
    return scripts.get(src);
  };
  const tapes = new Map();
  window.playTape = (id, bundle) => tapes.set(id, bundle);
  async function tapeOf(form) {
    for (const name of ["replay", "heatmap", "replay-views"]) await script(`${root}static/js/${name}.js`);
    await script(root + form.dataset.replay);
    const bundle = tapes.get(form.dataset.example);
    if (!bundle) throw new Error(`${form.dataset.replay} holds no tape for this example`);
    return bundle;
  }

  // The browser's copy of site_builder/gather/playground.py validate(): the same declaration, the
  // same one-line refusals; the value is read as a number or kept as text, never evaluated.
  const g = (v) => {                  // f"{v:g}"
    if (v === 0) return Object.is(v, -0) ? "-0" : "0";
    const e = Math.floor(Math.log10(Math.abs(Number(v.toPrecision(6)))));
    if (e >= -4 && e < 6) return String(Number(v.toPrecision(6)));
    const [m, x] = v.toExponential(5).split("e");
    return `${m.replace(/\.?0+$/, "")}e${Number(x) < 0 ? "-" : "+"}${String(Math.abs(Number(x))).padStart(2, "0")}`;
  };
  // Python's float() syntax without its underscores (site_builder/gather/playground.py _parse)
  const PY_FLOAT = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
  // What Python's str.strip() and str.split() take for space (str.isspace), not JavaScript's \s:
  // \ufeff is space to trim() but not to Python, and \x1c-\x1f and \x85 the other way round.
  const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
  const PY_SPACE_EDGES = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");
  const PY_SPACE_RUN = new RegExp(`[${PY_SPACE}]+`);
  const pyStrip = (text) => text.replace(PY_SPACE_EDGES, "");
  const pySplit = (text) => text.split(PY_SPACE_RUN).filter(Boolean);
  const NUMBER_LIMIT = 40;
  function checked(spec, value) {
    // the value as the reader typed it (100.0000001 is not 100), as /__play says it
    const between = ([v, typed]) => {
      if (!(spec.min <= v && v <= spec.max)) throw new Error(`must be between ${g(spec.min)} and ${g(spec.max)}, got ${typed}`);
      return v;
    };
    const number = (text, what) => {
      const t = pyStrip(text);
      if (!t) throw new Error(`must be ${what}; the field holds only spaces`);
      if (t.length > NUMBER_LIMIT) {
        throw new Error(`must be ${what} of at most ${NUMBER_LIMIT} characters (an exponent shortens one: 1.5e-30), got ${t.length} characters`);
      }
      if (/^[+-]?(inf|infinity|nan)$/i.test(t)) throw new Error(`must be a finite number, got '${t}'`);
      if (!PY_FLOAT.test(t) || (what === "a whole number" && !/^[+-]?\d+$/.test(t))) {
        throw new Error(`must be ${what}, got '${t.slice(0, 20)}'`);
      }
      const v = Number(t);
      if (!Number.isFinite(v)) throw new Error(`must be a finite number, got '${t}'`);
      return [v, t];
    };
    if (spec.type === "int") return between(number(value, "a whole number"));
    if (spec.type === "float") return between(number(value, "a number"));
    if (spec.type === "numbers") {
      const parts = pySplit(value.replace(/,/g, " ")).map((p) => number(p, "a number"));
      if (parts.length !== spec.length) throw new Error(`must be ${spec.length} numbers, got ${parts.length}`);
      return parts.map(between);
    }
    const chars = [...value];
    if (!chars.length) throw new Error("must not be empty");
    if (chars.length > spec.max_length) throw new Error(`is ${chars.length} characters long; at most ${spec.max_length} are allowed`);
    if (spec.characters) {
      const known = new Set(spec.characters);
      const unknown = [...new Set(chars.filter((c) => !known.has(c)))].sort();
      if (unknown.length) {
        const shown = unknown.slice(0, 5).map((c) => globalThis.playViews ? globalThis.playViews.pyRepr(c) : `'${c}'`).join(", ") +
          (unknown.length > 5 ? " ..." : "");
        throw new Error(`has characters outside its vocabulary: ${shown} (it takes ${spec.known.replace("{n}", [...spec.characters].length)})`);
      }
    }
    return value;
  }

  // The menus' values and the typed ones, checked; null (and the refusal said) if one does not fit.
  function checkedArgs(form) {
    // (an example with no tape ships no declaration: serve's /__play alone checks its input)
    const spec = form.dataset.spec ? JSON.parse(form.dataset.spec) : null, args = {};
    for (const s of selects(form)) if (s.value !== TYPED) args[s.name] = JSON.parse(s.selectedOptions[0].dataset.value);
    for (const input of typed(form)) {
      try {
        args[input.name] = spec ? checked(spec[input.name], input.value) : input.value;
      } catch (e) {
        say(form, `${input.name} ${e.message}`, true);
        return null;
      }
    }
    return args;
  }

  // The reader's input, recomputed in this browser from the example's tape.
  async function replayMine(form) {
    restoreMenus(form);
    // Nothing typed: the menus' choice, which this build computed (serve runs the defaults too).
    if (!typed(form).length) {
      await choose(form);
      keepInUrl();
      return;
    }
    const args = checkedArgs(form);
    if (!args) return;
    say(form, "Loading the replayer and this example's tape…");
    try {
      const bundle = await tapeOf(form);
      const start = performance.now();
      const mineOnly = new Set(typed(form).map((i) => i.name));      // what the result says the reader typed
      const { slots, said, body: own } = globalThis.playViews.VIEWS[bundle.view](bundle, args, keyOf(form), mineOnly);
      const html = (own || bundle.body).replace(/@@([^@]+)@@/g, (m, k) => (k === "svg" ? slots.svg : escapeHtml(slots[k])));
      swap(form, html);
      markTyped(form);
      say(form, `Recomputed in your browser by replaying the tape of the NumPy computation (${said}, ${(performance.now() - start).toFixed(1)} ms); under serve the NumPy code itself runs.`);
      keepInUrl();
    } catch (e) {
      say(form, e.message, true);
    }
  }
  // As Jinja escapes a text (markupsafe): the template's other texts are escaped so.
  const escapeHtml = (t) => String(t).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/'/g, "&#39;").replace(/"/g, "&#34;");

  const selects = (form) => [...form.querySelectorAll("select")];
  // The menu of a parameter the reader typed shows "your prompt" as current while the typed
  // value is what the page shows; choosing from the menu again removes it.
  const TYPED = "__typed";
  function markTyped(form) {
    for (const input of typed(form)) {
      const s = form.querySelector(`select[name="${input.name}"]`);
      if (!s) continue;
      let o = s.querySelector(`option[value="${TYPED}"]`);
      if (!o) {
        o = document.createElement("option");
        o.value = TYPED;
        o.textContent = `your ${input.name}`;
        s.append(o);
      }
      if (s.value !== TYPED) s.dataset.chosen = s.value;
      s.value = TYPED;
    }
  }
  // A field emptied again: its menu shows the choice it showed before the typed value.
  function restoreMenus(form) {
    for (const s of selects(form)) {
      const free = form.querySelector(`input[data-free][name="${s.name}"]`);
      if (s.value === TYPED && free && free.value === "") {
        s.value = s.dataset.chosen;
        unmarkTyped(s);
      }
    }
  }
  const unmarkTyped = (s) => { const o = s.querySelector(`option[value="${TYPED}"]`); if (o) o.remove(); };
  const body = (form) => form.closest(".example").querySelector(".example-body");
  const say = (form, text, bad = false) => {
    const p = form.querySelector(".play-status");
    p.textContent = text;
    p.classList.toggle("play-error", bad);
  };

  function keyOf(form) {
    const keyed = form.dataset.keyed.split(" ").filter(Boolean);
    return keyed.map((n) => `${n}-${form.querySelector(`select[name="${n}"]`).value}`).join("_").replace(/\./g, "p");
  }

  function swap(form, html) {
    const b = body(form);
    b.innerHTML = html;
    if (window.stepperInit) window.stepperInit(b);
    if (window.site && window.site.decorateListings) window.site.decorateListings(b);    // its listings' Copy code
  }

  async function choose(form) {
    nextTicket(form);
    const key = keyOf(form);
    try {
      const html = key === form.dataset.default ? first.get(form) : await load(form.dataset.example, key);
      if (keyOf(form) !== key) return;          // the reader chose again meanwhile: that one wins
      swap(form, html);
      say(form, "");
      form.dataset.shown = key;
    } catch (e) {
      say(form, `${e.message}; the page still shows the previous choice.`, true);
    }
  }

  // A field is typed unless it is empty, on both paths: any other text (spaces too) is checked
  // against the declaration, here as by /__play.
  const typed = (form) => [...form.querySelectorAll("input[data-free]")].filter((i) => i.value !== "");
  const typedKey = (input) => `typed-${input.name}`;
  // a value from the URL, shortened for a status line
  const shown = (text) => (text.length > 40 ? `${text.slice(0, 40)}…` : text);

  function keepInUrl() {
    const params = new URLSearchParams(location.search);
    for (const form of forms) {
      for (const s of selects(form)) if (s.value !== TYPED) params.set(s.name, s.value);
      for (const input of form.querySelectorAll("input[data-free]")) {
        if (input.value !== "") params.set(typedKey(input), input.value);
        else params.delete(typedKey(input));
      }
    }
    history.replaceState(history.state, "", `?${params}${location.hash}`);
  }

  // Under serve an answer that comes after a later request (a menu changed, Run clicked again)
  // is dropped, as choose() drops a stale choice: the latest request wins.
  const nextTicket = (form) => (form.dataset.ticket = String(Number(form.dataset.ticket || 0) + 1));

  async function mine(form) {
    const ticket = nextTicket(form);
    restoreMenus(form);
    // Nothing typed: the menus' choice, which this build computed, as on a static host.
    if (!typed(form).length) {
      await choose(form);
      keepInUrl();
      return;
    }
    // Checked here first, as on a static host, so a value too long to send gets its own refusal
    // (/__play checks it again, and refuses a body over MAX_BODY bytes).
    if (!checkedArgs(form)) return;
    const args = {};
    for (const s of selects(form)) if (s.value !== TYPED) args[s.name] = JSON.parse(s.selectedOptions[0].dataset.value);
    for (const input of form.querySelectorAll("input[data-free]")) {
      if (input.value !== "") args[input.name] = input.value;
    }
    say(form, "Running the example function on your input…");
    try {
      const r = await fetch("/__play", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ page: form.dataset.page, example: form.dataset.example, args,
          typed: typed(form).map((i) => i.name) }),                 // what the provenance names as the reader's
      });
      const answer = await r.json();
      if (form.dataset.ticket !== ticket) return;
      if (!r.ok || answer.error) throw new Error(answer.error || `the server answered ${r.status}`);
      swap(form, answer.html);
      markTyped(form);
      say(form, `Recomputed by the real code in ${answer.seconds} s.`);
      keepInUrl();
    } catch (e) {
      if (form.dataset.ticket === ticket) say(form, e.message, true);
    }
  }

  const params = new URLSearchParams(location.search);
  for (const form of forms) {
    first.set(form, body(form).innerHTML);
    let moved = false;
    const unknown = [], unrun = [];
    for (const s of selects(form)) {
      const want = params.get(s.name);
      // ?temperature=2 picks the choice 2.0: the same number, written another way
      const match = want === null ? null : [...s.options].find((o) => o.value === want ||
        (want.trim() !== "" && !isNaN(Number(want)) && !isNaN(Number(o.value)) && Number(o.value) === Number(want)));
      const free = form.querySelector(`input[data-free][name="${s.name}"]`);
      if (match && s.value !== match.value) {
        s.value = match.value;
        moved = true;
      } else if (want !== null && !match) {
        unknown.push(`${s.name}=${shown(want)}`);
      }
      s.addEventListener("change", () => {
        if (s.value === TYPED) return;
        unmarkTyped(s);
        if (free) free.value = "";
        // The same parameter on another example of this page follows (one URL, one value).
        for (const other of forms) {
          const twin = other !== form && other.querySelector(`select[name="${s.name}"]`);
          if (twin && [...twin.options].some((o) => o.value === s.value) && twin.value !== s.value) {
            twin.value = s.value;
            choose(other);
          }
        }
        keepInUrl();
        // With the reader's own value typed in, a menu reruns the real code (or its tape) on it.
        if (serve && typed(form).length) mine(form);
        else if (replayable(form) && typed(form).length) replayMine(form);
        else choose(form);
      });
    }
    // A typed value in the link (?typed-prompt=...): under serve it is typed in and run; a
    // static host has no code to run it.
    let wanted = false;
    for (const input of form.querySelectorAll("input[data-free]")) {
      const want = params.get(typedKey(input));
      if (want === null || want === "") continue;
      if (serve || replayable(form)) {
        input.value = want;
        wanted = true;
      } else {
        unrun.push(`${input.name} "${shown(want)}"`);
      }
    }
    const showing = selects(form).map((s) => `${s.name}=${s.value}`).join(", ");
    if (unknown.length) say(form, `The link asks for ${unknown.join(" and ")}, which ${unknown.length > 1 ? "are" : "is"} not among the choices; the page shows ${showing}.`, true);
    else if (unrun.length) say(form, `The link asks for a typed ${unrun.join(" and ")}, which only serve can run (the note above says how); the page shows ${showing}.`, true);
    if (wanted) (serve ? mine : replayMine)(form);
    else if (moved) choose(form);
    if (serve) {
      for (const label of form.querySelectorAll(".play-free")) label.hidden = false;
      for (const note of form.querySelectorAll(".play-note")) note.hidden = true;
      const run = document.createElement("button");
      run.type = "submit";
      run.textContent = "Run on my input";
      form.querySelector(".play-status").before(run);
      form.addEventListener("submit", (event) => { event.preventDefault(); mine(form); });
    } else if (replayable(form)) {
      for (const label of form.querySelectorAll(".play-free")) label.hidden = false;
      for (const note of form.querySelectorAll(".play-note")) note.hidden = !note.classList.contains("play-replay-note");
      const run = document.createElement("button");
      run.type = "submit";
      run.textContent = "Recompute on my input";
      form.querySelector(".play-status").before(run);
      form.addEventListener("submit", (event) => { event.preventDefault(); replayMine(form); });
    } else {
      form.addEventListener("submit", (event) => event.preventDefault());
    }
  }
})();
