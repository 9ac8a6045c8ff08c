"""Mathematical names for code names, and a TeX draft of a statement, for `new-concept`.

`math_name` gives the TeX a page would use for a local (`eps` -> `\\varepsilon`, `Xhat` ->
`\\hat{X}`, `W1` -> `W_1`, `logP` -> `\\log P`, `ms` -> `\\mathrm{ms}`); the symbol row then
maps it back to the code name (render/pages/symbol_rows.py `tex_name` reads most of them back
without a `code:`). `draft` writes an equation's TeX from the statement that computes it:
names as those symbols, `*` of two arrays as `\\odot`, `/` as a fraction, `np.sqrt` as a root,
a reduction over the last axis as a sum over j, a comparison of arrays as an Iverson
bracket, a generator's draw as a letter with its distribution (`u \\sim U(0, 1)`). Anything it cannot read (a slice, a call it
does not know) gives None, and the scaffold writes TODO: a draft is the code's own
statement, never a formula guessed from a name. A draft whose two sides are the same TeX
(`u = np.asarray(u)`, a broadcast, two code names spelled alike) is a `tautology`: the scaffold
writes no equation for it rather than `u = u`.
"""
from __future__ import annotations

import ast
import re

GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
         "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega"}
SHORT_GREEK = {"eps": r"\varepsilon", "lam": r"\lambda", "lmbda": r"\lambda", "sig": r"\sigma"}
FUNCTIONS = {"sqrt": None, "exp": r"\exp", "log": r"\log", "tanh": r"\tanh", "sin": r"\sin", "cos": r"\cos",
             "abs": None, "maximum": r"\max", "minimum": r"\min"}
# A generator's draws, as the distribution each entry comes from (numpy.random.Generator's own).
DRAWS = {"random": ("u", "U(0, 1)"), "standard_normal": ("z", r"\mathcal{N}(0, 1)")}
REDUCTIONS = {"sum": r"\sum_j", "mean": r"\operatorname{mean}_j", "max": r"\max_j", "min": r"\min_j"}


def math_name(name: str) -> str:
    """The TeX a page writes for the code name `name`."""
    if name in SHORT_GREEK:
        return SHORT_GREEK[name]
    if name.lower() in GREEK:
        return "\\" + (name if name.islower() else name.capitalize())
    m = re.fullmatch(r"d([A-Z]\w*|[a-z])", name)
    if m and len(name) > 1:                      # a gradient: dX, dXhat, dy
        inner = math_name(m.group(1))
        return "d" + inner if not inner.startswith(r"\mathrm") else rf"\mathrm{{{name}}}"
    m = re.fullmatch(r"([A-Z])([a-z])", name)
    if m:                                        # Xn, Xc: X with an index
        return f"{m.group(1)}_{m.group(2)}"
    m = re.fullmatch(r"(\w+?)(hat|bar|tilde)", name)
    if m and m.group(1):
        return rf"\{m.group(2)}{{{math_name(m.group(1))}}}"
    m = re.fullmatch(r"(log|exp)([A-Z]\w*)", name)
    if m:
        return rf"\{m.group(1)} {math_name(m.group(2))}"
    m = re.fullmatch(r"([A-Za-z])_?(\d+)", name)
    if m:
        return f"{m.group(1)}_{m.group(2)}"
    if len(name) == 1:
        return name
    return rf"\mathrm{{{name}}}"


