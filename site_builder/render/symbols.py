"""Linked symbols: tie each symbol a concept declares to its places in the equations and the code.

A concept's `symbols` rows pair TeX (`X_1`, `W_1, b_1`) with a name in code (`X1`,
`ff1_w, ff1_b`). On the page, pointing at a symbol lights it up everywhere it appears in
that concept: in the equations, in the symbol table, in the code listings and in the
example tables. The browser only adds and removes a class (static/js/symbols.js); every
decision about *where* a symbol is gets made here, at build time:

- Equations. Before KaTeX renders an equation, each declared symbol's TeX inside it is
  wrapped in `\\htmlClass{sym-<n>}{...}` (n = the symbol's row in the table), so the rendered
  HTML carries `class="sym-<n>"` on exactly those atoms. Matching is on TeX *tokens*, not
  characters, longest symbol first, and only at atom boundaries: `X` does not match inside
  `X_1` (a longer symbol, or a subscript that makes it another symbol), inside `dX` (a letter
  right before it) or inside `\\mathrm{Ff}` (text arguments are never searched). A trailing
  superscript (`b_1^\\top`) is taken into the wrapped atom so the rendering stays identical.
  Groups are searched inside only where they are math (`\\frac{..}{..}`, `\\sqrt`, bare braces).
- Code. The `code` column is parsed as Python: bare names (`X1`, `ff1_w`) become names the
  browser matches against the highlighted tokens of the listings; other expressions
  (`X1 + ff`, `c["positive"]`, `.sum(axis=0)`) match the listing lines that contain them.
  Text that is not Python ("not named in the code", `*`) links to no code.
- Checking the code column. `code_misses` says which names, attributes, keys and operators
  of a row's `code` the code does not spell (site_builder/render/pages/symbol_rows.py reports them at the row, a
  `check` problem): a row can be linked only to what is there, and a name that went stale
  when the code changed (`.sum(axis=0)` after the code moved to `column_sums`) must fail.

Trade-offs: KaTeX must *trust* `\\htmlClass`, and only for class names `sym-<digits>`
(mathrender.render_tex(symbol_classes=True)); authors' own TeX still renders with no trust
at all, because the wrapped TeX is rendered only after the author's TeX rendered cleanly, and
any failure of the wrapped form falls back to the plain rendering (the page loses the
highlight for that equation, never the equation). Symbols are scoped to their concept: the
same `X` on two concepts of one page are two symbols.
"""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field

from markupsafe import Markup

# Commands whose braced arguments are math that may hold symbols; every other command's
# arguments (\text, \mathrm, \operatorname, \hat, ...) are searched only as a whole.
MATH_ARGS = {"\\frac": 2, "\\dfrac": 2, "\\tfrac": 2, "\\sqrt": 1, "\\binom": 2, "\\boxed": 1,
             "\\underbrace": 1, "\\overbrace": 1, "\\left": 0, "\\right": 0}
# Arguments of these are never searched inside (they are names or labels, not math).
OPAQUE_ARGS = {"\\text": 1, "\\textrm": 1, "\\textbf": 1, "\\textit": 1, "\\mathrm": 1, "\\mathbf": 1,
               "\\mathbb": 1, "\\mathcal": 1, "\\mathit": 1, "\\mathsf": 1, "\\mathtt": 1,
               "\\boldsymbol": 1, "\\operatorname": 1, "\\hat": 1, "\\tilde": 1, "\\bar": 1, "\\vec": 1,
               "\\dot": 1, "\\overline": 1, "\\underline": 1, "\\widehat": 1, "\\begin": 1, "\\end": 1,
               "\\htmlClass": 2}


@dataclass
class Tok:
    kind: str               # "cs" (control sequence), "group", "char", "space"
    text: str               # the source of the token
    start: int
    end: int
    children: list = field(default_factory=list)   # tokens inside a group


