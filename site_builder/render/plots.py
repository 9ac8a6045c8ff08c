"""Small SVG charts drawn at build time from computed arrays: line plots and heatmaps.

Hand-written SVG, not matplotlib, chosen by measurement (benchmarks/figures.py; the numbers are
in the README's "Figures and architecture diagrams" section): matplotlib's SVG of the same loss
curve is about 3x the bytes, each figure takes 30-130x the time (and the import 0.2-1.3 s per
example process), and its colours are fixed hex values, so the dark theme would need a second
image or a rewrite of its output. What this module writes is byte-identical between
builds (no ids, no dates, fixed number formats), takes its colours from CSS variables
(static/site.css: --s0.. for series, --heat-pos/--heat-neg for heatmaps), and is small enough
to carry every plotted value for the hover and keyboard read-out (static/js/figures.js).

What a reader can trust at a glance, and how it is kept:
- ticks are "nice" (1-2-5 steps; whole decades on log axes) and the axis starts and ends on
  one; labels have as many decimals as the step needs and no more, thousands are 20,000 or
  20k, tiny numbers 2×10⁻⁴, never six-digit floats.
- text never collides: margins are sized from the widest label (a generous estimate of the
  width of the system sans font: CHAR_EM of the font size per character), the legend sits in
  rows above the plot area, and a heatmap labels every k-th row or column when its labels are
  wider than a cell. tests/browser/test_figures.py measures the real boxes on every page.
- every figure has a text alternative with its data: a <desc> that states, per series, the
  range, the extremes and where they are, and the first and last values.
- heatmaps have a colour scale with labelled values; signed data gets a diverging scale
  centred on zero; masked cells have their own swatch, named in the scale.
"""
import html
import math

W = 640                        # every line plot's viewBox width; the page scales it
W_PHONE = 360                  # the same plot's width as drawn for a phone (a 324-448 px column)
PLOT_H = 230                   # height of a line plot's plotting area
FONT_TICK, FONT_LABEL = 11, 12
CHAR_EM = 0.62                 # average glyph width / font size: wider than DejaVu Sans' 0.55-0.6
SERIES_CLASSES = ("s0", "s1", "s2", "s3", "s4", "s5")
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
SUBSCRIPT = str.maketrans("-0123456789", "₋₀₁₂₃₄₅₆₇₈₉")
SCALE_STEPS = 16               # segments of a heatmap's colour bar


def text_width(text: str, size: float) -> float:
    return len(text) * size * CHAR_EM


def esc(text) -> str:
    return html.escape(str(text), quote=True)


# -- ticks and numbers ---------------------------------------------------------------------
def nice_step(span: float, target: int = 5) -> float:
    """The 1-2-5 step that cuts span into about `target` pieces."""
    raw = span / max(target, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(s * mag for s in (1, 2, 5, 10) if s * mag >= raw * (1 - 1e-9))


def linear_ticks(lo: float, hi: float, target: int = 5):
    """(ticks, step): nice ticks that cover [lo, hi], the first at or below lo, the last at or above hi."""
    if not hi > lo:
        lo, hi = (lo - 1, hi + 1) if lo == 0 else (lo - abs(lo) / 2, hi + abs(hi) / 2)
    step = nice_step(hi - lo, target)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(k * step, 12) or 0.0 for k in range(first, last + 1)], step


def log_ticks(lo: float, hi: float):
    """Ticks (values, not logs) covering [lo, hi] > 0: 1-2-5 when the data spans about a decade
    or less, whole decades when more, every other decade (or sparser) when there are many."""
    a, b = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    if math.log10(hi / lo) <= 1.2:
        cands = [m * 10.0 ** e for e in range(a - 1, b + 1) for m in (1, 2, 5)]
        below = max(v for v in cands if v <= lo * (1 + 1e-9))
        above = min(v for v in cands if v >= hi * (1 - 1e-9))
        return [float(f"{v:.12g}") for v in cands if below <= v <= above]
    every = max(1, math.ceil((b - a) / 6))
    a = a - (a % every)
    b = b + (-b % every)
    return [10.0 ** e for e in range(a, b + 1, every)]


