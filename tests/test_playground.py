"""Choices and free input (site_builder/gather/playground.py, site_builder/serve/play.py): what the
content may declare, what the /__play endpoint refuses, and that it holds up under load."""
import http.client
import json
import os
import signal
import threading
import time

import pytest

from site_builder.gather.content import Located
from site_builder.serve.play import Playground, refusal
from site_builder.gather.playground import (InvalidInput, call_ref, check_declaration, checked_arguments, combinations,
                                     split_ref, validate)
from site_builder.run.text_rules import text_rules
from tests.conftest import ROOT
from tests.timing import within

RULES = text_rules(ROOT)       # the documented config's fields, the hooks' vocabularies

FLOAT = {"type": "float", "min": 0, "max": 2}
TEXT = {"type": "text", "max_length": 8, "vocabulary": "corpus"}
NUMBERS = {"type": "numbers", "length": 3, "min": -1, "max": 1}
EXAMPLE = {"run": "m:f", "choices": {"row": [1, 0, 2]}, "playable": {"eps": FLOAT, "prompt": TEXT}}


def refused(spec, value, vocabulary=None, rules=None):
    with pytest.raises(InvalidInput) as e:
        validate(spec, value, vocabulary, rules)
    return str(e.value)


def test_a_ref_names_its_arguments_and_reads_back_as_literals():
    ref = call_ref("attention:chosen_heatmap", {"prompt": "To be, or", "layer": 1, "head": 0})
    assert ref == "attention:chosen_heatmap(head=0, layer=1, prompt='To be, or')"
    assert split_ref(ref) == ("attention:chosen_heatmap", {"head": 0, "layer": 1, "prompt": "To be, or"})
    assert split_ref("block:f") == ("block:f", {})
    with pytest.raises(ValueError):                 # a value is a literal, never code
        split_ref("m:f(x=__import__('os').getcwd())")
    assert combinations({"row": [1, 0], "layer": [0, 1]})[0] == {"layer": 0, "row": 1}, "the first listed is the default"
    assert len(combinations({"row": [1, 0], "layer": [0, 1]})) == 4


def test_bad_types_are_refused_with_what_was_expected():
    assert "finite number" in refused(FLOAT, [1])
    assert "finite number" in refused(FLOAT, True)
    assert "must be a number" in refused(FLOAT, "abc")
    assert "finite number" in refused(FLOAT, "nan")
    assert "must be text" in refused(TEXT, 5)
    assert "whole number" in refused({"type": "int", "min": 0, "max": 3}, 1.5)
    assert "list of 3 numbers" in refused(NUMBERS, {"a": 1})
    assert validate(FLOAT, "0.5") == 0.5 and validate(NUMBERS, "0.5, -1 1") == [0.5, -1.0, 1.0]


def test_out_of_range_values_are_refused():
    assert refused(FLOAT, 2.5) == "must be between 0 and 2, got 2.5"
    # the value as typed, never rounded to a number inside the bounds by :g
    assert refused(FLOAT, "2.0000001") == "must be between 0 and 2, got 2.0000001"
    assert refused(FLOAT, " 1e3 ") == "must be between 0 and 2, got 1e3"
    assert refused(FLOAT, 2.0000001) == "must be between 0 and 2, got 2.0000001"
    assert refused(NUMBERS, "0 1.00000001 0") == "must be between -1 and 1, got 1.00000001"
    assert "between -1 and 1" in refused(NUMBERS, [0, 0, 3])
    assert "must be 3 numbers, got 2" in refused(NUMBERS, [0, 0])


def test_oversized_text_is_refused():
    assert refused(TEXT, "x" * 9) == "is 9 characters long; at most 8 are allowed"
    assert "must not be empty" in refused(TEXT, "")
    assert refused(FLOAT, "1" * 5000) == \
        "must be a number of at most 40 characters (an exponent shortens one: 1.5e-30), got 5000 characters"


def test_a_typed_number_is_read_as_the_pages_copy_reads_it():
    """Spaces around a long number do not count against its limit; a field of spaces says so;
    what Python's float() takes beyond the page's copy (underscores, other scripts' digits) is
    refused, so both paths read one text one way."""
    assert validate(FLOAT, "  " + "0." + "0" * 37 + "1  ") == 1e-38
    assert refused(FLOAT, "   ") == "must be a number; the field holds only spaces"
    assert refused(FLOAT, "1_0") == "must be a number, got '1_0'"
    assert refused(FLOAT, "\u0661") == "must be a number, got '\u0661'"
    assert refused({"type": "int", "min": 0, "max": 30}, "1e1") == "must be a whole number, got '1e1'"
    assert refused(FLOAT, "-Infinity") == "must be a finite number, got '-Infinity'"
    assert refused(FLOAT, "1e999") == "must be a finite number, got '1e999'"
    assert repr(validate(FLOAT, "-0")) == "-0.0", "kept as typed: the page says eps = -0 on both paths"