def tokenize(tex: str, start: int = 0, end: int | None = None) -> list:
    """TeX as tokens; groups nest. Unbalanced braces are tolerated (the last group runs to the end)."""
    end = len(tex) if end is None else end
    out, i = [], start
    while i < end:
        ch = tex[i]
        if ch.isspace():
            j = i
            while j < end and tex[j].isspace():
                j += 1
            out.append(Tok("space", tex[i:j], i, j))
            i = j
        elif ch == "\\":
            m = re.compile(r"\\([A-Za-z]+|.)").match(tex, i)
            j = m.end() if m else i + 1
            out.append(Tok("cs", tex[i:j], i, j))
            i = j
        elif ch == "{":
            depth, j = 1, i + 1
            while j < end and depth:
                if tex[j] == "\\":
                    j += 2
                    continue
                depth += tex[j] == "{"
                depth -= tex[j] == "}"
                j += 1
            inner_end = j - 1 if depth == 0 else j
            out.append(Tok("group", tex[i:j], i, j, tokenize(tex, i + 1, inner_end)))
            i = j
        else:
            out.append(Tok("char", ch, i, i + 1))
            i += 1
    return out


def _solid(tokens):
    return [t for t in tokens if t.kind != "space"]


def signature(tok: Tok) -> str:
    """A comparable form of a token: whitespace dropped, `{x}` the same as `x`."""
    if tok.kind != "group":
        return tok.text
    inner = _solid(tok.children)
    if len(inner) == 1 and inner[0].kind != "group":
        return inner[0].text
    return "{" + " ".join(signature(t) for t in inner) + "}"


def split_top_level(tex: str) -> list:
    """'W_1, b_1' -> ['W_1', 'b_1']: one symbol row may declare several symbols."""
    parts, cur = [], []
    for t in tokenize(tex):
        if t.kind == "char" and t.text == ",":
            parts.append("".join(x.text for x in cur).strip())
            cur = []
        else:
            cur.append(t)
    parts.append("".join(x.text for x in cur).strip())
    return [p for p in parts if p]


def _prepare(symbols):
    """[(n, [signatures])], longest first: the patterns to look for."""
    pats = []
    for n, tex in symbols:
        for part in split_top_level(tex):
            sig = [signature(t) for t in _solid(tokenize(part))]
            if sig:
                pats.append((n, sig))
    pats.sort(key=lambda p: (-len(p[1]), -len("".join(p[1]))))
    return pats


def _letter(ch: str) -> bool:
    return ch.isalpha()


GREEK = set("alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi "
            "pi rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Phi Psi "
            "Omega".split())


def _letter_like(tex: str, at: int) -> bool:
    """Does a command that draws a letter (\\hat{x}, \\mathrm{Out}, \\mu) start at `at`?"""
    m = re.compile(r"\\([A-Za-z]+)").match(tex, at)
    return bool(m) and ("\\" + m.group(1) in OPAQUE_ARGS or m.group(1) in GREEK)


def _find(tex, tokens, pats, wraps):
    """Record (start, end, n) for every match among `tokens` (one nesting level), recursing
    into groups that are math."""
    solid = _solid(tokens)
    i = 0
    pending, pending_left = None, 0          # the command whose arguments follow
    while i < len(solid):
        t = solid[i]
        prev = solid[i - 1] if i else None
        in_script = prev is not None and prev.kind == "char" and prev.text in "_^"
        matched = False
        if not in_script and pending_left == 0:
            for n, sig in pats:
                k = len(sig)
                if [signature(x) for x in solid[i:i + k]] != sig:
                    continue
                start, end = t.start, solid[i + k - 1].end
                if start > 0 and _letter(tex[start - 1]):
                    continue                                   # `X` inside `dX`
                nxt = solid[i + k] if i + k < len(solid) else None
                if nxt is not None and nxt.kind == "char" and nxt.text in "_'":
                    continue                                   # `X` of `X_2`: another symbol
                if end < len(tex) and (_letter(tex[end]) or _letter_like(tex, end)):
                    continue                                   # `d` of `d\hat{x}`
                used = k
                if nxt is not None and nxt.kind == "char" and nxt.text == "^" and "^" not in sig \
                        and i + k + 1 < len(solid):
                    end = solid[i + k + 1].end                 # keep `b_1^\top` one atom
                    used += 2
                wraps.append((start, end, n))
                i += used
                matched = True
                break
        if matched:
            pending, pending_left = None, 0
            continue
        if t.kind == "cs":
            if t.text in MATH_ARGS:
                pending, pending_left = t.text, MATH_ARGS[t.text]
            elif t.text in OPAQUE_ARGS:
                pending, pending_left = t.text, OPAQUE_ARGS[t.text]
            else:
                pending, pending_left = None, 0
        elif t.kind == "group":
            if in_script:
                pass                                           # a sub/superscript: a label
            elif pending_left:
                if pending in MATH_ARGS:
                    _find(tex, t.children, pats, wraps)
                pending_left -= 1
            else:
                _find(tex, t.children, pats, wraps)            # bare braces are math
        elif pending_left and t.kind == "char" and t.text == "[" and pending == "\\sqrt":
            pass
        elif pending_left:
            pending_left -= 1                                  # `\frac12`: single-token arguments
        i += 1