def sci(v: float, digits: int = 2) -> str:
    """2×10⁻⁴, 1.5×10⁶; a mantissa of 1 is left out: 10⁻⁴."""
    e = math.floor(math.log10(abs(v)))
    m = v / 10.0 ** e
    mant = f"{m:.{digits}g}"
    if mant in ("10", "-10"):
        e, mant = e + 1, mant[:-1]
    power = "10" + str(e).translate(SUPERSCRIPT)
    return power if mant == "1" else ("-" + power if mant == "-1" else f"{mant}×{power}")


def tick_labels(ticks, step=None, log=False):
    """One format for all ticks of an axis: enough decimals for the step, thousands as 20,000
    (or 20k when the axis reaches 10,000 in whole thousands), tiny or huge values as 2×10⁻⁴."""
    nonzero = [abs(t) for t in ticks if t]
    if not nonzero:
        return ["0" for _ in ticks]
    if log:
        plain = all(1e-3 <= t < 1e4 for t in ticks) or not all(abs(math.log10(t) - round(math.log10(t))) < 1e-9 for t in ticks)
        return [log_label(t, plain) for t in ticks]
    step = step or min(abs(b - a) for a, b in zip(ticks, ticks[1:]))
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    big = max(nonzero)
    if decimals > 4 or big >= 1e7:
        return ["0" if t == 0 else sci(t) for t in ticks]
    if big >= 10_000 and all(t % 1000 == 0 for t in ticks):
        return ["0" if t == 0 else f"{t / 1000:,.0f}k" for t in ticks]
    return ["0" if t == 0 else f"{t:,.{decimals}f}" for t in ticks]


def log_label(v: float, plain: bool) -> str:
    e = math.log10(v)
    if plain:
        decimals = max(0, -math.floor(e + 1e-9))
        return f"{v:,.{decimals}f}"
    if abs(e - round(e)) < 1e-9:
        return "10" + str(round(e)).translate(SUPERSCRIPT)
    return sci(v)


def value_label(v: float) -> str:
    """A plotted value as the read-out and the text alternative print it: 4 significant digits."""
    v = float(v)
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    if float(v).is_integer() and abs(v) < 1e7:
        return f"{int(v):,}"
    if 1e-3 <= abs(v) < 1e6:
        return f"{v:.4g}"
    return sci(v, 4)


# -- line plots ----------------------------------------------------------------------------
def _legend_rows(labels, width):
    """Legend entries placed in rows of at most `width`: [(row, x, label)]."""
    out, row, x = [], 0, 0.0
    for label in labels:
        w = 26 + text_width(label, FONT_LABEL)
        if x > 0 and x + w > width:
            row, x = row + 1, 0.0
        out.append((row, x, label))
        x += w + 18
    return out


def _kept(px, tol=0.25):
    """Indices of the points a line needs to look the same (Ramer-Douglas-Peucker, tol in
    viewBox units, a quarter of a pixel at full size): a schedule of 1,000 steps on a plot
    560 wide draws no differently from its 40 corners. The read-out then offers those points,
    each with its exact value; the description is computed from every point."""
    keep, stack = {0, len(px) - 1}, [(0, len(px) - 1)]
    while stack:
        a, b = stack.pop()
        if b - a < 2:
            continue
        (ax, ay), (bx, by) = px[a], px[b]
        dx, dy = bx - ax, by - ay
        norm = math.hypot(dx, dy) or 1.0
        far, k = max((abs(dy * (px[i][0] - ax) - dx * (px[i][1] - ay)) / norm, i) for i in range(a + 1, b))
        if far > tol:
            keep.add(k)
            stack += [(a, k), (k, b)]
    return sorted(keep)