def _number(value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = repr(value)
    m = re.fullmatch(r"(\d(?:\.\d+)?)e(-?)0*(\d+)", text)
    return rf"{m.group(1)} \cdot 10^{{{m.group(2)}{m.group(3)}}}" if m else text


def helper_expression(params: tuple, doc: str | None):
    """(parameter, expression) when a helper's docstring opens with the NumPy expression it
    computes (`X.sum(axis=-1, keepdims=True) as one matrix-vector product`), else None."""
    if not doc or not params:
        return None
    words = doc.split()
    for n in range(len(words), 0, -1):
        try:
            expr = ast.parse(" ".join(words[:n]).rstrip(".,:;"), mode="eval").body
        except SyntaxError:
            continue
        used = {x.id for x in ast.walk(expr) if isinstance(x, ast.Name)}
        if params[0] in used and isinstance(expr, ast.Call):
            return params[0], expr
    return None


class _Drafter:
    def __init__(self, names: dict, arrays: set, helpers: dict | None = None):
        self.names, self.arrays, self.helpers = names, arrays, helpers or {}
        self.draws = []                      # `u \sim U(0, 1)` for each random draw the statement makes

    def is_array(self, node) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.arrays
        if isinstance(node, ast.Constant):
            return False
        if isinstance(node, ast.BinOp):
            return self.is_array(node.left) or self.is_array(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_array(node.operand)
        return True

    def wrap(self, node, parent_op) -> str:
        text = self(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) \
                and isinstance(parent_op, (ast.Mult, ast.MatMult, ast.Sub, ast.Pow)):
            return rf"\left({text}\right)"
        if isinstance(parent_op, ast.Pow) and not isinstance(node, (ast.Name, ast.Constant)):
            return rf"\left({text}\right)"
        return text

    def __call__(self, node) -> str:
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                raise ValueError(node.id)
            return self.names[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return _number(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return "-" + self.wrap(node.operand, ast.Mult())
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = {ast.Lt: "<", ast.LtE: r"\le", ast.Gt: ">", ast.GtE: r"\ge", ast.Eq: "=", ast.NotEq: r"\ne"}
            text = f"{self(node.left)} {op[type(node.ops[0])]} {self(node.comparators[0])}"
            arrays = self.is_array(node.left) or self.is_array(node.comparators[0])
            return rf"\left[{text}\right]" if arrays else text     # of arrays: 1 where it holds, else 0
        if isinstance(node, ast.Subscript):
            index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if all(isinstance(i, ast.Constant) and i.value in (None, Ellipsis) for i in index):
                return self(node.value)                  # x[..., None]: the same values, broadcast
            raise ValueError("a slice")
        if isinstance(node, ast.Call):
            same = _same_values(node)
            return self(same) if same is not None else self.call(node)
        raise ValueError(type(node).__name__)

    def binop(self, node) -> str:
        left, right = self.wrap(node.left, node.op), self.wrap(node.right, node.op)
        if isinstance(node.op, ast.Add):
            return f"{left} + {right}"
        if isinstance(node.op, ast.Sub):
            return f"{left} - {right}"
        if isinstance(node.op, ast.Div):
            return rf"\frac{{{self(node.left)}}}{{{self(node.right)}}}"
        if isinstance(node.op, ast.Pow):
            return f"{left}^{{{self(node.right)}}}"
        if isinstance(node.op, ast.MatMult):
            return f"{left} {right}"
        if isinstance(node.op, ast.Mult):
            if self.is_array(node.left) and self.is_array(node.right):
                return rf"{left} \odot {right}"
            return rf"{left}\, {right}"
        raise ValueError(type(node.op).__name__)

    def call(self, node) -> str:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in DRAWS and not (isinstance(func.value, ast.Name)
                                                                           and func.value.id == "np"):
            letter, law = DRAWS[func.attr]
            letter = letter if not self.draws else f"{letter}_{len(self.draws) + 1}"
            self.draws.append(rf"{letter} \sim {law}")
            self.arrays.add(letter)
            return letter
        last_axis = any(k.arg == "axis" and ast.unparse(k.value) in ("-1",) for k in node.keywords)
        if isinstance(func, ast.Attribute) and func.attr in REDUCTIONS and last_axis:
            target = func.value if not (isinstance(func.value, ast.Name) and func.value.id == "np") else node.args[0]
            return rf"{REDUCTIONS[func.attr]} {self.wrap(target, ast.Mult())}"
        short = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if isinstance(func, ast.Name) and short in self.helpers and len(node.args) == 1:
            found = self.helpers[short]
            if found is None:
                escaped = short.replace("_", "\\_")
                return rf"\operatorname{{{escaped}}}\left({self(node.args[0])}\right)"
            param, expr = found
            inner = _Drafter({**self.names, param: self.wrap(node.args[0], ast.Mult())}, self.arrays | {param})
            return inner(expr)
        if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "np"):
            raise ValueError("a method")
        if short in FUNCTIONS and node.args and not node.keywords:
            args = ", ".join(self(a) for a in node.args)
            if short == "sqrt":
                return rf"\sqrt{{{args}}}"
            if short == "abs":
                return rf"\lvert {args} \rvert"
            return rf"{FUNCTIONS[short]}\left({args}\right)"
        raise ValueError(f"the call {short}")


# Calls that return their argument's values in another container or type: the math is the argument.
SAME_VALUES = {"asarray", "array", "asanyarray", "ascontiguousarray"}      # np.asarray(x)
SAME_VALUES_METHODS = {"astype", "copy"}                                   # x.astype(float), x.copy()


def _same_values(node: ast.Call):
    """The expression whose values `node` returns unchanged (`np.asarray(u)` -> `u`), else None."""
    func = node.func
    if not isinstance(func, ast.Attribute):
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "np":
        return node.args[0] if func.attr in SAME_VALUES and len(node.args) == 1 else None
    return func.value if func.attr in SAME_VALUES_METHODS else None


def tautology(tex: str | None) -> bool:
    """Whether a drafted `lhs = rhs` says nothing (`u = u`: a conversion, a broadcast, a name
    the TeX spells like another): new-concept writes no equation for it."""
    if not tex or " = " not in tex:
        return False
    lhs, _, rhs = tex.partition(" = ")
    return lhs.replace(" ", "") == rhs.replace(" ", "")


def draft(targets: list, expr: ast.AST, names: dict, arrays: set, helpers: dict | None = None) -> str | None:
    """`lhs = rhs` in TeX for `targets = expr`, or None when some part is not readable as math.
    `names` maps each code name to its TeX; `arrays` names the arrays (a product of two is ⊙);
    `helpers` maps a package helper's name to helper_expression's reading of it (None: shown
    as an operator of its name)."""
    drafter = _Drafter(names, set(arrays), helpers)
    try:
        rhs = drafter(expr)
    except (ValueError, KeyError):
        return None
    lhs = ", ".join(names.get(t, t) for t in targets)
    if drafter.draws and lhs.replace(" ", "") == rhs.replace(" ", ""):
        return r", \quad ".join(drafter.draws)        # `u = rng.random(...)`: the draw alone, never `u = u`
    return f"{lhs} = {rhs}" + "".join(rf", \quad {d}" for d in drafter.draws)