def test_a_text_the_model_reads_takes_its_limit_from_the_config_and_the_page_says_it(built_site):
    """`max_length: seq_len`: the limit is ModelConfig's seq_len, not a number typed beside it;
    the attention page's prompt field declares it so, and its hint and caption say the number."""
    import re
    from model.config import ModelConfig
    from site_builder.gather.content import load_content
    from site_builder.gather.playground import hint
    seq_len = ModelConfig(vocab_size=2).seq_len
    context = {"type": "text", "max_length": "seq_len", "vocabulary": "corpus"}
    assert validate(context, "x" * seq_len, rules=RULES) == "x" * seq_len
    assert refused(context, "x" * (seq_len + 1), rules=RULES) == \
        f"is {seq_len + 1} characters long; at most {seq_len} are allowed"
    assert hint(context, RULES) == f"up to seq_len = {seq_len} characters of the corpus's alphabet, all the model reads"
    assert hint(context) == f"up to seq_len = None characters", "no rules: the words of no vocabulary"
    problems = []
    attention = load_content(ROOT, problems).pages["attention"]
    specs = [e["playable"]["prompt"] for c in attention.meta["sections"] for e in c.get("examples") or []
             if "prompt" in (e.get("playable") or {})]
    assert specs and all(s["max_length"] == "seq_len" for s in specs)
    html = (built_site / "attention.html").read_text()
    assert f"up to seq_len = {seq_len} characters" in html
    assert f"at most seq_len = {seq_len}:" in re.sub(r"<[^>]+>", "", html)
    errors, typo = [], Located({"run": "m:f", "playable": {"p": {"type": "text", "max_length": "seq_lenn"}}})
    typo.key_lines = {}
    check_declaration(typo, "content/pages/x.md", errors)
    assert errors == [], "the content's pass checks the form of a name, not what it names"
    check_declaration(typo, "content/pages/x.md", errors, RULES)
    assert len(errors) == 1 and "'max_length: seq_lenn' names no whole-number field of ModelConfig" in errors[0].message
    assert "seq_len" in errors[0].message.partition("fields: ")[2]


def test_characters_outside_the_vocabulary_are_refused():
    message = refused(TEXT, "héllo", vocabulary="abcdehlo ", rules=RULES)
    assert "'é'" in message and "outside its vocabulary" in message and "the 9 characters of the corpus" in message
    assert validate(TEXT, "hello", vocabulary="abcdehlo ") == "hello"
    assert "its 9 characters" in refused(TEXT, "héllo", vocabulary="abcdehlo "), "no rules: plain words"


def test_a_vocabulary_is_one_the_hooks_name():
    """`vocabulary: NAME` names an entry of the hook text_vocabularies; a project without the
    hook has none, and the check says which setting is missing."""
    from site_builder.gather.playground import TextRules, spec_problem
    assert spec_problem(TEXT, RULES) is None and set(RULES.vocabularies) == {"corpus"}
    assert "not a vocabulary of the project's hook text_vocabularies (it names: corpus)" in \
        spec_problem({**TEXT, "vocabulary": "words"}, RULES)
    assert "(the project has none)" in spec_problem(TEXT, TextRules())
    assert spec_problem({"type": "text", "max_length": 8}, TextRules()) is None, "no vocabulary: any characters"


def test_only_declared_parameters_and_declared_choices_pass():
    assert checked_arguments(EXAMPLE, {"eps": "0.5"}) == {"eps": 0.5, "row": 1}
    from site_builder.gather.playground import TextRules
    letters = TextRules(vocabularies={"corpus": dict(characters=lambda: "abc", known="a, b and c")})
    assert checked_arguments(EXAMPLE, {"prompt": "cab"}, letters)["prompt"] == "cab"
    with pytest.raises(InvalidInput, match=r"prompt has characters outside its vocabulary: 'd' \(it takes a, b and c\)"):
        checked_arguments(EXAMPLE, {"prompt": "dab"}, letters)
    assert checked_arguments(EXAMPLE, {"row": 2}) == {"row": 2}
    with pytest.raises(InvalidInput, match="'code' is not a parameter of this example"):
        checked_arguments(EXAMPLE, {"code": "print(1)"})
    with pytest.raises(InvalidInput, match="row must be one of 1, 0, 2"):
        checked_arguments(EXAMPLE, {"row": 7})          # a choice that is not playable takes only its values
    with pytest.raises(InvalidInput, match="'args' must be a mapping"):
        checked_arguments(EXAMPLE, ["eps"])


