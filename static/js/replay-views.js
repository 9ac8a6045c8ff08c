// What a replayed tape shows, by the view its bundle names (site_builder/run/tape.py bundle's
// `view`): the reader's checked input turned into the tape's inputs (the declared steps: a text
// encoded by the vocabulary the bundle ships, cut to the window the model reads), the tape run
// by replay.js, and the numbers filled into the same wording and drawing as the build's own
// results (the example's format strings, shipped in the bundle; heatmap.js for the figure).
// Each view returns {slots: {svg, caption, source}, said}: the body's slots and what was run.
(() => {
  "use strict";
  // repr() of a str, as Python prints it (the page's captions show the window so).
  function pyRepr(s) {
    const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
    let out = quote;
    for (const ch of s) {
      const c = ch.codePointAt(0);
      if (ch === "\\" || ch === quote) out += "\\" + ch;
      else if (ch === "\n") out += "\\n";
      else if (ch === "\t") out += "\\t";
      else if (ch === "\r") out += "\\r";
      else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
      else out += ch;
    }
    return out + quote;
  }
  // f"{x:.{d}e}"
  function pyExp(x, d) {
    const [m, e] = x.toExponential(d).split("e");
    const n = Number(e);
    return `${m}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
  }
  const fill = (format, words) => format.replace(/\{(\w+)\}/g, (m, k) => (k in words ? String(words[k]) : m));
  const rows = (out, lead = []) => {
    const [T, S] = out.shape.slice(-2), base = lead.reduce((a, i, k) => a * out.shape[k] + i, 0) * T * S;
    return Array.from({ length: T }, (_, t) => Array.from(out.data.subarray(base + t * S, base + (t + 1) * S)));
  };

  // The characters the model reads of a text, and their ids (the encoding of the run's tokenizer).
  function encode(bundle, text) {
    const chars = [...text];
    const seen = bundle.window === "last" ? chars.slice(-bundle.length) : chars.slice(0, bundle.length);
    return { seen, ids: seen.map((c) => bundle.chars.indexOf(c)) };
  }

  // How the build formatted a number (site_builder/run/examples.py fmt_number, fmt_array; f"{v:.3e}"; f"{v:g}").
  const special = (x) => (Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf");
  const pyE = (x, d) => (Number.isFinite(x) ? pyExp(x, d) : special(x));
  const fmtNumber = (x) => (x === 0 ? "0.0000" : !Number.isFinite(x) ? special(x)
    : Math.abs(x) >= 2 ** 53 ? pyExp(x, 4) : globalThis.playHeatmap.fixed(x, 4));     // FIXED_BELOW
  const fmtArray = (a) => {
    const nested = (off, k) => (k === a.shape.length ? fmtNumber(a.data[off])
      : "[" + Array.from({ length: a.shape[k] }, (_, i) => nested(off + i * a.shape.slice(k + 1).reduce((p, q) => p * q, 1), k + 1)).join(", ") + "]");
    return nested(0, 0);
  };
  const pyG = (x) => (Number.isFinite(x) ? globalThis.playHeatmap.general(x, 6) : special(x));
  const FORMATS = {
    fmt_number: (a) => fmtNumber(a.data[0]), fmt_array: fmtArray, sci3: (a) => pyE(a.data[0], 3), g: (a) => pyG(a.data[0]),
  };
  const asArray = (v) => ({ shape: Array.isArray(v) ? [v.length] : [], data: Float64Array.from([].concat(v)) });

  // NumPy's Generator.choice(len(p), p=p) given the uniform u it draws (site_builder/run/tape.py
  // choice_step): the first index whose normalised cumulative sum exceeds u.
  function choice(p, u) {
    const cdf = new Float64Array(p.length);
    let s = 0;
    for (let i = 0; i < p.length; i++) { s += p[i]; cdf[i] = s; }
    const last = cdf[p.length - 1];
    let n = 0;
    for (let i = 0; i < p.length; i++) { cdf[i] /= last; if (cdf[i] <= u) n = i + 1; }
    return n;
  }
  const show = (t) => t.replace(/\n/g, "↵");

  const VIEWS = {
    // A result whose every number stands in a slot of its template: @@i format@@ is output i,
    // @@input:name format@@ the reader's checked input, each formatted as the build formats it.
    slots(bundle, args) {
      const tape = bundle.cases[""];
      const inputs = Object.fromEntries(Object.keys(tape.inputs).map((name) => [name, [].concat(args[name])]));
      const out = globalThis.playReplay.run(bundle, "", inputs);
      const slots = {};
      for (const [, key, which, fmt] of bundle.body.matchAll(/@@((\d+|input:\w+) (\w+))@@/g)) {
        if (!Object.hasOwn(FORMATS, fmt)) throw new Error(`the tape names an unknown format ${JSON.stringify(fmt)}`);
        slots[key] = FORMATS[fmt](which.startsWith("input:") ? asArray(args[which.slice(6)]) : out[Number(which)]);
      }
      return { slots, said: `${tape.ops.length} operations` };
    },

    // One row through a block, recorded once per menu combination (row, layer): the slots of
    // the stepper's numbers, in the body of that combination.
    // key: the menus' combination (site_builder/gather/playground.py combo_key), as play.js keys choices.
    stepper(bundle, args, key) {
      const tape = bundle.cases[key];
      if (!tape) throw new Error(`the tape has no case ${key}`);
      const inputs = Object.fromEntries(Object.keys(tape.inputs).map((name) => [name, [].concat(args[name])]));
      const out = globalThis.playReplay.run(bundle, key, inputs);
      const slots = { source: `${bundle.recorded}, row ${args.row} of X replaced by ${fmtArray(asArray(args.values))} (typed by the reader)` };
      out.forEach((o, i) => { slots[`${i} fmt_number`] = fmtNumber(o.data[0]); });
      return { slots, said: `case ${key}, ${tape.ops.length} operations`, body: bundle.bodies[key] };
    },

    // The next character at a temperature, then generate's loop: each pass runs the case of its
    // context's length, and draws as NumPy's choice does with the shipped uniforms of the seed.
    // typed: the names the reader typed (the others are the menu's or the default), all if not given.
    generation(bundle, args, key, typed = new Set(Object.keys(args))) {
      const prompt = args.prompt === undefined ? bundle.defaults.prompt : args.prompt;
      const t = Number(args.temperature), ids = [...prompt].map((c) => bundle.chars.indexOf(c));
      const next = () => {
        const context = ids.slice(-bundle.length);
        const [p, entropy] = globalThis.playReplay.run(bundle, String(context.length), { ids: context, temperature: [t] });
        return { p: p.data, entropy: entropy.data[0], seen: context.length };
      };
      const first = next(), start = ids.length;
      for (const u of bundle.draws) ids.push(choice(ids.length === start ? first.p : next().p, u));
      const order = Array.from(first.p, (_, i) => i).sort((a, b) => first.p[b] - first.p[a]);   // stable, as argsort(-p)
      const mine = [typed.has("prompt") && "the prompt", typed.has("temperature") && "T = " + pyG(t)].filter(Boolean).join(" and ");
      const slots = {
        prompt: show(prompt), temperature: pyG(t), window: pyRepr(prompt), seen: String(first.seen),
        rest: fmtNumber(order.slice(bundle.shown).reduce((s, i) => s + first.p[i], 0)),
        entropy: fmtNumber(first.entropy), drawn: pyRepr(bundle.chars[ids[start]]),
        continuation: show(ids.slice(start).map((i) => bundle.chars[i]).join("")),
        source: `${bundle.recorded}; ${mine} typed by the reader, the draws those of default_rng's seed`,
      };
      order.slice(0, bundle.shown).forEach((i, r) => { slots[`char:${r}`] = pyRepr(bundle.chars[i]); slots[`p:${r}`] = fmtNumber(first.p[i]); });
      return { slots, said: `${bundle.draws.length + 1} passes of cases T ≤ ${bundle.length}` };
    },

    // One head of one block: outputs are A per block (h, T, T), gap per block (h,), hidden (T, T).
    heatmap(bundle, args) {
      const { seen, ids } = encode(bundle, args.prompt);
      const out = globalThis.playReplay.run(bundle, String(ids.length), { ids });
      const L = (out.length - 1) / 2, layer = Number(args.layer), head = Number(args.head);
      const A = out[layer], gap = out[L + layer], hidden = rows(out[2 * L]);
      const text = seen.join("");
      const words = { layer, head, run: bundle.run, window: pyRepr(text), gap: pyExp(gap.data[head], 1) };
      const labels = seen.map((c) => (Object.hasOwn(bundle.show, c) ? bundle.show[c] : c));
      const ax = bundle.axes;
      const svg = globalThis.playHeatmap.heatmap(rows(A, [head]), labels, labels, fill(bundle.title, words),
        hidden.map((r) => r.map((v) => v !== 0)), ax.xlabel, ax.ylabel, ax.value_name, ax.masked_name);
      return {
        slots: { svg, caption: fill(bundle.caption, words),
          source: `${bundle.recorded}, on ${words.window} (typed by the reader)` },
        said: `case T = ${ids.length}`,
      };
    },
  };

  globalThis.playViews = { VIEWS, pyRepr, pyExp, encode, choice };
})();