def _describe(series, xlabel, ylabel):
    parts = []
    for label, xs, ys in series:
        pts = list(zip(xs, ys))
        lo, hi = min(pts, key=lambda p: p[1]), max(pts, key=lambda p: p[1])
        parts.append(f"{label}: {len(pts)} points, {xlabel} from {value_label(pts[0][0])} to {value_label(pts[-1][0])}; "
                     f"{ylabel} starts at {value_label(pts[0][1])} and ends at {value_label(pts[-1][1])}, "
                     f"lowest {value_label(lo[1])} at {value_label(lo[0])}, highest {value_label(hi[1])} at {value_label(hi[0])}.")
    return " ".join(parts)


def line_plot(series, title, xlabel, ylabel, logy=False, logx=False):
    """series: [(label, xs, ys)]. Returns SVG markup: the plot drawn twice, W wide for a wide
    screen and W_PHONE wide (fewer x ticks) for a phone, and site.css shows one of them. One
    drawing scaled to a phone's column drew 11-unit tick labels at 5-8 px (or scrolled
    sideways, as it did); drawn for the narrow width its text is at its own size there. The
    cost is the bytes of a second drawing (1-2 KB compressed a plot). The phone's copy is
    class "chart narrow"; the wide one keeps class "chart" alone, which is the marker that
    loads static/js/figures.js. On a log axis, points at or below 0 are left out."""
    return (_line_svg(series, title, xlabel, ylabel, logy, logx, W, 6, "chart")
            + _line_svg(series, title, xlabel, ylabel, logy, logx, W_PHONE, 4, "chart narrow"))


