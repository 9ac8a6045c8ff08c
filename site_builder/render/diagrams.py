"""Architecture diagrams drawn from the code: the arrays that flow between a function's calls.

`dataflow(index, function, expand)` reads the statements of `function` in code order (the
same `flow_steps` the flow lists use, so the syntax tree is parsed once, by the source index)
and keeps the ones that make an array: a call of an indexed function (`H, c = dense_forward(X,
...)`), an add (`X1 = X + H`, `return X1 + Y, ...`), a call inside a `return` (`return loss,
backward(dlogits, c)`), and a call whose result is not kept (`embed_backward(dX, c, grads)`, a
backward pass's end, which only fills `grads`). Each becomes a node; an edge runs from
the statement that last bound a name to each statement that reads it, so the picture is the
code's own data flow: move a call in the package and the picture moves with it. Functions
named in `expand` are drawn inside their caller (their parameters bound to the caller's
arrays, each element they return to the caller's name in the same place, a plain rebind such as
`dX = dmemory` followed), and each expanded call at the top level
opens a column of its own: a package of two stacks called one after the other is drawn as one
stack beside the other, the first's output crossing into the second.

What counts as an array is a heuristic, stated here so it can be argued with: a name that is
not a cache (`c`, `c_norm`, `cache`), not one of NOT_ARRAYS (parameters, config, the layer
index, the prefix), and not only read for its `.shape`. A `for` loop around statements is a
dashed frame labelled with its header: the code says how often, the picture does not guess.

`render(nodes, ...)` lays the nodes out top to bottom in code order (one column per top-level
expansion), routes an edge that skips a node down a lane to the right of its column, and
writes SVG that takes its colours from the page's CSS variables. Each box is a link (the page
chooses where: the concept section of the called function, or the equation that cites an add).
"""
import ast
import html
import re
import textwrap
from dataclasses import dataclass, field

from site_builder.gather.source_syntax import CACHE_NAME     # what the index calls a cache

NOT_ARRAYS = {"params", "cfg", "p", "l", "trace", "grads", "self", "_"}
MONO, SANS = 13, 12
CHAR_EM = 0.62
BOX_H, GAP, FRAME_HEAD, FRAME_TAIL, LANE = 30, 36, 24, 18, 10
HEAD_LINE = 15                 # a loop header's second line (12 px text)
MIN_SCALE = 0.85               # a diagram shrinks at most this far to fit its column, then scrolls


@dataclass
class Node:
    key: int
    kind: str                    # "input" | "call" | "add"
    label: str                   # the callee's name, "+", or the input's name
    callee: str = None           # qualname of the called function
    function: str = ""           # the function whose statement this is
    file: str = ""
    line: int = 0
    text: str = ""               # the statement's source
    outputs: list = field(default_factory=list)   # names it binds, then aliases its caller gives
    own: int = 0                 # how many of outputs the statement binds itself (the rest are aliases)
    inputs: list = field(default_factory=list)    # (producer key, name read)
    frame: tuple = None          # (id, header text) of the enclosing for/while loop
    column: int = 0
    href: str = None


def _names_read(expr) -> list:
    """Names an expression reads as values, in order (not a call's function, not `.shape` bases)."""
    parents = {id(c): n for n in ast.walk(expr) for c in ast.iter_child_nodes(n)}
    out = []
    for n in ast.walk(expr):
        if not isinstance(n, ast.Name) or not isinstance(n.ctx, ast.Load):
            continue
        parent = parents.get(id(n))
        if isinstance(parent, ast.Call) and parent.func is n:
            continue
        if isinstance(parent, ast.Attribute) and parent.attr == "shape":
            continue
        if n.id not in out:
            out.append(n.id)
    return out


def _is_array(name: str) -> bool:
    return name not in NOT_ARRAYS and not CACHE_NAME.match(name)


def _target_slots(stmt) -> list:
    """The names a statement binds, by position (`X, c = f()` gives ["X", "c"]); a slot that is
    not a plain name is None. A returned tuple's elements go to these slots in order."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else []
    out = []
    for t in targets:
        out.extend(n.id if isinstance(n, ast.Name) else None for n in (t.elts if isinstance(t, ast.Tuple) else [t]))
    return out


def _targets(stmt) -> list:
    return [n for n in _target_slots(stmt) if n is not None and _is_array(n)]


def _loop_header(line: str) -> str:
    """`for l in range(n):  # why` as the frame's label: no colon, no comment."""
    return re.sub(r"\s+#.*$", "", line.strip()).rstrip(":")


