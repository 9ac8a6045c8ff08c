// Replay a tape: the NumPy computation of a playable example, recorded op by op at build time
// (site_builder/run/tape.py), run again here in float64 on the reader's input. The tape is
// data: each op's name is looked up in OPS below; nothing in it is evaluated. Every array is
// {shape, data: Float64Array} in C order (booleans are 0 and 1, ids are whole floats).
// Loaded on first use of a free-input field (play.js); the same file runs under Node for the
// suite's equality test (tests/test_tape.py).
(() => {
  "use strict";
  const size = (shape) => shape.reduce((a, b) => a * b, 1);
  const stridesOf = (shape) => {
    const s = new Array(shape.length);
    for (let k = shape.length - 1, n = 1; k >= 0; k--) { s[k] = n; n *= shape[k]; }
    return s;
  };
  // The strides that read `shape` broadcast to `out` (0 where an axis is stretched).
  const broadcastStrides = (shape, out) => {
    const own = stridesOf(shape), s = new Array(out.length).fill(0);
    for (let k = 0; k < shape.length; k++) {
      const j = out.length - shape.length + k;
      s[j] = shape[k] === 1 && out[j] !== 1 ? 0 : own[k];
    }
    return s;
  };
  // Visit every index of `shape`, calling f(flat offset into each of the strided operands).
  function each(shape, strides, f) {
    const n = size(shape), nd = shape.length, idx = new Array(nd).fill(0);
    const off = strides.map(() => 0);
    for (let i = 0; i < n; i++) {
      f(i, off);
      for (let k = nd - 1; k >= 0; k--) {
        idx[k]++;
        for (let m = 0; m < off.length; m++) off[m] += strides[m][k];
        if (idx[k] < shape[k]) break;
        for (let m = 0; m < off.length; m++) off[m] -= strides[m][k] * shape[k];
        idx[k] = 0;
      }
    }
  }
  const truth = (x) => x !== 0;            // as NumPy: NaN is true
  const ELEMENTWISE = {
    add: (a, b) => a + b, subtract: (a, b) => a - b, multiply: (a, b) => a * b, divide: (a, b) => a / b,
    power: (a, b) => a ** b, maximum: (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b)),
    minimum: (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.min(a, b)),
    less: (a, b) => +(a < b), less_equal: (a, b) => +(a <= b), greater: (a, b) => +(a > b),
    greater_equal: (a, b) => +(a >= b), equal: (a, b) => +(a === b), not_equal: (a, b) => +(a !== b),
    logical_or: (a, b) => +(truth(a) || truth(b)), logical_and: (a, b) => +(truth(a) && truth(b)),
    bitwise_or: (a, b) => +(truth(a) || truth(b)), bitwise_and: (a, b) => +(truth(a) && truth(b)),
    exp: Math.exp, log: Math.log, sqrt: Math.sqrt, negative: (a) => -a, absolute: Math.abs,
    square: (a) => a * a, reciprocal: (a) => 1 / a, logical_not: (a) => +!truth(a),
    invert: (a) => +!truth(a),           // ~ of a boolean: the recorder refuses it on numbers
  };
  const REDUCE = {
    add: [0, (a, b) => a + b], maximum: [-Infinity, ELEMENTWISE.maximum], minimum: [Infinity, ELEMENTWISE.minimum],
    logical_or: [0, ELEMENTWISE.logical_or], logical_and: [1, ELEMENTWISE.logical_and],
    bitwise_or: [0, ELEMENTWISE.logical_or], bitwise_and: [1, ELEMENTWISE.logical_and],
  };
  const scalar = (x) => ({ shape: [], data: Float64Array.of(x) });

  function elementwise(f, args, shape) {
    const out = new Float64Array(size(shape));
    const strides = args.map((a) => broadcastStrides(a.shape, shape));
    if (args.length === 1) each(shape, strides, (i, o) => { out[i] = f(args[0].data[o[0]]); });
    else each(shape, strides, (i, o) => { out[i] = f(args[0].data[o[0]], args[1].data[o[1]]); });
    return out;
  }

  function matmul([a, b], shape) {
    const as = a.shape.length === 1 ? [1, a.shape[0]] : a.shape;
    const bs = b.shape.length === 1 ? [b.shape[0], 1] : b.shape;
    const n = as[as.length - 2], k = as[as.length - 1], m = bs[bs.length - 1];
    const lead = shape.slice(0, Math.max(0, shape.length - (a.shape.length === 1 || b.shape.length === 1 ? 1 : 2)));
    const batch = lead.length ? lead : [];
    const aStr = broadcastStrides(as.slice(0, -2), batch).map((s) => s * n * k);
    const bStr = broadcastStrides(bs.slice(0, -2), batch).map((s) => s * k * m);
    const out = new Float64Array(size(shape));
    let block = 0;
    each(batch, [aStr, bStr], (_, o) => {
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < m; j++) {
          let s = 0;
          for (let t = 0; t < k; t++) s += a.data[o[0] + i * k + t] * b.data[o[1] + t * m + j];
          out[block + i * m + j] = s;
        }
      }
      block += n * m;
    });
    return out;
  }

  function reduce(op, x) {
    const [start, f] = REDUCE[op.ufunc];
    const axes = new Set(op.axis);
    const kept = x.shape.map((d, k) => (axes.has(k) ? 1 : d));
    const out = new Float64Array(size(kept)).fill(start);
    const target = stridesOf(kept).map((s, k) => (axes.has(k) ? 0 : s));
    each(x.shape, [stridesOf(x.shape), target], (_, o) => { out[o[1]] = f(out[o[1]], x.data[o[0]]); });
    return out;
  }

  function transpose(x, axes) {
    const shape = axes.map((a) => x.shape[a]);
    const own = stridesOf(x.shape);
    const out = new Float64Array(size(shape));
    each(shape, [axes.map((a) => own[a])], (i, o) => { out[i] = x.data[o[0]]; });
    return out;
  }

  function slice(x, axes, shape) {
    const own = stridesOf(x.shape);
    let base = 0, dim = 0;
    const strides = [];
    for (const s of axes) {
      if (s[0] === "new") { strides.push(0); continue; }
      if (s[0] === "i") base += s[1] * own[dim];
      else { base += s[1] * own[dim]; strides.push(s[3] * own[dim]); }
      dim++;
    }
    const out = new Float64Array(size(shape));
    each(shape, [strides], (i, o) => { out[i] = x.data[base + o[0]]; });
    return out;
  }

  function take(x, idx) {
    const row = size(x.shape.slice(1)), out = new Float64Array(idx.data.length * row);
    idx.data.forEach((r, i) => {
      if (!(r >= 0 && r < x.shape[0] && Number.isInteger(r))) throw new Error(`index ${r} is outside 0..${x.shape[0] - 1}`);
      out.set(x.data.subarray(r * row, (r + 1) * row), i * row);
    });
    return out;
  }

  function where([c, a, b], shape) {
    const out = new Float64Array(size(shape));
    each(shape, [c, a, b].map((v) => broadcastStrides(v.shape, shape)), (i, o) => {
      out[i] = truth(c.data[o[0]]) ? a.data[o[1]] : b.data[o[2]];
    });
    return out;
  }

  // The tape's constants: float64 little-endian, base64, one blob; `constants` gives each one's
  // offset (in numbers) and shape.
  function decode(b64) {
    const bin = typeof atob === "function" ? atob(b64) : Buffer.from(b64, "base64").toString("binary");
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new Float64Array(bytes.buffer);
  }
  const blobs = new WeakMap();
  function constant(bundle, c) {
    if (!blobs.has(bundle)) blobs.set(bundle, decode(bundle.blob));
    const { offset, shape } = bundle.constants[c];
    return { shape, data: blobs.get(bundle).subarray(offset, offset + size(shape)) };
  }

  // Run one case of a bundle on inputs {name: flat array of numbers}: the outputs, in order.
  function run(bundle, caseKey, inputs) {
    const tape = bundle.cases[caseKey];
    if (!tape) throw new Error(`the tape has no case ${caseKey}`);
    const v = [];
    const arg = (x) => (typeof x === "number" ? v[x] : scalar(x.number));
    tape.ops.forEach((op, i) => {
      const args = op.args.map(arg), shape = op.shape;
      let data;
      switch (op.op) {
        case "input": {
          const given = inputs[op.name];
          if (!given || given.length !== size(shape)) throw new Error(`input ${op.name} must hold ${size(shape)} numbers`);
          data = Float64Array.from(given);
          break;
        }
        case "const": v.push(constant(bundle, op.c)); return;
        case "matmul": data = matmul(args, shape); break;
        case "reduce": data = reduce(op, args[0]); break;
        case "reshape": case "copy": data = args[0].data; break;
        case "transpose": data = transpose(args[0], op.axes); break;
        case "slice": data = slice(args[0], op.axes, shape); break;
        case "take": data = take(args[0], args[1]); break;
        case "where": data = where(args, shape); break;
        case "guard":
          if (truth(args[0].data[0]) !== op.value) {
            const [file, line] = tape.lines[op.line];
            throw new Error(`this input takes a branch at ${file}:${line} that the recording did not`);
          }
          data = args[0].data;
          break;
        default:
          if (!Object.hasOwn(ELEMENTWISE, op.op)) throw new Error(`the tape names an unknown operation ${JSON.stringify(op.op)}`);
          data = elementwise(ELEMENTWISE[op.op], args, shape);
      }
      if (data.length !== size(shape)) throw new Error(`op ${i} (${op.op}) made ${data.length} numbers, the recording ${size(shape)}`);
      v.push({ shape, data });
    });
    return tape.outputs.map((o) => v[o]);
  }

  const api = { run };
  globalThis.playReplay = api;
})();
