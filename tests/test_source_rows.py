"""A source page's code rows are made in Python (site_builder/render/html.py: source_rows), not by
a Jinja loop; they must be the bytes the template's loop made, escaping included."""
from jinja2 import Environment

from site_builder.render.html import source_rows

# templates/source.html's loop before the rows moved to Python
TEMPLATE_LOOP = """{% for r in lines %}
<tr id="L{{ r.n }}"{% if r.cited %} class="cited"{% endif %}><td class="ln">{{ r.n }}</td><td class="code">{{ r.html|safe }}</td>{% if r.cited %}<td class="cites">{% for c in r.cited %}<a href="{{ root }}{{ c[0] }}">{{ c[1] }}</a>{% if not loop.last %}, {% endif %}{% endfor %}</td>{% endif %}</tr>
{% endfor %}
"""


def test_source_rows_are_the_template_loops_bytes():
    html_lines = ['<span class="k">def</span> f(a, b):', '    <span class="k">return</span> a &lt; b', ""]
    cited = {2: [("block.html#attn--eq", 'Attention: "scores" <masked> & scaled'), ("p.html?a=1&b='2'", "Two")],
             3: [("x.html", "Three")]}
    env = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    for root in ("../", "../../", "../<&"):
        rows = [dict(n=i + 1, html=h, cited=cited.get(i + 1, [])) for i, h in enumerate(html_lines)]
        expected = env.from_string(TEMPLATE_LOOP).render(lines=rows, root=root)
        assert str(source_rows(html_lines, cited, root)) == expected
    assert str(source_rows([], {}, "../")) == env.from_string(TEMPLATE_LOOP).render(lines=[], root="../")
