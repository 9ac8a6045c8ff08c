"""Small SVG charts drawn at build time from computed arrays: line plots and heatmaps.

Hand-written SVG instead of a plotting library: the charts are simple, the output must be
byte-identical between builds (matplotlib embeds ids and dates), and it must take the page's
colours (currentColor and CSS variables) so the dark theme needs no second image. Every
chart carries a <title> and an aria-label for screen readers.
"""
import html
import math

W, H = 640, 300
PAD_L, PAD_R, PAD_T, PAD_B = 56, 16, 16, 40
SERIES_CLASSES = ("s0", "s1", "s2", "s3", "s4", "s5")


def _nice_ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw), default=10 * mag)
    first = math.ceil(lo / step) * step
    ticks, t = [], first
    while t <= hi + 1e-12:
        ticks.append(round(t, 12))
        t += step
    return ticks


def _fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 1000 or abs(v) < 1e-3:
        return f"{v:.0e}".replace("e-0", "e-").replace("e+0", "e")
    return f"{v:g}"


def line_plot(series, title, xlabel, ylabel, logy=False):
    """series: [(label, xs, ys)]. Returns SVG markup."""
    xs_all = [x for _, xs, _ in series for x in xs]
    ys_all = [y for _, _, ys in series for y in ys if not (logy and y <= 0)]
    fy = (lambda y: math.log10(y)) if logy else (lambda y: y)
    x0, x1 = min(xs_all), max(xs_all)
    y0, y1 = min(fy(y) for y in ys_all), max(fy(y) for y in ys_all)
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1
    margin = (y1 - y0) * 0.05
    y0, y1 = y0 - margin, y1 + margin
    sx = lambda x: PAD_L + (x - x0) / ((x1 - x0) or 1) * (W - PAD_L - PAD_R)
    sy = lambda y: PAD_T + (1 - (fy(y) - y0) / (y1 - y0)) * (H - PAD_T - PAD_B)
    out = [f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{html.escape(title)}" xmlns="http://www.w3.org/2000/svg">',
           f"<title>{html.escape(title)}</title>"]
    for t in _nice_ticks(x0, x1):
        out.append(f'<line class="grid" x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{PAD_T}" y2="{H - PAD_B}"/>'
                   f'<text class="tick" x="{sx(t):.1f}" y="{H - PAD_B + 16}" text-anchor="middle">{_fmt(t)}</text>')
    yticks = _nice_ticks(y0, y1)
    for t in yticks:
        y = PAD_T + (1 - (t - y0) / (y1 - y0)) * (H - PAD_T - PAD_B)
        label = _fmt(10 ** t) if logy else _fmt(t)
        out.append(f'<line class="grid" x1="{PAD_L}" x2="{W - PAD_R}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    out.append(f'<text class="axis-label" x="{(PAD_L + W - PAD_R) / 2}" y="{H - 6}" text-anchor="middle">{html.escape(xlabel)}</text>')
    out.append(f'<text class="axis-label" x="14" y="{(PAD_T + H - PAD_B) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(PAD_T + H - PAD_B) / 2})">{html.escape(ylabel)}</text>')
    for i, (label, xs, ys) in enumerate(series):
        pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys) if not (logy and y <= 0))
        cls = SERIES_CLASSES[i % len(SERIES_CLASSES)]
        out.append(f'<polyline class="line {cls}" points="{pts}"><title>{html.escape(label)}</title></polyline>')
        out.append(f'<g class="legend-item {cls}"><line x1="{PAD_L + 10 + 150 * i}" x2="{PAD_L + 30 + 150 * i}" y1="{PAD_T + 8}" y2="{PAD_T + 8}"/>'
                   f'<text x="{PAD_L + 34 + 150 * i}" y="{PAD_T + 12}">{html.escape(label)}</text></g>')
    out.append("</svg>")
    return "".join(out)


def heatmap(matrix, row_labels, col_labels, title, masked=None):
    """A grid of cells whose opacity is the value (0..1). masked: cells to hatch (e.g. the causal mask)."""
    rows, cols = len(matrix), len(matrix[0])
    cell = max(14, min(32, 480 // max(rows, cols)))
    left, top = 28, 28
    w, h = left + cols * cell + 8, top + rows * cell + 8
    out = [f'<svg class="heatmap" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{html.escape(title)}" xmlns="http://www.w3.org/2000/svg">',
           f"<title>{html.escape(title)}</title>"]
    for j, lab in enumerate(col_labels):
        out.append(f'<text class="tick" x="{left + j * cell + cell / 2:.1f}" y="{top - 8}" text-anchor="middle">{html.escape(lab)}</text>')
    for i, lab in enumerate(row_labels):
        out.append(f'<text class="tick" x="{left - 6}" y="{top + i * cell + cell / 2 + 4:.1f}" text-anchor="end">{html.escape(lab)}</text>')
        for j in range(cols):
            v = float(matrix[i][j])
            x, y = left + j * cell, top + i * cell
            if masked is not None and masked[i][j]:
                out.append(f'<rect class="masked" x="{x}" y="{y}" width="{cell}" height="{cell}"><title>masked</title></rect>')
            else:
                out.append(f'<rect class="cell" x="{x}" y="{y}" width="{cell}" height="{cell}" fill-opacity="{max(0.0, min(1.0, v)):.3f}">'
                           f'<title>{html.escape(row_labels[i])} → {html.escape(col_labels[j])}: {v:.3f}</title></rect>')
    out.append("</svg>")
    return "".join(out)
