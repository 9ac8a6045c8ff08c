// Source pages: #L113 marks one line (CSS :target), #L113-L116 marks a range. A range has no
// element of its own, so this script marks its rows and scrolls to the first. Without
// JavaScript the browser stays at the top of the file; a #L113 link still lands on its line.
(() => {
  "use strict";
  const RANGE = /^#L(\d+)-L(\d+)$/;

  function markRange() {
    for (const row of document.querySelectorAll("tr.in-range")) row.classList.remove("in-range");
    const m = RANGE.exec(location.hash);
    if (!m) return;
    const first = Number(m[1]), last = Number(m[2]);
    for (let n = first; n <= last; n++) {
      const row = document.getElementById(`L${n}`);
      if (row) row.classList.add("in-range");
    }
    const start = document.getElementById(`L${first}`);
    if (start) start.scrollIntoView({ block: "center" });
  }

  window.addEventListener("hashchange", markRange);
  markRange();
})();
