"""Stage 4, the tracer: locals after each statement of a real function, loops, early returns,
in-place changes, errors that name the line, and that the previous trace function survives.
The small functions traced here live in this module; line numbers are found from their text."""
import inspect
import pickle
import sys

import numpy as np
import pytest

from site_builder.run.qualnames import qualname_of, resolve_qualname
from site_builder.run.trace import Shape, TraceError, call_tree, trace_calls, trace_locals


def _simple(x):
    y = x + 1
    z = y * 2
    return z


def _loop(n):
    total = 0
    for i in range(n):
        total += i
    return total


def _early(x):
    if x > 0:
        return "positive"
    y = -x
    return y


def _inplace(grads, a):
    grads["w"] += 1.0
    a *= 2
    b = a
    return b


def _overwrite(a):
    a[0] = 5.0
    a[1] = 6.0
    return a


def _multiline(v):
    d = {"a": v,
         "b": v + 1}
    return d


def _raises(x):
    y = x + 1
    z = y / (x - x)
    return z


def _fact(n):
    if n <= 1:
        return 1
    return n * _fact(n - 1)


def _inner(v):
    w = v * 3
    return w


def _outer(x):
    a = _inner(x)
    b = _inner(a)
    return a + b


def _gen(n):
    for i in range(n):
        yield i * 2