def wrap_symbols(tex: str, symbols) -> str:
    """symbols: [(n, tex)]. Returns tex with each occurrence wrapped in \\htmlClass{sym-n}{...}."""
    pats = _prepare(symbols)
    if not pats:
        return tex
    wraps = []
    _find(tex, tokenize(tex), pats, wraps)
    out, pos = [], 0
    for start, end, n in sorted(wraps):
        end = _name_end(tex, start, end)
        out.append(tex[pos:start])
        out.append(_atom(tex[start:end], f"\\htmlClass{{sym-{n}}}{{{tex[start:end]}}}"))
        pos = end
    out.append(tex[pos:])
    return "".join(out)


BINARY = {"+", "-", "*", "\\odot", "\\cdot", "\\times", "\\otimes", "\\oplus", "\\circ", "\\ast"}
RELATION = {"=", "<", ">", "\\le", "\\leq", "\\ge", "\\geq", "\\approx", "\\sim", "\\propto", "\\to"}
OPERATOR = {"\\operatorname", "\\sum", "\\prod", "\\log", "\\exp", "\\max", "\\min", "\\lim",
            "\\arg", "\\det", "\\operatorname*"}


def _name_end(tex: str, start: int, end: int) -> int:
    """A symbol that applies an operator (`\\operatorname{GELU}(x)`, `\\max_j z`) is marked on
    the operator's name only: its argument stays outside the mark, set as math (inside the
    mark, KaTeX made the whole of it one upright operator)."""
    solid = _solid(tokenize(tex, start, end))
    if not solid or solid[0].text not in OPERATOR:
        return end
    i = 1
    if solid[0].text in ("\\operatorname", "\\operatorname*") and len(solid) > 1 and solid[1].kind == "group":
        i = 2
    while i + 1 < len(solid) and solid[i].text in ("_", "^"):      # `\\operatorname{LN}_1` is a name
        i += 2
    name_end = solid[i - 1].end
    return name_end if tex[name_end:end].strip() else end


def _atom(source: str, wrapped: str) -> str:
    """Give the wrapped symbol the math class its source had, so TeX spaces it the same:
    \\htmlClass alone makes an atom with no class, and KaTeX would drop the space around `=`."""
    first = _solid(tokenize(source))[0].text
    if source.strip() in BINARY:
        return f"\\mathbin{{{wrapped}}}"
    if source.strip() in RELATION:
        return f"\\mathrel{{{wrapped}}}"
    return f"{{{wrapped}}}"       # an operator name keeps its own spacing (mathrender.space_operators)


# -- code names -------------------------------------------------------------------------------

