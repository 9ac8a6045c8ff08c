"""site_builder.render.symbols: a concept's symbols are marked inside its equations (for the linked
highlighting of static/js/symbols.js) without changing how any equation looks or what is trusted."""
import re

import pytest

from site_builder.render.mathrender import render_tex, TexError
from site_builder.render.symbols import wrap_symbols, code_links, split_top_level

BLOCK = [(0, "X"), (1, r"\operatorname{LN}_1, \operatorname{LN}_2"), (2, "X_n"), (3, r"\mathrm{Att}"),
         (4, "X_1"), (5, "X_{n2}"), (6, r"\mathrm{Ff}"), (7, "Y")]


def marked(tex, symbols):
    """[(n, source)] of the wrapped atoms, in order."""
    return re.findall(r"\\htmlClass\{sym-(\d+)\}\{((?:[^{}]|\{[^{}]*\}|\{(?:[^{}]|\{[^{}]*\})*\})*)\}",
                      wrap_symbols(tex, symbols))


def test_longest_symbol_first_and_whole_atoms_only():
    got = marked(r"X_1 = X + \operatorname{Attention}(\operatorname{LN}_1(X))", BLOCK)
    assert got == [("4", "X_1"), ("0", "X"), ("1", r"\operatorname{LN}_1"), ("0", "X")]
    assert marked(r"X_{n2} = \operatorname{LN}_2(X_1)", BLOCK) == [("5", "X_{n2}"), ("1", r"\operatorname{LN}_2"), ("4", "X_1")]


@pytest.mark.parametrize("tex, symbols, expected", [
    (r"dX = dY", [(0, "X"), (1, "Y")], []),                                   # X inside dX
    (r"X_2 = X", [(0, "X")], [("0", "X")]),                                    # X_2 is another symbol
    (r"\mathrm{Ff} = F", [(0, "F")], [("0", "F")]),                            # F inside \mathrm{Ff}
    (r"\text{branch} + b", [(0, "b")], [("0", "b")]),                          # text is never searched
    (r"\frac{\partial Y}{\partial X_1}", [(0, "Y"), (1, "X_1")], [("0", "Y"), ("1", "X_1")]),   # math args are
    (r"Z = X_n W_1 + \mathbf{1} b_1^\top", [(1, "W_1, b_1")], [("1", "W_1"), ("1", r"b_1^\top")]),  # ^ joins
    (r"\sum_j d\hat{x}_j", [(0, "d"), (1, r"\hat{x}")], []),                   # d of d\hat{x}; x-hat_j
])
def test_boundaries(tex, symbols, expected):
    assert marked(tex, symbols) == expected


def test_wrapped_equations_render_and_keep_their_spacing():
    tex = r"X_1 = X + \mathrm{Att}"
    plain = render_tex(tex, True)
    wrapped = render_tex(wrap_symbols(tex, BLOCK), True, symbol_classes=True)
    assert '<msub class="sym-4">' in wrapped and '<mrow class="sym-3">' in wrapped
    # MathML spaces operators itself: with the classes taken out, the same operators remain
    operators = lambda html: re.findall(r"<mo>([^<]*)</mo>", re.sub(r' class="sym-[0-9]+"', "", html))
    assert operators(plain) == operators(wrapped) == ["=", "+"]
    binop = render_tex(wrap_symbols(r"dA \odot dZ", [(0, r"\odot")]), True, symbol_classes=True)
    assert '<mo class="sym-0" lspace="0.22em" rspace="0.22em">⊙</mo>' in binop    # one operator, spaced
    assert "<mo><mo" not in binop and 'lspace="0em"' not in binop


def test_only_symbol_classes_are_trusted():
    with pytest.raises(TexError):
        render_tex(r"\htmlClass{sym-1}{x}", True)                    # authors' TeX: no trust at all
    with pytest.raises(TexError):
        render_tex(r"\htmlClass{evil}{x}", True, symbol_classes=True)
    with pytest.raises(TexError):
        render_tex(r"\href{https://example.com}{x}", True, symbol_classes=True)