def _line(fn, text):
    """The line number of the first line of fn whose stripped text starts with text."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if line.strip().startswith(text):
            return start + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def test_records_locals_after_each_statement():
    t = trace_locals(_simple, 3)
    assert t.function == f"{__name__}._simple"
    assert t.file == "tests/test_trace.py"
    assert t.result == 8
    assert t.arguments == {"x": 3}
    assert [s.line for s in t.steps] == [_line(_simple, "y ="), _line(_simple, "z ="),
                                         _line(_simple, "return")]
    first, second, last = t.steps
    assert first.code == "y = x + 1" and first.locals == {"x": 3, "y": 4}
    assert first.changed == ("y",)             # the argument is not a change of this line
    assert second.changed == ("z",) and second.locals["z"] == 8
    assert last.is_return and last.return_value == 8 and last.changed == ()
    assert not first.is_return and not second.is_return


def test_array_snapshots_are_copies():
    a = np.zeros(3)
    t = trace_locals(_overwrite, a)
    assert t.result is a                       # the result is the real object
    assert t.steps[0].locals["a"].tolist() == [5.0, 0.0, 0.0]
    assert t.steps[1].locals["a"].tolist() == [5.0, 6.0, 0.0]
    assert t.steps[0].changed == ("a",) and t.steps[1].changed == ("a",)
    assert t.arguments["a"].tolist() == [0.0, 0.0, 0.0]


def test_loop_gives_one_step_per_iteration():
    n = 4
    t = trace_locals(_loop, n)
    body, header = _line(_loop, "total +="), _line(_loop, "for i")
    body_steps = [s for s in t.steps if s.line == body]
    assert len(body_steps) == n
    assert len([s for s in t.steps if s.line == header]) == n + 1   # plus the exhausted check
    assert [s.locals["total"] for s in body_steps] == [0, 1, 3, 6]
    assert [("total" in s.changed) for s in body_steps] == [False, True, True, True]  # 0 + 0 is 0
    assert t.result == 6 and t.steps[-1].is_return


def test_early_return_ends_the_trace():
    t = trace_locals(_early, 5)
    assert t.result == "positive"
    assert t.steps[-1].line == _line(_early, 'return "positive"')
    assert t.steps[-1].is_return and t.steps[-1].return_value == "positive"
    assert _line(_early, "y = -x") not in t.lines()
    t2 = trace_locals(_early, -2)
    assert t2.result == 2 and _line(_early, "y = -x") in t2.lines()


def test_in_place_changes_are_changes():
    grads = {"w": np.zeros(2)}
    a = np.ones(2)
    t = trace_locals(_inplace, grads, a)
    assert t.steps[0].changed == ("grads",)
    assert t.steps[0].locals["grads"]["w"].tolist() == [1.0, 1.0]
    assert t.arguments["grads"]["w"].tolist() == [0.0, 0.0]   # dicts of arrays: copied one level
    assert t.steps[1].changed == ("a",)
    assert t.steps[2].changed == ("b",)         # a new name for the same array


def test_a_statement_over_several_lines_is_one_step():
    t = trace_locals(_multiline, 1)
    start = _line(_multiline, "d = {")
    assert [s.line for s in t.steps] == [start, _line(_multiline, "return")]
    assert t.steps[0].end_line == start + 1
    assert t.steps[0].locals["d"] == {"a": 1, "b": 2}


def test_exception_becomes_trace_error_naming_the_line():
    with pytest.raises(TraceError) as info:
        trace_locals(_raises, 1)
    err = info.value
    assert isinstance(err.__cause__, ZeroDivisionError)
    assert "_raises" in str(err)
    assert f"tests/test_trace.py:{_line(_raises, 'z =')}" in str(err)
    assert err.trace is not None and err.trace.steps[-1].locals["y"] == 2


def test_exception_inside_the_model_names_the_model_line():
    from model.config import ModelConfig
    from model.transformer import ffn_forward, init_params
    cfg = ModelConfig(vocab_size=5, emb_dim=8, num_heads=2, ff_dim=12, num_layers=1, seq_len=4)
    params = init_params(cfg, np.random.default_rng(0))
    with pytest.raises(TraceError) as info:
        trace_locals(ffn_forward, np.zeros((3, 5)), params, "b0.")     # 5 columns, not 8
    msg = str(info.value)
    assert "model.transformer.ffn_forward" in msg
    assert "model/ops.py:" in msg and "model/transformer.py:" in msg
    assert isinstance(info.value.__cause__, ValueError)


def test_previous_trace_function_is_restored():
    calls = []

    def other(frame, event, arg):
        calls.append(event)
        return None

    original = sys.gettrace()
    try:
        sys.settrace(other)
        trace_locals(_simple, 1)
        assert sys.gettrace() is other
        with pytest.raises(TraceError):
            trace_locals(_raises, 1)
        assert sys.gettrace() is other
        trace_calls(_outer, {_inner}, 1)
        assert sys.gettrace() is other
    finally:
        sys.settrace(original)


def test_recursion_traces_only_the_outermost_frame():
    t = trace_locals(_fact, 4)
    assert t.result == 24
    assert [s.locals["n"] for s in t.steps] == [4, 4]
    assert sum(s.is_return for s in t.steps) == 1


def test_trace_calls_gives_each_call_its_own_trace():
    result, traces = trace_calls(_outer, {_inner}, 2)
    assert result == 24
    inner = traces[f"{__name__}._inner"]
    assert [t.arguments["v"] for t in inner] == [2, 6]
    assert [t.result for t in inner] == [6, 18]
    assert f"{__name__}._outer" not in traces
    # qualnames work as targets too, the entry can be a target, and limit keeps the first calls
    result, traces = trace_calls(_outer, [f"{__name__}._inner", _outer], 2, limit=1)
    assert len(traces[f"{__name__}._inner"]) == 1
    outer = traces[f"{__name__}._outer"][0]
    assert outer.steps[0].changed == ("a",) and outer.call_index < traces[f"{__name__}._inner"][0].call_index


def test_trace_calls_follows_a_generator_across_yields():
    _, traces = trace_calls(lambda: list(_gen(3)), {_gen})
    (t,) = traces[f"{__name__}._gen"]
    assert [s.locals["i"] for s in t.steps if s.line == _line(_gen, "yield")] == [0, 1, 2]


def test_shapes_mode_on_the_model():
    from model.config import ModelConfig
    from model.ops import relu_forward
    from model.transformer import ffn_forward, init_params
    cfg = ModelConfig(vocab_size=5, emb_dim=8, num_heads=2, ff_dim=12, num_layers=1, seq_len=4)
    params = init_params(cfg, np.random.default_rng(0))
    Xn = np.random.default_rng(1).standard_normal((4, 8))
    out, traces = trace_calls(ffn_forward, {ffn_forward, relu_forward}, Xn, params, "b0.",
                              snapshot="shapes")
    (ffn,) = traces["model.transformer.ffn_forward"]
    assert ffn.arguments["Xn"] == (4, 8) and isinstance(ffn.arguments["Xn"], Shape)
    assert ffn.arguments["params"]["b0.ff1_w"] == (8, 12)
    hidden = {n: v for n, v in ffn.final_locals().items() if v == (4, 12)}
    assert hidden, "ffn_forward has no local of shape (T, F)"
    assert traces["model.ops.relu_forward"][0].arguments["Z"] == (4, 12)
    assert pickle.loads(pickle.dumps(ffn.final_locals()["Xn"])) == (4, 8)


def test_in_place_update_of_a_method():
    from model.config import ModelConfig
    from model.optim import AdamW
    from model.transformer import init_params
    cfg = ModelConfig(vocab_size=3, emb_dim=2, num_heads=1, ff_dim=2, num_layers=1, seq_len=2)
    params = init_params(cfg, np.random.default_rng(0))
    grads = {k: np.ones_like(v) for k, v in params.items()}
    opt = AdamW(params, weight_decay=0.1)
    t = trace_locals(opt.step, params, grads)
    assert t.function == "model.optim.AdamW.step" == qualname_of(AdamW.step)
    updates = [s for s in t.steps if "=" in s.code and s.code.split()[0] == "w" and "-=" in s.code]
    assert updates and all("w" in s.changed and "params" in s.changed for s in updates)


def test_qualnames():
    from model.optim import AdamW, decays
    assert qualname_of(decays) == "model.optim.decays"
    assert resolve_qualname("model.optim.AdamW.step") is AdamW.step
    with pytest.raises(LookupError):
        resolve_qualname("model.optim.no_such_function")


def _leaf(v):
    return v + 1


def _caller(x):
    a = _leaf(x)
    b = _leaf(a)
    return sum(_leaf(v) for v in (a, b))       # the generator expression's frame is looked through


def test_call_tree_records_each_callers_line_and_counts_its_calls():
    result, root = call_tree(_caller, 1, package=__name__)
    assert result == _caller(1)
    assert (root.function, root.line, root.calls) == (f"{__name__}._caller", 0, 1)
    assert [(c.function, c.line, c.calls) for c in root.children] == [
        (f"{__name__}._leaf", _line(_caller, "a ="), 1), (f"{__name__}._leaf", _line(_caller, "b ="), 1),
        (f"{__name__}._leaf", _line(_caller, "return sum"), 2)]
    # from outside the package: three calls of _caller with no recorded caller, merged into one site
    _, outside = call_tree(lambda: [_caller(i) for i in range(3)], package=__name__)
    (site,) = outside.children
    assert (site.function, site.line, site.calls) == (f"{__name__}._caller", 0, 3)
    assert [c.calls for c in site.children] == [3, 3, 6]
    assert pickle.loads(pickle.dumps(outside)) == outside


def test_call_tree_names_the_line_that_raised():
    with pytest.raises(TraceError, match="_raises raised ZeroDivisionError") as e:
        call_tree(_raises, 1, package=__name__)
    assert e.value.line == _line(_raises, "z =")