def test_a_function_that_is_not_playable_is_refused():
    ground = Playground(ROOT)
    assert ground.handle({"page": "layernorm", "example": "layernorm-forward--ex-1", "args": {}}) == dict(
        status=400, error="example layernorm-forward--ex-1 (layernorm:forward_worked) is not playable: "
                          "content/pages/layernorm.md declares no 'playable' parameters for it")
    assert "no page" in ground.handle({"page": "nope", "example": "x", "args": {}})["error"]
    assert "page's name" in ground.handle({"page": "../etc", "example": "x", "args": {}})["error"]
    assert "no example" in ground.handle({"page": "layernorm", "example": "layernorm-forward--ex-99", "args": {}})["error"]
    assert "{page, example, args}" in ground.handle({"page": "layernorm", "run": "os:system"})["error"]


def test_cross_origin_and_foreign_host_requests_are_refused():
    ok = {"Host": "127.0.0.1:8000", "Origin": "http://127.0.0.1:8000", "Content-Type": "application/json"}
    address = ("127.0.0.1", 8000)
    assert refusal(ok, address, True) is None
    assert refusal({**ok, "Origin": "http://evil.example"}, address, True)[0] == 403
    assert refusal({k: v for k, v in ok.items() if k != "Origin"}, address, True)[0] == 403
    assert "not this server" in refusal({**ok, "Host": "evil.example:8000", "Origin": "http://evil.example:8000"},
                                        address, True)[1]
    assert refusal({**ok, "Content-Type": "text/plain"}, address, True)[0] == 415
    assert "loopback" in refusal(ok, ("0.0.0.0", 8000), False)[1]


def test_declarations_are_checked_at_their_line():
    example = Located({"run": "m:f", "choices": {"eps": [0.5, 5]}, "playable": {"eps": FLOAT, "x": {"type": "code"}}})
    example.key_lines = {}
    problems = []
    check_declaration(example, "content/pages/p.md", problems)
    messages = [p.message for p in problems]
    assert any("playable 'x': 'type' must be one of" in m for m in messages)
    assert any("choice 5 of 'eps' is outside its playable bounds" in m for m in messages)



def declaration_messages(example):
    example = Located(example)
    example.key_lines = {}
    problems = []
    check_declaration(example, "content/pages/p.md", problems)
    return [p.message for p in problems]


@pytest.mark.parametrize("bounds, says", [
    ({"min": 0, "max": float("inf")}, "'max' must be a finite number (the field says the range a reader may type), got inf"),
    ({"min": float("-inf"), "max": 1}, "'min' must be a finite number (the field says the range a reader may type), got -inf"),
    ({"max": 1}, "'min' must be a finite number (the field says the range a reader may type), got nothing"),
    ({"min": "a", "max": 1}, "'min' must be a finite number (the field says the range a reader may type), got str 'a'"),
    ({"min": 5, "max": 1}, "needs 'min' <= 'max', got min 5 > max 1"),
])
def test_playable_bounds_say_what_is_wrong_with_them(bounds, says):
    assert declaration_messages({"run": "m:f", "playable": {"eps": {"type": "float", **bounds}}}) == [
        f"playable 'eps': {says}"]


def test_a_malformed_choices_list_is_one_problem_not_one_per_value():
    messages = declaration_messages({"run": "m:f", "choices": {"eps": [[1, 2], {"a": 1}]}, "playable": {"eps": FLOAT}})
    assert messages == ["choices of 'eps' must be a non-empty list of numbers or texts, got a list"]


def test_choices_are_capped_at_a_number_of_combinations_a_build_runs():
    messages = declaration_messages({"run": "m:f", "choices": {"a": list(range(100)), "b": list(range(3))}})
    assert messages == ["'choices' make 300 combinations, more than the 256 one build runs (each is an example "
                        "run and a file under play/)"]
    assert declaration_messages({"run": "m:f", "choices": {"a": list(range(128)), "b": [0, 1]}}) == []

# ------------------------------------------------------------------ the endpoint under load

def post(port, body, origin=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/__play", json.dumps(body), {"Content-Type": "application/json",
                                                       "Origin": origin or f"http://127.0.0.1:{port}"})
    r = conn.getresponse()
    answer = json.loads(r.read())
    conn.close()
    return r.status, answer