def code_links(code: str) -> dict:
    """The `code` column of a symbol row -> {names: [...], exprs: [...]}.

    names: identifiers to match against code tokens (`X1`, `ff1_w`; `cfg.width` gives `width`).
    exprs: other Python expressions, matched against whole listing lines (`X1 + ff`).
    """
    names, exprs = [], []
    for part in _split_code(code):
        src = part
        if part.startswith("."):
            src = "_" + part
        if re.fullmatch(r"return(\[\d+\])?", part):
            exprs.append("return")
            continue
        try:
            node = ast.parse(src, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names.append(node.attr)
        elif isinstance(node, (ast.BinOp, ast.Subscript, ast.Call, ast.Attribute, ast.UnaryOp)):
            exprs.append(part)
    return dict(names=list(dict.fromkeys(names)), exprs=list(dict.fromkeys(exprs)))


_OPERATORS = {"+": "Add", "-": "Sub", "*": "Mult", "/": "Div", "//": "FloorDiv", "%": "Mod", "**": "Pow",
              "@": "MatMult", "&": "BitAnd", "|": "BitOr", "^": "BitXor", "<<": "LShift", ">>": "RShift"}


def code_misses(code: str, scopes, class_attrs=frozenset()) -> list:
    """What the `code` column spells that the code does not: [(part, word)], `word` as the
    part spells it (`max` of `S.max(...)`, `'wq'`, `*`). `scopes` are the source_records.CodeWords
    of the concept's function first, then of the other code the concept shows
    (site_builder/render/pages/symbol_rows.py code_scopes says which); each comma-separated
    part must be spelled by one of them as a whole, so
    `S.max(...)` is not found by a function with `S` and a callee with `.max`. String keys are
    the exception: a cache is built in one function and read in another, so a key may come
    from any of them.

    A part is parsed as Python: its names, attributes, string keys and binary operators must
    occur in that source, or be Python's builtins (`len`). Names inside an index (`Qh[i]`,
    `Xn[t]`) are the reader's indices; names a part binds itself (`v` of `sum(v.size for v in
    p)`) are its own; a key may be a full parameter name whose prefix the code builds
    (`params["layer0.w"]` for `params[p + "w"]`, `f"layer{l}.w"`); `x.field` of a
    field of one of the package's classes (`cfg.width`, in `class_attrs`) is found wherever
    the instance is. A bare operator (`*`) must be one the code applies; `return` needs a
    return; `NAME (inside FUNCTION)` is NAME, FUNCTION being among the scopes. Text that is
    not Python ("not named in the code") is not checked."""
    keys = frozenset().union(*(w.keys for w in scopes))
    misses = []
    for part in _split_code(code):
        per_scope = [_part_misses(part, w, keys, class_attrs) for w in scopes]
        fewest = min(per_scope, key=len) if per_scope else []
        misses += [(part, w) for w in dict.fromkeys(fewest)]
    return misses


_BUILTINS = frozenset(dir(builtins))


def _part_misses(part: str, words, keys, class_attrs) -> list:
    part = re.sub(r"\s*\(inside\s+[\w.]+\)$", "", part)     # `loss (inside F)`: F is among the scopes
    if re.fullmatch(r"return(\[\d+\])?", part):
        return [] if words.returns else ["return"]
    if part in _OPERATORS:
        return [] if _OPERATORS[part] in words.ops else [part]
    implicit = part.startswith(".")                    # `.sum(axis=0)`: a method of an unnamed array
    try:
        tree = ast.parse("_" + part if implicit else part, mode="eval")
    except SyntaxError:
        try:
            tree = ast.parse(part, mode="exec")       # `flat[i] = old + h`
        except SyntaxError:
            return []
    skip, bound = set(), {"_"} if implicit else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            skip |= {id(n) for n in ast.walk(node.slice) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.JoinedStr):        # f"layer{l}.w": its own name is the last piece
            skip |= {id(n) for n in ast.walk(node) if n is not node.values[-1]}
        elif isinstance(node, ast.comprehension):
            bound |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Lambda):
            bound |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in class_attrs:
            skip |= {id(node), id(node.value)}
    missing = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Name) and node.id not in bound | _BUILTINS:
            if not {node.id} & (words.names | words.keys | words.attrs):
                missing.append(node.id)
        elif isinstance(node, ast.Attribute) and node.attr not in words.attrs:
            missing.append(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and not {node.value, node.value.rsplit(".", 1)[-1]} & keys:
            missing.append(repr(node.value))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op).__name__ not in words.ops:
            missing.append(next(k for k, v in _OPERATORS.items() if v == type(node.op).__name__))
    return missing