def _returned_values(stmt) -> list:
    """The expressions a `return` gives back, one per element of a returned tuple."""
    if stmt.value is None:
        return []
    return list(stmt.value.elts) if isinstance(stmt.value, ast.Tuple) else [stmt.value]


def _callee_of(call, step):
    """The indexed function an ast.Call inside a step calls: the step's callee when the call is
    the statement's whole value, else the one of the step's calls spelled with the same name."""
    func = call.func
    spelled = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return next((q for q in step.calls if q.split(".")[-1] == spelled), None)


def _aliases(index, function: str, step_lines: set) -> list:
    """[(line, name, source name or None)]: the plain rebinds the flow steps skip as trivial
    (`dX = dmemory` gives dX the array dmemory names; `d = 0.0` unbinds d). Read from the lines
    the index says bind each name, so the function is not parsed a second time as a whole."""
    info = index.function(function)
    lines = index.files[info.file]
    out = []
    for name, places in index.assignments(function).items():
        for first, last in places:
            if first in step_lines:
                continue
            try:
                stmt = ast.parse(textwrap.dedent("\n".join(lines[first - 1:last]))).body[0]
            except (SyntaxError, IndexError):
                continue                       # a `for` header: its target is a loop index, not an array
            if isinstance(stmt, ast.Assign) and _target_slots(stmt) == [name]:
                out.append((first, name, stmt.value.id if isinstance(stmt.value, ast.Name) else None))
    return sorted(out)


def dataflow(index, function: str, expand=()) -> list:
    """The nodes of `function`'s data flow, in code order (see the module docstring)."""
    nodes: list = []
    expand = set(expand)
    state = dict(column=0, expanded=0)
    root_params = list(index.function(function).params)

    def add(**kw):
        node = Node(key=len(nodes), **kw)
        node.own = len(node.outputs)
        nodes.append(node)
        return node

    def read(env, names, frame, fn):
        out = []
        for name in names:
            if name in env:
                out.append((env[name], name))
            elif fn == function and name in root_params and _is_array(name):
                env[name] = add(kind="input", label=name, outputs=[name], function=fn, column=state["column"]).key
                out.append((env[name], name))
        return out

    def expand_call(fn, call, callee, slots, env, frame, depth):
        """Draws callee inside its caller: its parameters bound to the caller's arrays, each
        element it returns to the caller's name in the same slot. Returns the returned keys."""
        if depth == 0:
            if state["expanded"]:
                state["column"] += 1
            state["expanded"] += 1
        params = [p for p in index.function(callee).params if p != "self"]
        inner = {}
        for p, arg in list(zip(params, call.args)) + [(k.arg, k.value) for k in call.keywords]:
            if isinstance(arg, ast.Name):
                got = read(env, [arg.id], frame, fn)
                if got:
                    inner[p] = got[0][0]
        keys = walk(callee, inner, frame, depth + 1)
        for name, key in zip(slots, keys):
            if name is None or key is None or not _is_array(name):
                continue
            if name not in nodes[key].outputs:
                nodes[key].outputs.append(name)
            env[name] = key
        return keys

    def call_node(fn, info, st, callee, expr, outputs, env, frame):
        node = add(kind="call", label=callee.split(".")[-1], callee=callee, function=fn, file=info.file,
                   line=st.line, text=st.text, outputs=list(outputs),
                   inputs=read(env, _names_read(expr), frame, fn), frame=frame, column=state["column"])
        return node.key

    def returned_key(fn, info, st, value, env, frame, depth):
        """The node that makes one returned element: a name's producer, an add, or a call."""
        if isinstance(value, ast.Name):
            return env.get(value.id)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and not any(
                isinstance(n, ast.Call) for n in ast.walk(value)):
            return add(kind="add", label="+", function=fn, file=info.file, line=st.line, text=st.text,
                       inputs=read(env, _names_read(value), frame, fn), frame=frame, column=state["column"]).key
        callee = _callee_of(value, st) if isinstance(value, ast.Call) else None
        if callee in expand:
            keys = expand_call(fn, value, callee, [], env, frame, depth)
            return keys[0] if keys else None
        if callee:
            return call_node(fn, info, st, callee, value, [], env, frame)
        return None

    def walk(fn: str, env: dict, outer_frame, depth: int) -> list:
        """Adds fn's nodes; returns the keys of the nodes that make its returned arrays, one per
        returned element (None where an element is no drawn array)."""
        info = index.function(fn)
        lines = index.files[info.file]
        steps = index.flow_steps(fn)
        aliases = _aliases(index, fn, {st.line for st in steps})
        returned = []
        for st in steps:
            while aliases and aliases[0][0] < st.line:
                _, name, source = aliases.pop(0)
                if source in env:
                    env[name] = env[source]
                else:
                    env.pop(name, None)
            try:
                stmt = ast.parse(textwrap.dedent(st.text)).body[0]
            except SyntaxError:
                continue
            loops = [h for h in st.within if re.match(r"\s*(for|while)\b", lines[h - 1])]
            frame = outer_frame or ((f"{info.file}:{loops[0]}", _loop_header(lines[loops[0] - 1])) if loops else None)
            if isinstance(stmt, ast.Return):
                returned = [returned_key(fn, info, st, v, env, frame, depth) for v in _returned_values(stmt)]
                continue
            value = getattr(stmt, "value", None)
            if isinstance(stmt, ast.Expr):
                # a call whose result is not kept: it fills grads (`embed_backward(dX, c, grads)`)
                if st.kind == "call" and st.callee and isinstance(value, ast.Call):
                    if st.callee in expand:
                        expand_call(fn, value, st.callee, [], env, frame, depth)
                    else:
                        call_node(fn, info, st, st.callee, value, [], env, frame)
                continue
            outputs = _targets(stmt)
            if not outputs:
                continue
            if st.kind == "call" and st.callee in expand:
                if isinstance(value, ast.Call):
                    expand_call(fn, value, st.callee, _target_slots(stmt), env, frame, depth)
                continue
            if st.kind == "call" and st.callee:
                key = call_node(fn, info, st, st.callee, value, outputs, env, frame)
            elif st.kind == "add":
                key = add(kind="add", label="+", function=fn, file=info.file, line=st.line, text=st.text,
                          outputs=list(outputs), inputs=read(env, _names_read(value), frame, fn) if value is not None else [],
                          frame=frame, column=state["column"]).key
            else:
                continue
            for name in outputs:
                env[name] = key
        return returned

    last = walk(function, {}, None, 0)
    if last and last[0] is not None and not nodes[last[0]].outputs:
        nodes[last[0]].outputs.append("returned")
    return nodes


