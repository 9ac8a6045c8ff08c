"""The inline syntax of prose, and the rule that keeps typed numbers out of it.

Three things an author may write inside any Markdown field (and the page body):

- `[[pkg.module.function]]` / `[[pkg.module.function | snippet]]`: a code reference.
  The snippet ends at the first `]]` outside brackets it opened itself, so a snippet may
  hold `]` and `]]` (`grads[c["table"]] += ...`, `c["scale"]]]`): brackets in code are
  balanced, and a reference is scanned like code.
- `{{module:function.key | format}}`: a computed value, `ExampleResult.data[key]` of the
  example `module:function` in `content/examples/` (`.key.sub`, `[i]` go deeper; no key
  when `data` holds a single entry). `format` is a Python format spec (`,.0f`, `.3g`,
  `.1%`), or `words` / `Words` for a count written as a word ("four"). Inside `$...$` the
  value is plain text in the TeX; elsewhere it is marked as computed and says where from.
- `{{quote SOURCE | text}}`: a quotation of a source (a paper key of `site.yaml`, or a
  key of its `sources`), shown as a quotation with its source beside it. Numbers inside it
  are the source's, not ours: the check lets them through.

The number rule (`typed_numbers`): after taking out TeX, code spans, code references,
computed values and quotations, any digit left in prose is a typed number and fails
`check`, except what a number there cannot go stale by:

- the digits 0 and 1 standing alone (and 0.0, 1.0): the identities of arithmetic ("each
  row sums to 1", "exactly 0") and the first index of an array, which no config changes;
- ordinals (1st, 2nd, 3rd, 4th), and the markers of an ordered list ("2. ..."), which
  Markdown renumbers anyway;
- the number of a name written in capitals and a hyphen (UTF-8, SHA-256);
- a digit glued to a name (`float64`, `W1`, `LN2`, `x2y`): part of an identifier;
- a four-digit year from 1900 to 2099 ("Vaswani et al. 2017"): a citation. (So a count
  that happens to look like a year, such as 2048, passes: the price of citing in prose.)
- section, equation, algorithm, table, figure and page numbers of a cited paper, after
  their word ("Section 3.2.1", "Eq. 4", "Algorithm 2", "§5.4"): they are the paper's.
"""
import re

# A code reference: the opening and the name; the end is found by `code_refs`.
CODE_REF_START = re.compile(r"\[\[\s*([\w.]+)\s*(\|)?")
VALUE_RE = re.compile(r"\{\{\s*(\w+:\w+)((?:\.\w+|\[-?\d+\])*)\s*(?:\|\s*([^{}]*?))?\s*\}\}")
QUOTE_RE = re.compile(r"\{\{\s*quote\s+([\w-]+)\s*\|\s*(.+?)\s*\}\}", re.S)
CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1", re.S)
TEX_RE = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)
PAPER_PLACE_RE = re.compile(
    r"(?:\b(?:Sections?|sections?|Sec\.|Eqs?\.|Equations?|equations?|Algorithms?|Tables?|Figures?|Fig\.|pp?\.)|§)"
    r"\s*\d[\d.]*(?:(?:\s*(?:,|and|to|-|–)\s*)\d[\d.]*)*")
ACRONYM_RE = re.compile(r"\b[A-Z]{2,}-\d+\b")          # UTF-8, SHA-256: names
LIST_MARKER_RE = re.compile(r"^[ \t]*\d+[.)][ \t]", re.M)  # an ordered list's item: Markdown numbers it
NUMBER_RE = re.compile(r"\d*[\u00bc-\u00be\u2150-\u215e]"        # ½, 2¾: a number \d does not see
                       r"|(?<![A-Za-z_\d.])\d[\d.,]*(?:e[-+]?\d+)?(?:st|nd|rd|th)?(?![A-Za-z_\d])"
                       r"|(?<![A-Za-z_\d.])\d[\d.,]*(?=[A-Za-z_])")
ALLOWED_ALONE = {"0", "1", "0.0", "1.0"}

WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen twenty").split()


def code_refs(text):
    """[(start, end, qualname, snippet or None)] of every code reference in text. The end of a
    reference with a snippet is the first `]]` at bracket depth 0 of the snippet; a snippet
    whose brackets never balance ends at its first `]]`, as before."""
    out, pos = [], 0
    while True:
        m = CODE_REF_START.search(text, pos)
        if not m:
            return out
        if not m.group(2):                       # [[name]]
            close = re.compile(r"\s*\]\]").match(text, m.end())
            if close:
                out.append((m.start(), close.end(), m.group(1), None))
                pos = close.end()
            else:
                pos = m.end()
            continue
        depth, i, end = 0, m.end(), None
        while i < len(text):
            if text.startswith("]]", i) and depth == 0:
                end = i
                break
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            depth = max(depth, 0)
            i += 1
        if end is None:
            end = text.find("]]", m.end())
            if end < 0:
                pos = m.end()
                continue
        snippet = text[m.end():end].strip()
        out.append((m.start(), end + 2, m.group(1), snippet))
        pos = end + 2


def replace_code_refs(text, fn):
    """text with every code reference replaced by fn(qualname, snippet)."""
    parts, done = [], 0
    for start, end, qualname, snippet in code_refs(text):
        parts += [text[done:start], fn(qualname, snippet)]
        done = end
    return "".join(parts) + text[done:]


def format_value(value, spec):
    """A computed value as prose prints it. spec: a format spec, 'words' or 'Words'."""
    spec = (spec or "").strip()
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()                     # a NumPy scalar
    if spec in ("words", "Words"):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"'{spec}' needs a whole count, got {value!r}")
        text = WORDS[value] if value < len(WORDS) else f"{value:,}"
        return text[:1].upper() + text[1:] if spec == "Words" else text
    return re.sub(r"e([-+])0*(\d)", lambda m: "e" + m.group(1).replace("+", "") + m.group(2), _formatted(value, spec))


def _formatted(value, spec):
    if not spec:
        if isinstance(value, bool) or isinstance(value, str):
            return str(value)
        if isinstance(value, int):
            return f"{value:,}"
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)
    return format(value, spec)


def dig(data, path):
    """data[.key][i]... along a path like '.last.wavelength[0]'; KeyError/IndexError names the step."""
    value = data
    for name, index in re.findall(r"\.(\w+)|\[(-?\d+)\]", path):
        if name:
            if not isinstance(value, dict) or name not in value:
                known = ", ".join(sorted(value)) if isinstance(value, dict) else type(value).__name__
                raise KeyError(f"no '{name}' (it has: {known})")
            value = value[name]
        else:
            value = value[int(index)]
    return value


def strip_allowed(text):
    """Prose with everything that may hold digits taken out: TeX, code spans, code
    references, computed values, quotations and the places of a cited paper."""
    text = replace_code_refs(text, lambda q, s: " ")
    text = QUOTE_RE.sub(" ", text)
    text = VALUE_RE.sub(" ", text)
    text = CODE_SPAN_RE.sub(" ", text)
    text = TEX_RE.sub(" ", text)
    text = re.sub(r"<[^<>]*>", " ", text)        # an author's own HTML tag and its attributes
    text = re.sub(r"\]\([^()\s]*\)", "]", text)   # a Markdown link's address
    text = ACRONYM_RE.sub(" ", LIST_MARKER_RE.sub(" ", text))
    return PAPER_PLACE_RE.sub(" ", text)


def typed_numbers(text):
    """The numbers an author typed into prose that the rule above does not let through."""
    found = []
    for m in NUMBER_RE.finditer(strip_allowed(str(text))):
        token = m.group(0).rstrip(".,")
        if token in ALLOWED_ALONE or re.fullmatch(r"\d+(?:st|nd|rd|th)", token):
            continue
        if re.fullmatch(r"(?:19|20)\d\d", token):
            continue
        found.append(token)
    return found
