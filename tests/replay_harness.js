// Node side of tests/test_tape.py: load the shipped replayer (static/js/replay.js, heatmap.js,
// replay-views.js) and one built tape, then for each run on stdin ({args}) print the tape's raw
// outputs (float64 bytes, base64) and the body slots the page would show.
"use strict";
const fs = require("fs"), path = require("path"), vm = require("vm");
const [staticJs, tapeFile] = process.argv.slice(2);
for (const name of ["replay", "heatmap", "replay-views"]) {
  vm.runInThisContext(fs.readFileSync(path.join(staticJs, `${name}.js`), "utf8"), { filename: `${name}.js` });
}
let bundle = null;
globalThis.playTape = (id, b) => { bundle = b; };
vm.runInThisContext(fs.readFileSync(tapeFile, "utf8"), { filename: tapeFile });
const runs = JSON.parse(fs.readFileSync(0, "utf8"));
const answers = runs.map(({ args, inputs, case: key }) => {
  const out = globalThis.playReplay.run(bundle, key, inputs);
  const raw = out.map((o) => ({ shape: o.shape, data: Buffer.from(new Float64Array(o.data).buffer).toString("base64") }));
  const shown = args ? globalThis.playViews.VIEWS[bundle.view](bundle, args, key) : null;
  return { raw, slots: shown && shown.slots };
});
process.stdout.write(JSON.stringify(answers));