def children(pid):
    """The processes whose parent is pid (Linux /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    if int(f.read().rpartition(")")[2].split()[1]) == pid:
                        out.append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    return out


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to list processes")
def test_500_requests_from_10_clients(play_server):
    """Every answer is the example's own body for that eps; no error; within the time bound;
    and afterwards no worker is left under the play process."""
    port = play_server.port
    assert post(port, {"page": "layernorm", "example": "layernorm-forward--ex-4", "args": {"eps": 0.5}})[0] == 200
    clients, each, failures = 10, 50, []

    def client(c):
        for i in range(each):
            eps = round(0.001 + 0.01 * (c * each + i), 3)
            status, answer = post(port, {"page": "layernorm", "example": "layernorm-forward--ex-4", "args": {"eps": eps}})
            if status != 200 or f"<caption>eps = {eps:g}</caption>" not in answer.get("html", ""):
                failures.append((eps, status, answer.get("error")))
    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    seconds = time.monotonic() - start
    assert not failures, failures[:3]
    assert seconds < within(90), f"{clients * each} requests took {seconds:.1f} s"
    pids = play_server.play.pids()
    assert pids and all(children(pid) == [] for pid in pids), "a worker was left behind"
    status, answer = post(port, {"page": "layernorm", "example": "layernorm-forward--ex-4", "args": {"eps": 0.5}},
                          origin="http://evil.example")
    assert status == 403 and "another origin" in answer["error"]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to list processes")
def test_a_request_past_its_time_limit_is_stopped_and_leaves_no_worker(tmp_path, monkeypatch):
    from site_builder.serve import play as play_server
    (tmp_path / "content" / "examples").mkdir(parents=True)
    (tmp_path / "content" / "examples" / "slow.py").write_text(
        "import time\n\n\ndef forever(x=0):\n    while True:\n        time.sleep(0.01)\n")
    monkeypatch.setattr(play_server, "PLAY_TIMEOUT", 0.5)
    start = time.monotonic()
    reply = Playground(tmp_path).run("p--ex-1", "slow:forever(x=1)")
    assert reply["status"] == 504 and "slow:forever(x=1) ran past 0.5 s" in reply["error"]
    assert "content/examples/slow.py:6" in reply["error"], "it names the line it was executing"
    assert time.monotonic() - start < within(5)
    with open(f"/proc/{os.getpid()}/cmdline", "rb") as f:
        me = f.read()
    forked = []
    for pid in children(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                forked += [pid] if f.read() == me else []
        except OSError:
            pass
    assert forked == [], "the stopped worker was reaped"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to see a process stopped")
def test_a_play_process_stopped_from_outside_is_replaced_and_the_request_answered(built_site):
    from site_builder.base import worker
    from site_builder.serve.play import PlayClient
    client = PlayClient(ROOT, ROOT / ".build_cache")
    request = {"page": "layernorm", "example": "layernorm-forward--ex-4", "args": {"eps": 0.25}}
    try:
        assert "<caption>eps = 0.25</caption>" in client.ask(request)["html"]
        stopped = client.proc.pid
        os.kill(stopped, signal.SIGSTOP)                 # as a tester's `kill -STOP`
        start = time.monotonic()
        answer = client.ask(request)
        took = time.monotonic() - start
        assert "<caption>eps = 0.25</caption>" in answer.get("html", ""), answer
        assert took < within(10 * worker.STOPPED_SECONDS + 15), took     # a fresh process; not PLAY_TIMEOUT + 20
        assert client.proc.pid != stopped
        with pytest.raises(ProcessLookupError):
            os.kill(stopped, 0)
    finally:
        client.close()


def test_typed_input_recomputes_on_all_four_pages(play_server):
    """One request per page, through the endpoint: each answer is the example's body for the
    typed value, rendered by the template (the heatmap's title, the table's caption, the row)."""
    cases = [("attention", "attention-lm--ex-2", {"prompt": "the cat sat", "head": 3}, ["head 3", "the cat sat"]),
             ("generation", "generation-sample--ex-2", {"prompt": "KING", "temperature": "0.7"},
              ["After &#39;KING&#39;", "T = 0.7"]),
             ("layernorm", "layernorm-forward--ex-4", {"eps": "2.5"}, ["<caption>eps = 2.5</caption>"]),
             ("block", "block-forward--ex-1", {"values": "1 -2 0.5 3", "row": 2, "layer": 1},
              ["data-row=\"2\"", "in block 1", "replaced by [1.0000, -2.0000, 0.5000, 3.0000] (typed by the reader)"])]
    for page, example, args, expected in cases:
        status, answer = post(play_server.port, {"page": page, "example": example, "args": args})
        assert status == 200, (page, answer)
        for text in expected:
            assert text in answer["html"], (page, text)


def test_declared_names_an_example_function_does_not_take_are_found(tmp_path):
    """choices or playable naming a parameter the function lacks is one check line at the page
    (a hostile test saw it pass check and fail only under serve), found without importing."""
    from site_builder.gather.playground import parameters_missing
    (tmp_path / "content" / "examples").mkdir(parents=True)
    (tmp_path / "content" / "examples" / "m.py").write_text(
        "def f(row=0, *, eps=1e-5):\n    pass\n\ndef g(**kw):\n    pass\n")
    assert parameters_missing(tmp_path, "m:f", ["row", "eps", "epsilon"]) == ["epsilon"]
    assert parameters_missing(tmp_path, "m:g", ["anything"]) == []          # **kwargs takes any
    assert parameters_missing(tmp_path, "m:nosuch", ["x"]) == []            # reported where it runs


def test_an_integer_past_the_largest_float_is_refused_in_one_line():
    for spec in (FLOAT, {"type": "int", "min": 0, "max": 3}, NUMBERS):
        for value in (10 ** 400, [10 ** 400] * 3):
            message = refused(spec, value)
            assert "\n" not in message and len(message) < 100, message


class FakeHandler:
    """What answer() reads of serve's SiteHandler, with a body and a client that must not be asked."""

    def __init__(self, body: bytes):
        import io
        from types import SimpleNamespace
        self.headers = {"Host": "127.0.0.1:8000", "Origin": "http://127.0.0.1:8000",
                        "Content-Type": "application/json", "Content-Length": str(len(body))}
        self.rfile = io.BytesIO(body)
        self.server = SimpleNamespace(server_address=("127.0.0.1", 8000), play=self)
        self.sent = []

    def ask(self, request):
        raise AssertionError(f"the play process was asked {str(request)[:80]}")

    def _send(self, status, body, *args, **kwargs):
        self.sent.append((status, json.loads(body)))