def _line_svg(series, title, xlabel, ylabel, logy, logx, W, xtarget, cls_attr):
    """One drawing of line_plot's plot, W units wide, about `xtarget` ticks on a linear x axis."""
    drop = lambda x, y: (logy and y <= 0) or (logx and x <= 0)
    series = [(label, [float(x) for x, y in zip(xs, ys) if not drop(x, y)],
               [float(y) for x, y in zip(xs, ys) if not drop(x, y)]) for label, xs, ys in series]
    series = [s for s in series if s[1]]
    xs_all = [x for _, xs, _ in series for x in xs]
    ys_all = [y for _, _, ys in series for y in ys]
    # x spans the data exactly (ticks inside it): padding steps out to a round number would
    # draw an empty stretch after the last step; y is padded to its outer ticks.
    x0, x1 = min(xs_all), max(xs_all)
    fx = math.log10 if logx else float
    if logx:
        xticks = [t for t in log_ticks(x0, x1) if x0 * (1 - 1e-9) <= t <= x1 * (1 + 1e-9)] or [x0]
        xlabels = tick_labels(xticks, log=True)
    else:
        xticks, xstep = linear_ticks(x0, x1, xtarget)
        xticks = [t for t in xticks if x0 - 1e-9 * abs(xstep) <= t <= x1 + 1e-9 * abs(xstep)] or [x0]
        xlabels = tick_labels(xticks, xstep)
    x0, x1 = fx(x0), fx(x1)
    if logy:
        yticks = log_ticks(min(ys_all), max(ys_all))
        ylabels = tick_labels(yticks, log=True)
        fy = math.log10
    else:
        yticks, ystep = linear_ticks(min(ys_all), max(ys_all), 5)
        ylabels = tick_labels(yticks, ystep)
        fy = float
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    y0, y1 = fy(yticks[0]), fy(yticks[-1])

    pad_l = 8 + FONT_LABEL + 8 + max(text_width(t, FONT_TICK) for t in ylabels) + 6
    pad_r = max(12.0, text_width(xlabels[-1], FONT_TICK) / 2 + 4)    # the last tick may sit at the right edge
    plot_w = W - pad_l - pad_r
    legend = _legend_rows([label for label, _, _ in series], plot_w)
    rows = (legend[-1][0] + 1) if len(series) > 1 else 0
    pad_t = 10 + 18 * rows + (4 if rows else 0)
    top, bottom = pad_t, pad_t + PLOT_H
    height = bottom + 8 + FONT_TICK + 8 + FONT_LABEL + 8
    sx = lambda x: pad_l + (fx(x) - x0) / ((x1 - x0) or 1) * plot_w
    sy = lambda y: bottom - (fy(y) - y0) / ((y1 - y0) or 1) * PLOT_H

    desc = _describe(series, xlabel, ylabel)
    out = [f'<svg class="{cls_attr}" viewBox="0 0 {W} {height:.0f}" role="img" tabindex="0" aria-label="{esc(title)}" '
           f'data-xlabel="{esc(xlabel)}" data-ylabel="{esc(ylabel)}" xmlns="http://www.w3.org/2000/svg">',
           f"<title>{esc(title)}</title><desc>{esc(desc)}</desc>"]
    for t, lab in zip(xticks, xlabels):
        x = sx(t)
        out.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}"/>'
                   f'<text class="tick" x="{x:.1f}" y="{bottom + 8 + FONT_TICK - 2}" text-anchor="middle">{esc(lab)}</text>')
    for t, lab in zip(yticks, ylabels):
        y = sy(t)
        out.append(f'<line class="grid" x1="{pad_l:.1f}" x2="{W - pad_r:.1f}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{pad_l - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">{esc(lab)}</text>')
    out.append(f'<rect class="frame" x="{pad_l:.1f}" y="{top}" width="{plot_w:.1f}" height="{PLOT_H}"/>')
    out.append(f'<text class="axis-label" x="{pad_l + plot_w / 2:.1f}" y="{height - 8:.0f}" text-anchor="middle">{esc(xlabel)}</text>')
    cy = top + PLOT_H / 2
    out.append(f'<text class="axis-label" x="{8 + FONT_LABEL - 2}" y="{cy:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 {8 + FONT_LABEL - 2} {cy:.1f})">{esc(ylabel)}</text>')
    for i, (label, xs, ys) in enumerate(series):
        cls = SERIES_CLASSES[i % len(SERIES_CLASSES)]
        keep = _kept([(sx(x), sy(y)) for x, y in zip(xs, ys)])
        pts = " ".join(f"{sx(xs[i]):.1f},{sy(ys[i]):.1f}" for i in keep)
        out.append(f'<polyline class="line {cls}" points="{pts}" data-label="{esc(label)}" '
                   f'data-x="{" ".join(value_label(xs[i]).replace(",", "") for i in keep)}" '
                   f'data-y="{" ".join(value_label(ys[i]).replace(",", "") for i in keep)}"/>')
    if rows:
        for i, (row, x, label) in enumerate(legend):
            cls = SERIES_CLASSES[i % len(SERIES_CLASSES)]
            lx, ly = pad_l + x, 10 + 18 * row + 8
            out.append(f'<g class="legend-item {cls}"><line x1="{lx:.1f}" x2="{lx + 20:.1f}" y1="{ly}" y2="{ly}"/>'
                       f'<text x="{lx + 26:.1f}" y="{ly + 4}">{esc(label)}</text></g>')
    out.append("</svg>")
    return "".join(out)


# -- heatmaps ------------------------------------------------------------------------------
def _every(labels, room, size):
    """Label every k-th row or column so that labels `room` apart do not touch."""
    widest = max((text_width(str(lab), size) for lab in labels if str(lab)), default=0)
    return max(1, math.ceil((widest + 4) / room)) if room > 0 else 1


def hatch(x, y, size):
    """Three diagonal strokes across a masked cell: a masked cell is the background, hatched,
    so it recedes behind every weight in both themes (a grey fill outshone the low weights of
    the dark theme), and still differs from a weight of 0."""
    h = size / 2
    return (f'<path class="hatch" d="M{x:.1f} {y + size:.1f}L{x + size:.1f} {y:.1f}M{x:.1f} {y + h:.1f}L{x + h:.1f} {y:.1f}'
            f'M{x + h:.1f} {y + size:.1f}L{x + size:.1f} {y + h:.1f}"/>')


