"""The text measures of the response namespace (judgerl.tools.namespace_text) and the IF teacher's programs in
both forms (measures named in the prompt, or defined by the program): they agree with each other always and with
the IFEval gold on real builder pairs; the protocol option ``measures`` and the sandbox namespace."""

from __future__ import annotations

import contextlib
import io

import pytest

from judgerl.protocols import get_protocol
from judgerl.protocols.common import MEASURES_INSTRUCTION
from judgerl.tools import namespace_text as nt
from judgerl.train.teach.ifcheck import CHECKS, check_program, helper_source, labels_of


def _counts(code: str, response: str, measures: bool) -> tuple[int, int]:
    """Run a teacher program for one response in-process (the programs are ours, stdlib only)."""
    g: dict = {"RESPONSE": response}
    if measures:
        g.update({n: getattr(nt, n) for n in nt.MEASURES})
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(code, g)  # noqa: S102 - the teacher's own program
    a, _, b, *score = buf.getvalue().split()
    if score:  # one response (pointwise): the line ends with the gold rule's score
        from judgerl.gold.ifeval import score_from_counts

        assert score[0] == "score" and int(score[1]) == score_from_counts(int(a), int(b)), buf.getvalue()
    return int(a), int(b)


@pytest.mark.parametrize("fn, text, want", [
    (nt.words, "Hello, big world!", 3), (nt.words, None, 0), (nt.sentences, "One. Two! Three?", 3),
    (nt.paragraphs, "a *** b *** c", 3), (nt.paragraphs, "a *** *** c", 0), (nt.highlights, "*x* and **y** and **", 2),
    (nt.bullets, "* a\n* b\n- c\n**bold**", 3), (nt.placeholders, "[name] at [address]", 2),
    (nt.capital_words, "THE big DOG", 2), (nt.is_json, '```json\n{"a": 1}\n```', True), (nt.is_json, "{a}", False),
    (nt.has_title, "<<Rivers>>\ntext", True), (nt.has_title, "<< >>", False), (nt.english, "the cat and the dog", True),
    (nt.english, "der Hund und die Katze", False), (nt.quoted, '"all of it"', True), (nt.quoted, '"', False),
    (nt.two_responses, "one ****** two", True), (nt.two_responses, "same ****** same", False),
])
def test_each_measure(fn, text, want):
    assert fn(text) == want


def test_measures_with_arguments_and_hostile_text():
    assert nt.sections("SECTION 1 a SECTION 2 b", "SECTION") == 2
    assert nt.occurrences("Cat cat CAT", "cat") == 3 and nt.occurrences("a.b", ".") == 1  # literal, not a regex
    assert nt.has_word("the cat sat", "cat") and not nt.has_word("concatenate", "cat")
    assert nt.ends_with('"Any questions?"', "any questions?") and not nt.ends_with("", "x")
    assert nt.has_postscript("Hi.\nP.S. bye", "P.S.") and nt.has_postscript("x\np.p.s hi", "P.P.S")
    assert nt.has_postscript("x\nNote: (y)", "Note: (")  # a marker with regex characters is literal
    assert nt.nth_first_word("A b.\n\nSecond c.\n\nThird", 3, 2, "second") and not nt.nth_first_word("x", 3, 9, "x")
    for fn in (nt.words, nt.sentences, nt.paragraphs, nt.highlights, nt.bullets, nt.is_json, nt.english, nt.quoted):
        fn("\x00\ud800" + "*" * 10_000)  # never raises on text


def test_both_forms_agree_and_follow_the_gold_on_builder_pairs(shared_data, tmp_path):
    from judgerl.data import load_pairs
    from judgerl.data.builders.if_pairs import IFPairSettings, write_if_pairs
    from judgerl.gold.ifeval import IFEvalGoldJudge

    checker = IFEvalGoldJudge.from_file(shared_data / "ifeval" / "input_data.jsonl")
    write_if_pairs(checker.records[:120], checker, tmp_path / "p.jsonl", IFPairSettings(split="train", seed=0))
    pairs = load_pairs(tmp_path / "p.jsonl").pairs
    assert len(pairs) >= 60
    agree = total = 0
    for p in pairs:
        ids, kws, skipped = p.meta["instruction_ids"], p.meta["kwargs"], set(p.meta.get("skipped") or ())
        short = check_program(ids, kws, skipped, ["RESPONSE"])
        plain = check_program(ids, kws, skipped, ["RESPONSE"], measures=False)
        assert "def " not in short and len(short) <= len(plain)
        for response in (p.chosen, p.rejected):
            gold = checker.score(p.prompt, response)
            counts = _counts(short, response, True)
            assert counts == _counts(plain, response, False)
            total += 1
            agree += counts == (sum(gold.followed.values()), len(gold.followed))
    # measured: 1,184 of 1,194 on the full training split (the misses: langdetect vs the English-word share)
    assert agree / total >= 0.97, (agree, total)