def test_split_and_code_links():
    assert split_top_level(r"W_1, b_{1,2}") == ["W_1", "b_{1,2}"]
    assert code_links("ff1_w, ff1_b") == dict(names=["ff1_w", "ff1_b"], exprs=[])
    assert code_links("X1 + ff") == dict(names=[], exprs=["X1 + ff"])
    assert code_links("cfg.ff_dim") == dict(names=["ff_dim"], exprs=[])
    assert code_links('c["positive"]') == dict(names=[], exprs=['c["positive"]'])
    assert code_links("not named in the code") == dict(names=[], exprs=[])
    assert code_links("*") == dict(names=[], exprs=[])


def test_the_block_page_marks_its_symbols(site_page):
    html = site_page("block")
    section = html[html.index('id="block-forward"'):html.index('id="block-backward"')]
    assert 'data-sym="4" data-names="X1"' in section
    assert section.count('class="sym-4"') >= 4          # X_1 in four equations


# -- the code column is checked against the code ----------------------------------------------

def words(source):
    """CodeWords of the one function in `source`."""
    import ast
    from site_builder.gather.source_syntax import code_words_of
    return code_words_of(ast.parse(source).body[0])


FFN_BACKWARD = '''
def ffn_backward(dOut, c, params, p, grads):
    dA, dW2, db2 = linear_backward(dOut, c["A"], params[p + "ff2_w"])
    grads[p + "ff2_b"] += db2
    dZ = relu_backward(dA, c["positive"])
    return dZ * 2
'''
LINEAR_BACKWARD = '''
def linear_backward(dY, X, W):
    return dY @ W.T, X.T @ dY, column_sums(dY)
'''
SOFTMAX = '''
def softmax_forward(S):
    E = S - row_max(S)
    return E
'''
ROW_MAX = '''
def row_max(X):
    return X.max(axis=-1, keepdims=True)
'''


@pytest.mark.parametrize("code", [
    'c["positive"]', "ff2_w, ff2_b", 'params["b0.ff2_w"], grads["b0.ff2_b"]', "dA[t], dZ[i, j]", "*",
    "linear_backward, relu_backward", "return", "len(dA)", "cfg.ff_dim", "not named in the code",
    'sum(x * 2 for x in dA)', "dA, return of relu_backward", 'params[f"b{l}.ff2_w"]',
])
def test_code_the_function_spells_is_found(code):
    from site_builder.render.symbols import code_misses
    scopes = [words(FFN_BACKWARD), words(LINEAR_BACKWARD)]
    assert code_misses(code, scopes, class_attrs={"ff_dim"}) == []


@pytest.mark.parametrize("code, scopes, missing", [
    (".sum(axis=0)", [FFN_BACKWARD, LINEAR_BACKWARD], [(".sum(axis=0)", "sum")]),     # it calls column_sums
    ("S.max(axis=-1, keepdims=True)", [SOFTMAX, ROW_MAX], [("S.max(axis=-1, keepdims=True)", "max")]),
    ("np.eye(d)", [FFN_BACKWARD], [("np.eye(d)", "np"), ("np.eye(d)", "eye"), ("np.eye(d)", "d")]),
    ('c["negative"]', [FFN_BACKWARD], [('c["negative"]', "'negative'")]),
    ("dA @ dZ", [FFN_BACKWARD], [("dA @ dZ", "@")]),
    ("@", [FFN_BACKWARD], [("@", "@")]),
    ("dW2, cfg.ff_dimm", [FFN_BACKWARD], [("cfg.ff_dimm", "cfg"), ("cfg.ff_dimm", "ff_dimm")]),
])
def test_code_the_function_does_not_spell_is_a_miss(code, scopes, missing):
    from site_builder.render.symbols import code_misses
    got = code_misses(code, [words(s) for s in scopes], class_attrs={"ff_dim"})
    assert sorted(got) == sorted(missing)


def test_a_name_inside_another_function_is_checked_as_that_name():
    from site_builder.render.symbols import code_misses
    assert code_misses("dZ (inside ffn_backward)", [words(FFN_BACKWARD)]) == []
    assert code_misses("dQ (inside ffn_backward)", [words(FFN_BACKWARD)]) == [("dQ (inside ffn_backward)", "dQ")]