@pytest.mark.parametrize("body, needle", [
    (b'{"page": "layernorm", "example": "layernorm-forward--ex-4", "args": {"eps": 1' + b"0" * 400 + b"}}",
     "has 401 digits"),
    (b"[" * 4000 + b"]" * 4000, "nested too deeply"),
    (b"[" * 4000, "nested too deeply"),
    (b'{"args": {"eps": ' + b"7" * 4300 + b"}}", "has 4300 digits"),
    (b"{not json", "not JSON"),
], ids=["401-digit eps", "4000 nested", "4000 unclosed", "4300-digit number", "not json"])
def test_a_body_the_endpoint_cannot_use_is_a_400_with_one_line(body, needle):
    from site_builder.serve.play import answer
    handler = FakeHandler(body)
    answer(handler)
    [(status, reply)] = handler.sent
    assert status == 400 and needle in reply["error"] and "\n" not in reply["error"], reply


def test_mapping_or_list_choices_are_described_as_yaml_not_as_loader_classes():
    from site_builder.gather.content import parse_yaml
    example, err = parse_yaml('run: "m:f"\nchoices: {eps: [{a: 1}, [1, 2]]}\nplayable: {eps: {type: float, min: 0, max: 2}}\n',
                              "content/pages/p.md")
    assert err is None
    problems = []
    check_declaration(example, "content/pages/p.md", problems)
    text = " ".join(p.message for p in problems)
    assert "Located" not in text and "got a mapping" in text, text


@pytest.mark.parametrize("declaration, says", [
    ("choices: [1, 2]", "'choices' must map parameter names to lists of values"),
    ("playable: yes", "'playable' must map parameter names to their type and bounds"),
])
def test_a_declaration_that_is_no_mapping_is_one_line_without_a_quoting_hint(declaration, says):
    """The content's type check leaves choices and playable to check_declaration: one line, not
    a second one proposing to quote text, which nothing here is."""
    from site_builder.gather.content import parse_yaml, validate
    example, err = parse_yaml(f'title: T\nrun: "m:f"\n{declaration}\n', "content/pages/p.md")
    assert err is None
    problems = []
    validate(example, "example", "content/pages/p.md", 1, problems)
    assert [p.message for p in problems] == [says] and "quote" not in problems[0].fix
