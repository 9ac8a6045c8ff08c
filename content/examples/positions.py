"""Examples for the Sinusoidal positions page: real calls of model.seq2seq.sinusoidal_positions."""
import math

import numpy as np

from model import train_seq2seq as task
from model.seq2seq import sinusoidal_positions
from site_builder.run.examples import ExampleResult, steps_table, table, figure, fmt_number, fmt_array, value_of
from site_builder.render.plots import line_plot, heatmap
from site_builder.run.trace import trace_locals

# The numbers of tests/test_seq2seq.py::test_sinusoidal_positions: 3 positions, width 4.
SMALL_T, SMALL_D = 3, 4
# The pictures and measurements use the reversal task's width, read from its config.
N_POSITIONS = 32          # rows of the heatmap
LONG_T = 64               # positions for the line plot, the fit and the dot products
COLUMNS = (0, 1, 6, 14)   # columns drawn in the line plot: pairs i = 0, 0, 3, 7
SHIFTS = (1, 3, 10)       # offsets k of the linear-map measurement
DOT_FROM = (0, 10, 20)    # starting positions p of the dot-product curves
SEED = 0


_MEMO = {}


def task_d_model():
    """d_model of the reversal task, as train() builds its config (one real step, nothing written)."""
    if "d" not in _MEMO:
        _MEMO["d"] = task.train(steps=1, seed=SEED, out=None, num_eval=1, progress=False)["cfg"].d_model
    return _MEMO["d"]


def frequencies(d):
    """omega_i for every pair, read from the trace of the real function: angle[1] = 1 * omega."""
    t = trace_locals(sinusoidal_positions, 2, d)
    return value_of(t, "angle")[1]


def small_steps():
    t = trace_locals(sinusoidal_positions, SMALL_T, SMALL_D)
    rows = steps_table(t, [("Positions, as a column", "pos"), ("2i, one per pair of columns", "two_i"),
                           ("Angles pos / 10000^(2i/d)", "angle"), ("Sines in the even columns", "PE"),
                           ("Returned", "return")])
    # PE is written twice (sines, then cosines); show the state after each write.
    writes = [s for s in t.steps if "PE" in s.changed]
    rows["rows"][3]["value"] = fmt_array(writes[-2].locals["PE"])
    rows["rows"][3]["line"], rows["rows"][3]["code"] = writes[-2].line, writes[-2].code
    rows["rows"].insert(4, dict(label="Cosines in the odd columns", name="PE", line=writes[-1].line,
                                code=writes[-1].code, value=fmt_array(writes[-1].locals["PE"])))
    return ExampleResult([rows], f"sinusoidal_positions({SMALL_T}, {SMALL_D})",
                         data=dict(PE=t.result))


def pe_heatmap():
    d = task_d_model()
    PE = sinusoidal_positions(N_POSITIONS, d)
    svg = heatmap(PE.tolist(), [str(p) if p % 4 == 0 else "" for p in range(N_POSITIONS)],
                  [str(j) if j % 4 == 0 else "" for j in range(d)],
                  f"PE for {N_POSITIONS} positions and d = {d}", xlabel="column j of PE", ylabel="position",
                  value_name="PE value")
    return ExampleResult([figure(svg, f"Row: position 0 to {N_POSITIONS - 1}. Column: 0 to {d - 1}. "
                                      "The two hues are the two signs; the page's background is 0.")],
                         f"sinusoidal_positions({N_POSITIONS}, {d}), d_model of the reversal task",
                         data=dict(PE=PE, d=d))


def pe_lines():
    d = task_d_model()
    PE = sinusoidal_positions(LONG_T, d)
    pos = list(range(LONG_T))
    series = [(f"col {j}: {'sin' if j % 2 == 0 else 'cos'} {j // 2}", pos, PE[:, j].tolist())
              for j in COLUMNS]
    svg = line_plot(series, "Columns of PE over positions", "position", "PE value")
    return ExampleResult([figure(svg, "Each pair of columns turns at its own rate; later pairs turn more slowly.")],
                         f"sinusoidal_positions({LONG_T}, {d}), columns {list(COLUMNS)}",
                         data=dict(PE=PE, d=d))