def test_every_instruction_type_has_a_check_and_plain_programs_define_what_they_call():
    from judgerl.data.builders.if_compose import SUPPORTED

    assert sorted(CHECKS) == sorted(SUPPORTED)
    code = check_program(["detectable_format:json_format", "language:response_language"], [{}, {"language": "en"}],
                         set(), ["A", "B"], measures=False)
    assert "import json, re" in code and "def is_json" in code and "def english" in code and "_EN = " in code
    assert helper_source([]) == "" and '"""' not in helper_source(nt.MEASURES)  # docstrings stripped
    assert labels_of(["a", "b", "a"]) == ["a", "b", "a#2"]


def test_protocol_option_measures():
    with pytest.raises(ValueError, match="needs namespace=true"):
        get_protocol("pos", measures=True)
    with pytest.raises(ValueError, match="true or false"):
        get_protocol("pav", namespace=True, measures="yes")
    on = get_protocol("pav", namespace=True, measures=True).build("q", ["a", "b"], tools=True)
    off = get_protocol("pav", namespace=True).build("q", ["a", "b"], tools=True)
    assert MEASURES_INSTRUCTION in on[0]["content"] and MEASURES_INSTRUCTION not in off[0]["content"]
    no_tools = get_protocol("pos", namespace=True, measures=True).build("q", ["a"], tools=False)
    assert MEASURES_INSTRUCTION not in no_tools[0]["content"]


@pytest.fixture(scope="module")
def sandbox():
    from judgerl.tools import get_sandbox

    sb = get_sandbox(timeout_s=10)
    yield sb
    sb.close()


def test_measures_run_in_the_sandbox_namespace(sandbox):
    from judgerl.tools.namespace import namespaced_code, response_namespace

    ns = response_namespace("pairwise", "Write a title.", ["<<Rivers>>\nRivers run.", "rivers run, slowly"])
    code = check_program(["detectable_format:title", "punctuation:no_comma"], [{}, {}], set(), ["A", "B"])
    res = sandbox.run(namespaced_code(code, ns))
    assert res.exit_code == 0 and res.stdout == "A 2 of 2\nB 0 of 2\n", res


def test_a_label_run_written_before_the_option_resumes():
    from judgerl.eval.store import whole_config_diff

    old = {"judge": {"protocol": {"name": "pos", "kind": "pointwise", "namespace": True}}, "mode": "expected"}
    now = {"judge": {"protocol": {**old["judge"]["protocol"], "measures": False}}, "mode": "expected"}
    assert whole_config_diff(old, now) == []
    on = {"judge": {"protocol": {**old["judge"]["protocol"], "measures": True}}, "mode": "expected"}
    assert whole_config_diff(old, on) and whole_config_diff(now, on)


@pytest.mark.parametrize("fn, text", [
    (nt.bullets, "\n" * 200_000 + "x"), (nt.bullets, " " * 200_000 + "x"), (nt.placeholders, "[" * 200_000),
    (nt.has_postscript, " " * 200_000), (nt.is_json, "[" * 100_000 + "]" * 100_000), (nt.highlights, "*" * 200_000),
    (nt.sentences, ". " * 100_000), (nt.paragraphs, "***" * 100_000), (nt.english, "the " * 100_000),
    (nt.has_title, "<<" * 100_000), (nt.has_title, "<<a" * 70_000),  # stop 45 red team: 120 kB timed the code out
])
def test_measures_stay_fast_on_hostile_text(fn, text):
    """A policy's reply is adversarial: a measure the judge calls must not time its code out (a quadratic regex
    on 200 kB of newlines or brackets would): each of these takes well under a second."""
    import time

    t0 = time.perf_counter()
    fn(text) if fn is not nt.has_postscript else fn(text, "P.S.")
    assert time.perf_counter() - t0 < 2.0


def test_has_title_is_ifevals_rule():
    """The linear scan finds a title exactly where IFEval's ``<<[^\\n]+>>`` does (random texts over its characters)."""
    import random
    import re

    rng = random.Random(0)
    for _ in range(20_000):
        t = "".join(rng.choice("<<>> a\n") for _ in range(rng.randint(0, 14)))
        want = any(x.lstrip("<").rstrip(">").strip() for x in re.findall(r"<<[^\n]+>>", t))
        assert nt.has_title(t) == want, repr(t)


@pytest.mark.parametrize("call", [
    # stop 45 red team: an empty argument matched everywhere (credit for a judge's slip), a float index raised
    lambda: nt.occurrences("abc", "") == 0, lambda: nt.has_word("abc", "") is False,
    lambda: nt.ends_with("abc", "  ") is False, lambda: nt.has_postscript("abc P.S. x", "") is False,
    lambda: nt.sections("a 1 b 2", "") == 0, lambda: nt.nth_first_word("a\n\nb", 2, 2, "") is False,
    lambda: nt.nth_first_word("a\n\nb", 2.0, 2, "b") is True, lambda: nt.nth_first_word("a\n\nb", 2, 1.5, "b") is False,
    lambda: nt.nth_first_word("a\n\nb", float("nan"), 1, "b") is False,
    lambda: nt.nth_first_word("a\n\nb", float("inf"), 1, "b") is False,
    lambda: nt.nth_first_word("a\n\nb", None, 1, "b") is False, lambda: nt.nth_first_word("a\n\nb", "x", 1, "b") is False,
])
def test_degenerate_arguments_give_no_credit_and_never_raise(call):
    assert call()