def _split_code(code: str) -> list:
    parts, depth, cur = [], 0, ""
    for ch in code:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in parts + [cur] if p.strip()]


# -- rendering --------------------------------------------------------------------------------

def _render_wrapped(tex: str, display: bool):
    from site_builder.render.mathrender import render_tex, TexError
    try:
        return render_tex(tex, display, symbol_classes=True)
    except TexError:
        return None


def render_equation(renderer, tex: str, symbols, file, line, display=True):
    """The equation's HTML with its symbols marked; the author's TeX is rendered (and any error
    reported against the content file) exactly as without symbols."""
    plain = renderer.tex(tex, display, file, line)
    if 'class="tex-error"' in plain:
        return plain
    wrapped = wrap_symbols(tex, [(s["n"], s["tex_src"]) for s in symbols if s.get("tex_src")])
    if wrapped == tex:
        return plain
    html = _render_wrapped(wrapped, display)
    return Markup(html) if html is not None else plain


# --- One notation across the site -------------------------------------------------------
# A symbol row says what a letter means on its page; two pages that declare one letter for two
# things teach a reader two notations. Whether two rows mean one thing is read from what the
# build can compare without judging prose: rows with a checked shape (in brackets) whose shapes
# differ beyond the length of a sequence (S, T, M, n and N are all "a length": one array at two
# lengths is one thing) and beyond one being a row of the other, and whose code names differ (`causal_mask(T)` -> causal_mask) mean two
# things. Prose meanings are never compared, so a letter reused with the same shape (a boolean
# and an additive mask, both (T, T)) passes: the check finds many clashes, not all.

LENGTHS = {"S", "T", "M", "n", "N"}


def _code_root(code: str) -> str:
    m = re.match(r"\s*(?:[\w.]*\.)?(\w+)", code)
    return m.group(1) if m else code.strip()


def _shape_key(shape: str) -> tuple:
    """'(S, d)' -> ('len', 'd'); None for a shape not in brackets (not checked, not compared)."""
    if not shape.startswith("("):
        return None
    axes = [a.strip() for a in shape.strip("() ").split(",") if a.strip()]
    return tuple("len" if a in LENGTHS else a for a in axes)


def _one_array(a: tuple, b: tuple) -> bool:
    """Shapes one array can have on two pages: equal, or one a row (a suffix) of the other."""
    short, long = sorted((a, b), key=len)
    return long[len(long) - len(short):] == short


def notation_clashes(pages):
    """[(symbol, (file, line, meaning), (file, line, meaning))]: the first row of each symbol on
    a page against the first row on a later page that means something else. `pages` is
    [(file, [symbol rows])], each row a Located mapping with tex, meaning, code and shape."""
    first = {}                    # symbol -> [(file, line, meaning, code, shape)], one per page
    for file, rows in pages:
        for s in rows:
            parts = split_top_level(str(s.get("tex", "")))
            shape = _shape_key(str(s.get("shape", "")))
            if len(parts) != 1 or shape is None:
                continue          # a row of several symbols, or an unchecked shape: not compared
            code = _code_root(str(s.get("shape_of") or s.get("code") or parts[0]))
            seen = first.setdefault(parts[0].strip(), [])
            if not any(e[0] == file for e in seen):
                seen.append((file, s.line_of("tex"), str(s.get("meaning", "")), code, shape))
    clashes = []
    for sym, entries in first.items():
        for i, a in enumerate(entries):
            other = next((b for b in entries[i + 1:] if a[3] != b[3] and not _one_array(a[4], b[4])), None)
            if other:
                clashes.append((sym, a[:3], other[:3]))
    return clashes
