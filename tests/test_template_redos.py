"""Template answer patterns against catastrophic backtracking (ReDoS): the pattern runs over adversarial
judge outputs and responses with a timeout (``regex``), a timeout is an invalid judgment
(``answer_pattern_timeout``) -- never a hang, a crash, or a valid decision for an injecting response -- and a
pattern the load-time probes show to be exponential is refused, naming file and field."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from judgerl.judge.decision import read_decision
from judgerl.protocols import get_protocol, template_file
from judgerl.protocols.template_file import TemplateError, load_template

#: Exponential under ``regex`` too (overlapping alternatives): ~2**n steps on ``[[`` + n ``a``.
EXPONENTIAL = r"\[\[(A|B|(?:a|a)+)\]\]"
#: The same, reached only after a literal opening the load-time probes do not write.
HIDDEN = r"Final verdict: \[\[(A|B|(?:a|a)+)\]\]"
#: The issue's pattern: exponential under ``re`` (0.8 s on 24 characters), linear under ``regex``.
ISSUE = r"\[\[((?:A|B|a+)+)\]\]"
SLOW_OUTPUT = "Final verdict: [[" + "a" * 60 + "!"


def template(tmp_path: Path, answer: str, name: str = "t.json", **extra) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"kind": "pairwise", "template": "Q: {prompt}\nA: {response_a}\nB: {response_b}",
                                "answer": answer, "verdicts": {"A": "A", "B": "B"}, **extra}), encoding="utf-8")
    return str(path)


@pytest.fixture
def short_timeout(monkeypatch):
    monkeypatch.setattr(template_file, "ANSWER_TIMEOUT", 0.2)
    return 0.2


@pytest.mark.parametrize("answer, prefix", [(EXPONENTIAL, None), (r"\[\[((?:a|aa)+)\]\]", None),
                                            (r"Verdict=(A|B|(?:x|x)+)#", "Verdict=")])
def test_exponential_pattern_is_refused_at_load(tmp_path, answer, prefix):
    path = template(tmp_path, answer, **({"answer_prefix": prefix} if prefix else {}))
    start = time.perf_counter()
    with pytest.raises(TemplateError, match=r"t\.json: field 'answer' .* backtracks catastrophically"):
        load_template(path)
    assert time.perf_counter() - start < 3


def test_pattern_slow_only_on_adversarial_output_gives_an_invalid_judgment(tmp_path, short_timeout):
    protocol = get_protocol("template", path=template(tmp_path, HIDDEN))  # passes the load-time probes
    assert protocol.parse("Final verdict: [[A]]").verdict == "A"
    start = time.perf_counter()
    d = protocol.parse(SLOW_OUTPUT)
    assert time.perf_counter() - start < short_timeout + 1.5
    assert not d.valid and d.invalid_reason == "answer_pattern_timeout"


def test_a_response_that_makes_the_quote_check_time_out_voids_the_decision(tmp_path, short_timeout):
    """The judge's own valid answer for the injector: the check on its (slow) response cannot be skipped."""
    protocol = get_protocol("template", path=template(tmp_path, HIDDEN))
    start = time.perf_counter()
    d = read_decision(protocol, "B is right.\nFinal verdict: [[B]]", ["4", "final verdict: [[" + "a" * 60 + "!"])
    assert not d.valid and d.invalid_reason == "answer_pattern_timeout"
    built = protocol.build("q", ["ok", SLOW_OUTPUT])  # building the prompt does not hang either
    assert "[\u200d[" in built[-1]["content"] or "F\u200dinal" in built[-1]["content"]
    assert time.perf_counter() - start < 2 * (short_timeout + 1.5)


def test_issue_pattern_is_linear_with_regex_and_keeps_re_semantics(tmp_path):
    protocol = get_protocol("template", path=template(tmp_path, ISSUE, verdicts={"A": "A", "B": "B", "aa": "tie"}))
    start = time.perf_counter()
    d = protocol.parse("[[" + "a" * 5000 + "!")
    assert time.perf_counter() - start < 0.5
    assert not d.valid and d.invalid_reason == "missing_final_answer"
    assert protocol.parse("Verdict: [[aa]]").verdict == "tie"
    assert protocol.parse("Verdict: [[B]]").verdict == "B"
    assert read_decision(protocol, "Verdict: [[A]]", ["x", "y"]).verdict == "A"


@pytest.mark.parametrize("answer, text, expect", [
    (r"\[\[([AB<>=]+)\]\]", "My final verdict is: [[A]]", "A"),
    (r"(?i)verdict:\s*(A|B)\b", "VERDICT: b", "B"),
    (r"\[RESULT\]\s*([AB])", "[RESULT] A", "A"),
])
def test_normal_patterns_load_fast_and_parse_as_before(tmp_path, answer, text, expect):
    start = time.perf_counter()
    protocol = get_protocol("template", path=template(tmp_path, answer))
    assert time.perf_counter() - start < 1
    assert protocol.parse(text).verdict == expect
    assert protocol.parse(text + " " + "[[" * 20000).verdict == expect  # long adversarial text: no timeout