# -- layout and SVG ------------------------------------------------------------------------
def _w(text, size):
    return len(text) * size * CHAR_EM


def _esc(text):
    return html.escape(str(text), quote=True)


def _out_label(node):
    """`dY3, dg, db`: the names one statement binds; `Xn2 → X → memory`: the same array under
    its callers' names."""
    own = [", ".join(node.outputs[:node.own])] if node.own else []
    return " → ".join(own + node.outputs[node.own:])


def _header_lines(header: str) -> list:
    """A loop header in one line, or two when it has " in " (`for l in` over `range(...)`):
    the header sits right of its column's boxes and the column is as wide as its widest line,
    so two shorter lines keep a diagram of two loops side by side inside the page's column at
    desktop width."""
    head, sep, tail = header.partition(" in ")
    return [head + " in", tail] if sep and tail else [header]


def render(nodes: list, title: str, column_titles=()) -> str:
    """SVG of the nodes; hrefs must be set by the caller (None: the box is not a link). The SVG
    may shrink to MIN_SCALE of its size to fit its column (site.css), then scrolls instead."""
    columns = sorted({n.column for n in nodes})
    by_col = {c: [n for n in nodes if n.column == c] for c in columns}
    head = 22 if len(columns) > 1 else 0
    pos = {}                                   # key -> (column, top y)
    frames = {}                                # frame id -> [column, top, bottom, header]
    col_height = {}
    for c in columns:
        y = 10 + head
        prev = None
        for n in by_col[c]:
            if prev is not None:
                y += BOX_H + GAP
            if n.frame and (prev is None or prev.frame != n.frame):
                y += FRAME_HEAD + HEAD_LINE * (len(_header_lines(n.frame[1])) - 1)
            if prev is not None and prev.frame and prev.frame != n.frame:
                y += FRAME_TAIL
            pos[n.key] = (c, y)
            if n.frame:
                f = frames.setdefault(n.frame[0], [c, y, y, n.frame[1]])
                f[2] = y
            prev = n
        col_height[c] = y + BOX_H + 22 + (FRAME_TAIL if prev is not None and prev.frame else 0)

    box_w = {c: max([_w(n.label, MONO) + 24 for n in by_col[c] if n.kind != "add"] + [120]) for c in columns}
    # Lanes: an edge that does not go to the next node of its column runs down the right side.
    edges = []
    for n in nodes:
        for src, name in n.inputs:
            edges.append((src, n.key, name))
    order = {c: [n.key for n in by_col[c]] for c in columns}
    lanes = {c: [] for c in columns}           # per column: list of lanes, each a list of (y0, y1)
    routed = []
    for src, dst, name in edges:
        cs, ys = pos[src]
        cd, yd = pos[dst]
        straight = cs == cd and order[cs].index(dst) == order[cs].index(src) + 1
        lane = None
        if not straight:
            span = (min(ys, yd) - 4, max(ys, yd) + BOX_H + 4)
            free = [k for k, used in enumerate(lanes[cs]) if all(span[1] < a or span[0] > b for a, b in used)]
            lane = free[0] if free else len(lanes[cs])
            if lane == len(lanes[cs]):
                lanes[cs].append([])
            lanes[cs][lane].append(span)
        routed.append((src, dst, lane))

    # Column x positions: the box, its frame header, its output labels, then its lanes.
    x = 12.0
    col_x, col_right = {}, {}
    for c in columns:
        col_x[c] = x
        cx = x + box_w[c] / 2
        right = x + box_w[c]
        for n in by_col[c]:
            right = max(right, cx + 6 + _w(_out_label(n), SANS) + 4 if n.kind != "input" else right)
        for f in frames.values():
            if f[0] == c:
                right = max(right, cx + 8 + max(_w(line, SANS) for line in _header_lines(f[3])) + 8)
        if len(columns) > 1 and c < len(column_titles):
            right = max(right, x + _w(column_titles[c], SANS + 1))
        col_right[c] = right + 8
        x = col_right[c] + 12 + LANE * len(lanes[c]) + 18
    width = x - 6
    height = max(col_height.values()) + 8

    def box(key):
        """(left, top, width) of what is drawn: the column's box, a pill, or the add's circle."""
        c, y = pos[key]
        n, cx = nodes[key], col_x[c] + box_w[c] / 2
        w = BOX_H if n.kind == "add" else _w(n.label, MONO) + 24 if n.kind == "input" else box_w[c]
        return cx - w / 2, y, w

    out = [f'<svg class="arch-svg" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
           f'style="min-width:{width * MIN_SCALE:.0f}px" role="group" aria-label="{_esc(title)}" xmlns="http://www.w3.org/2000/svg"><title>{_esc(title)}</title>']
    for c in columns:
        if len(columns) > 1 and c < len(column_titles):
            out.append(f'<text class="arch-col" x="{col_x[c]:.1f}" y="16">{_esc(column_titles[c])}</text>')
    for fid, (c, y0, y1, header) in frames.items():
        x0, lines = col_x[c] - 8, _header_lines(header)
        top = y0 - FRAME_HEAD - HEAD_LINE * (len(lines) - 1) + 2
        tx = col_x[c] + box_w[c] / 2 + 8
        spans = "".join(f'<tspan x="{tx:.1f}" y="{y0 - 8 - HEAD_LINE * (len(lines) - 1 - i):.1f}">{_esc(line)}</tspan>'
                        for i, line in enumerate(lines))
        out.append(f'<rect class="arch-frame" x="{x0:.1f}" y="{top:.1f}" width="{col_right[c] - x0:.1f}" '
                   f'height="{y1 + BOX_H + 24 - top:.1f}" rx="6"/>'
                   f'<text class="arch-loop">{spans}</text>')
    for src, dst, lane in routed:
        sx, sy, sw = box(src)
        dx, dy, dw = box(dst)
        cs, cd = pos[src][0], pos[dst][0]
        if lane is None:
            cx = sx + sw / 2
            y_from = sy + BOX_H
            out.append(f'<path class="arch-edge" d="M{cx:.1f} {y_from:.1f}V{dy - 1:.1f}"/>'
                       f'<path class="arch-head" d="M{cx - 4:.1f} {dy - 7:.1f}L{cx:.1f} {dy - 1:.1f}L{cx + 4:.1f} {dy - 7:.1f}Z"/>')
            continue
        lx = col_right[cs] + 12 + LANE * lane
        y_out, y_in = sy + BOX_H / 2 + 5, dy + BOX_H / 2 - 5
        if cs == cd:
            end = dx + dw + 1
            head = f'M{end + 7:.1f} {y_in - 4:.1f}L{end:.1f} {y_in:.1f}L{end + 7:.1f} {y_in + 4:.1f}Z'
        else:
            end = dx - 1
            head = f'M{end - 7:.1f} {y_in - 4:.1f}L{end:.1f} {y_in:.1f}L{end - 7:.1f} {y_in + 4:.1f}Z'
        out.append(f'<path class="arch-edge" d="M{sx + sw:.1f} {y_out:.1f}H{lx:.1f}V{y_in:.1f}H{end:.1f}"/>'
                   f'<path class="arch-head" d="{head}"/>')
    for n in nodes:
        x0, y0, w = box(n.key)
        cx, w = x0 + w / 2, box_w[n.column]
        tip = f"{n.file}:{n.line}  {' '.join(n.text.split())}" if n.line else f"input {n.label}"
        inner = []
        if n.kind == "add":
            inner.append(f'<circle class="arch-add" cx="{cx:.1f}" cy="{y0 + BOX_H / 2:.1f}" r="{BOX_H / 2 - 1:.1f}"/>'
                         f'<text class="arch-plus" x="{cx:.1f}" y="{y0 + BOX_H / 2 + 6:.1f}" text-anchor="middle">+</text>')
        else:
            cls = "arch-input" if n.kind == "input" else "arch-box"
            bw = w if n.kind != "input" else _w(n.label, MONO) + 24
            inner.append(f'<rect class="{cls}" x="{cx - bw / 2:.1f}" y="{y0}" width="{bw:.1f}" height="{BOX_H}" rx="{BOX_H / 2 if n.kind == "input" else 4}"/>'
                         f'<text class="arch-label" x="{cx:.1f}" y="{y0 + BOX_H / 2 + 4.5:.1f}" text-anchor="middle">{_esc(n.label)}</text>')
        body = f"<title>{_esc(tip)}</title>" + "".join(inner)
        if n.href:
            out.append(f'<a class="arch-node" href="{_esc(n.href)}">{body}</a>')
        else:
            out.append(f'<g class="arch-node">{body}</g>')
        if n.kind != "input" and n.outputs:
            out.append(f'<text class="arch-out" x="{cx + 6:.1f}" y="{y0 + BOX_H + 15:.1f}">{_esc(_out_label(n))}</text>')
    out.append("</svg>")
    return "".join(out)