def heatmap(matrix, row_labels, col_labels, title, masked=None, xlabel="column", ylabel="row",
            value_name="value", masked_name="masked"):
    """A grid of cells coloured by value, with a colour scale. Values that are all >= 0 get a
    one-hue scale from 0 (the page's background) to the nice ceiling of the largest value;
    signed values a diverging scale, two hues meeting at 0 in the middle. masked: a boolean
    matrix of cells drawn in a grey of their own (e.g. the causal mask), named `masked_name`
    in the scale. Labels an empty string are unlabelled (the read-out gives their index)."""
    grid = [[float(v) for v in row] for row in matrix]
    rows, cols = len(grid), len(grid[0])
    is_masked = lambda i, j: masked is not None and bool(masked[i][j])
    shown = [grid[i][j] for i in range(rows) for j in range(cols) if not is_masked(i, j)]
    lo, hi = min(shown), max(shown)
    signed = lo < 0
    top_val = max(abs(lo), abs(hi)) if signed else hi
    ticks, step = linear_ticks(0.0, top_val or 1.0, 4)
    vmax = ticks[-1]
    if signed:
        ticks = sorted({-t for t in ticks} | set(ticks))
    vmin = -vmax if signed else 0.0
    tlabels = tick_labels(ticks, step)
    decimals = max(0, 3 - math.floor(math.log10(vmax)))
    fmt = (lambda v: f"{v:.{decimals}f}") if 1e-3 <= vmax < 1e5 else value_label

    cell = max(14, min(32, 480 // max(rows, cols)))
    col_every = _every(col_labels, cell, FONT_TICK)
    row_w = max((text_width(str(lab), FONT_TICK) for lab in row_labels), default=0)
    left = 8 + FONT_LABEL + 8 + row_w + 6
    top = 8 + FONT_LABEL + 6 + FONT_TICK + 6
    gw, gh = cols * cell, rows * cell
    # The colour scale runs under the grid, so a figure shrunk to a phone's width still shows it.
    bar_x, bar_w = left, max(160.0, min(float(gw), 260.0))
    bar_top = top + gh + 14 + FONT_LABEL + 6
    swatch_x = bar_x + bar_w + 24
    half_last = text_width(tlabels[-1], FONT_TICK) / 2
    width = max(left + gw + 8, bar_x + bar_w + half_last + 8,
                (swatch_x + 18 + text_width(masked_name, FONT_TICK) + 8) if masked is not None else 0)
    height = bar_top + 12 + 6 + FONT_TICK + 8

    def shade(v):
        """(class, opacity): 'n' for the negative hue, '' for the positive one."""
        frac = max(0.0, min(1.0, abs(v) / vmax if signed else (v - vmin) / (vmax - vmin)))
        op = f"{frac:.2f}".rstrip("0").rstrip(".")
        return ("n" if signed and v < 0 else ""), (op[1:] if op.startswith("0.") else op) or "0"

    flat_pos = max(((i, j) for i in range(rows) for j in range(cols) if not is_masked(i, j)), key=lambda p: grid[p[0]][p[1]])
    flat_neg = min(((i, j) for i in range(rows) for j in range(cols) if not is_masked(i, j)), key=lambda p: grid[p[0]][p[1]])
    n_masked = sum(is_masked(i, j) for i in range(rows) for j in range(cols))
    name = lambda labels, k: str(labels[k]) if str(labels[k]) else str(k)
    desc = (f"{rows} rows ({ylabel}) by {cols} columns ({xlabel}) of {value_name}; "
            f"{'signed, ' if signed else ''}from {fmt(lo)} ({ylabel} {name(row_labels, flat_neg[0])}, {xlabel} {name(col_labels, flat_neg[1])}) "
            f"to {fmt(hi)} ({ylabel} {name(row_labels, flat_pos[0])}, {xlabel} {name(col_labels, flat_pos[1])})"
            + (f"; {n_masked} cells {masked_name}." if n_masked else "."))
    out = [f'<svg class="heatmap" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" role="img" tabindex="0" '
           f'aria-label="{esc(title)}" data-grid="{left:.1f} {top} {cell} {rows} {cols}" data-xlabel="{esc(xlabel)}" '
           f'data-ylabel="{esc(ylabel)}" data-value="{esc(value_name)}" data-masked="{esc(masked_name)}" '
           f'data-rows="{esc(chr(31).join(str(x) for x in row_labels))}" data-cols="{esc(chr(31).join(str(x) for x in col_labels))}" '
           f'xmlns="http://www.w3.org/2000/svg">',
           f"<title>{esc(title)}</title><desc>{esc(desc)}</desc>"]
    out.append(f'<text class="axis-label" x="{left + gw / 2:.1f}" y="{8 + FONT_LABEL - 2}" text-anchor="middle">{esc(xlabel)}</text>')
    cy = top + gh / 2
    out.append(f'<text class="axis-label" x="{8 + FONT_LABEL - 2}" y="{cy:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 {8 + FONT_LABEL - 2} {cy:.1f})">{esc(ylabel)}</text>')
    for j, lab in enumerate(col_labels):
        if str(lab) and j % col_every == 0:
            out.append(f'<text class="tick" x="{left + j * cell + cell / 2:.1f}" y="{top - 6}" text-anchor="middle">{esc(lab)}</text>')
    for i, lab in enumerate(row_labels):
        y = top + i * cell
        if str(lab):                      # rows are at least 14 px, labels 11 px: all fit
            out.append(f'<text class="tick" x="{left - 6:.1f}" y="{y + cell / 2 + 4:.1f}" text-anchor="end">{esc(lab)}</text>')
        values = " ".join("m" if is_masked(i, j) else fmt(grid[i][j]) for j in range(cols))
        cells = []
        for j in range(cols):
            x = left + j * cell
            if is_masked(i, j):
                cells.append(f'<rect class="masked" x="{x:.0f}" width="{cell}" height="{cell}"/>{hatch(x, 0, cell)}')
            else:
                cls, op = shade(grid[i][j])
                cells.append(f'<rect{" class=" + chr(34) + cls + chr(34) if cls else ""} x="{x:.0f}" width="{cell}" height="{cell}" fill-opacity="{op}"/>')
        out.append(f'<g class="cells" transform="translate(0 {y})" data-v="{values}">{"".join(cells)}</g>')
    out.append(f'<rect class="grid-frame" x="{left:.1f}" y="{top}" width="{gw}" height="{gh}"/>')   # zero cells are the background
    # The colour scale: SCALE_STEPS segments from vmin (bottom) to vmax (top), ticks beside it.
    out.append(f'<g class="scale"><text class="axis-label" x="{bar_x:.1f}" y="{bar_top - 6}">{esc(value_name)}</text>')
    seg = bar_w / SCALE_STEPS
    for k in range(SCALE_STEPS):
        cls, op = shade(vmin + (k + 0.5) / SCALE_STEPS * (vmax - vmin))
        out.append(f'<rect class="cells-key{" n" if cls else ""}" x="{bar_x + k * seg:.1f}" y="{bar_top}" width="{seg + 0.3:.1f}" height="12" fill-opacity="{op}"/>')
    out.append(f'<rect class="key-frame" x="{bar_x:.1f}" y="{bar_top}" width="{bar_w:.1f}" height="12"/>')
    for t, lab in zip(ticks, tlabels):
        x = bar_x + (t - vmin) / (vmax - vmin) * bar_w
        out.append(f'<line class="key-tick" x1="{x:.1f}" x2="{x:.1f}" y1="{bar_top + 12}" y2="{bar_top + 16}"/>'
                   f'<text class="tick" x="{x:.1f}" y="{bar_top + 16 + FONT_TICK - 1}" text-anchor="middle">{esc(lab)}</text>')
    if masked is not None:
        out.append(f'<rect class="masked" x="{swatch_x:.1f}" y="{bar_top}" width="12" height="12"/>{hatch(swatch_x, bar_top, 12)}'
                   f'<text class="tick" x="{swatch_x + 18:.1f}" y="{bar_top + 10}">{esc(masked_name)}</text>')
    out.append("</g></svg>")
    return "".join(out)