def wavelengths():
    d = task_d_model()
    omega = frequencies(d)
    lam = 2 * math.pi / omega
    rows = [[str(i), f"{2 * i}, {2 * i + 1}", f"{w:.6g}", f"{l:,.1f}", f"{l / lam[i - 1]:.6f}" if i else ""]
            for i, (w, l) in enumerate(zip(omega, lam))]
    rows.append(["", "", "", "last / first", f"{lam[-1] / lam[0]:,.1f}"])
    return ExampleResult([table(["Pair i", "Columns", "omega_i", "Wavelength 2 pi / omega_i (positions)",
                                 "Wavelength / previous pair's"], rows)],
                         f"the angles of sinusoidal_positions(2, {d}) at position 1, read from its trace",
                         data=dict(omega=omega, d=d))


def rotation(omega, k):
    """The block-diagonal map with PE[p + k] = PE[p] @ R for row vectors: one 2 x 2 rotation per pair."""
    d = 2 * len(omega)
    R = np.zeros((d, d))
    for i, w in enumerate(omega):
        c, s = math.cos(w * k), math.sin(w * k)
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[c, -s], [s, c]]
    return R


def linear_shift():
    """PE[p + k] against PE[p]: a least-squares linear fit over every p, and the rotation built from
    the frequencies; both reproduce the shifted rows to rounding error."""
    d = task_d_model()
    PE = sinusoidal_positions(LONG_T, d)
    omega = frequencies(d)
    rows, data = [], {}
    for k in SHIFTS:
        A, B = PE[:LONG_T - k], PE[k:]
        M, _, rank, _ = np.linalg.lstsq(A, B, rcond=None)
        fit = float(np.abs(A @ M - B).max())
        rot = float(np.abs(A @ rotation(omega, k) - B).max())
        rows.append([str(k), str(LONG_T - k), f"{fit:.1e}", f"{rot:.1e}", str(int(rank))])
        data[k] = dict(fit=fit, rot=rot, rank=int(rank))
    return ExampleResult([table(["Shift k", "Pairs of rows fitted", "Largest |PE[p] M - PE[p+k]|, M by least squares",
                                 "Largest |PE[p] R_k - PE[p+k]|, R_k the rotation", "Numerical rank of the rows"], rows)],
                         f"sinusoidal_positions({LONG_T}, {d}); numpy.linalg.lstsq for M", data=data)


def dot_products():
    d = task_d_model()
    PE = sinusoidal_positions(LONG_T, d)
    omega = frequencies(d)
    ks = list(range(LONG_T - max(DOT_FROM)))
    curves = {p: [float(PE[p] @ PE[p + k]) for k in ks] for p in DOT_FROM}
    spread = max(abs(curves[p][k] - curves[DOT_FROM[0]][k]) for p in DOT_FROM for k in ks)
    formula = [float(np.cos(omega * k).sum()) for k in ks]
    gap = max(abs(a - b) for a, b in zip(curves[DOT_FROM[0]], formula))
    svg = line_plot([(f"PE[{p}] · PE[{p} + k]", ks, curves[p]) for p in DOT_FROM],
                    "Dot product of two positions k apart", "k", "dot product")
    rows = [["Largest difference between the curves (different p, same k)", f"{spread:.1e}"],
            ["Largest |PE[p] · PE[p+k] - sum_i cos(omega_i k)|", f"{gap:.1e}"],
            ["At k = 0 (each pair adds sin² + cos² = 1)", fmt_number(curves[DOT_FROM[0]][0])],
            [f"Smallest value for k up to {ks[-1]}", fmt_number(min(curves[DOT_FROM[0]]))]]
    return ExampleResult([figure(svg, "The three curves lie on top of each other."), table(["", "Measured"], rows)],
                         f"sinusoidal_positions({LONG_T}, {d})",
                         data=dict(curves=curves, spread=spread, gap=gap, ks=ks))


def facts():
    """For prose: the last pair's frequency and wavelength at the reversal task's width, against
    the 10000 of the paper's description (its wavelengths run "from 2 pi to 10000 * 2 pi")."""
    d = task_d_model()
    omega = frequencies(d)
    last = 2 * math.pi / omega[-1]
    paper = 10000 * 2 * math.pi
    return ExampleResult([], f"the angles of sinusoidal_positions(2, {d}) at position 1, read from its trace",
                         data=dict(d=d, pairs=len(omega), last_omega=float(omega[-1]), last_inverse=float(1 / omega[-1]),
                                   last_wavelength=last, paper_wavelength=paper, share=last / paper,
                                   small_t=SMALL_T, small_d=SMALL_D))