def column_titles(index, function: str, expand=()) -> list:
    """The names of the expanded calls at the top level of `function`: one column each."""
    return [st.callee.split(".")[-1] for st in index.flow_steps(function) if st.kind == "call" and st.callee in set(expand)]


def legend(nodes: list, column_titles=()) -> str:
    """How to read the drawing, one clause per kind of element it draws and nothing about one it
    does not: a diagram without a loop says nothing of dashed frames."""
    kinds = {n.kind for n in nodes}
    parts = []
    if "call" in kinds:
        parts.append("Each box is a call that makes an array, in the order the code runs it, read from the syntax tree")
    if "add" in kinds:
        parts.append("a circle with + is an add")
    if "input" in kinds:
        parts.append("a rounded label is an input of the function")
    if any(n.outputs for n in nodes if n.kind != "input"):
        parts.append("the names under a box are the arrays it makes")
    if any(not n.outputs for n in nodes if n.kind == "call"):
        parts.append("a box with no name under it is a call whose result is not kept")
    if any(n.inputs for n in nodes):
        parts.append("the arrows go to the statements that read them")
    sentences = ["; ".join(parts) + "." if parts else ""]
    sentences[0] = sentences[0][:1].upper() + sentences[0][1:]
    if any(n.frame for n in nodes):
        sentences.append("A dashed frame is a loop, labelled with its header.")
    if len(set(n.column for n in nodes)) > 1:
        sentences.append(f"Each column is one call drawn inside its caller: {', '.join(column_titles)}.")
    linked = [n for n in nodes if n.href]
    if linked:
        every = all(n.href for n in nodes if n.kind != "input")
        sentences.append("Each box links to what explains it." if every else "A box that is a link goes to what explains it.")
    return " ".join(s for s in sentences if s)


def describe(nodes: list) -> list:
    """The diagram as sentences, one per node, for the list beside it (its text alternative)."""
    out = []
    for n in nodes:
        ins = ", ".join(dict.fromkeys(nm for _, nm in n.inputs))
        if n.kind == "input":
            out.append(dict(text=f"Input {n.label}.", href=None, where=None))
            continue
        what = "adds" if n.kind == "add" else f"{n.label} reads"
        loop = f" (inside {n.frame[1]})" if n.frame else ""
        made = f"makes {_out_label(n)}" if n.outputs else "keeps no result"
        out.append(dict(text=f"{what} {ins or 'no array'} and {made}{loop}",
                        href=n.href, where=f"{n.file.split('/')[-1]}:{n.line}"))
    return out
