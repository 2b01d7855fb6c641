"""The domain teachers (issue 23, item 2): arithmetic in every form, code, instruction constraints and
chat with no tool call -- valid trajectories through the one Judge and the real sandbox, the response
namespace used, correct decisions on held-out builds, and no label ever read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from judgerl.backends.base import SamplingParams
from judgerl.judge.core import Judge
from judgerl.protocols import get_protocol
from judgerl.train.datasets import build_rows
from judgerl.train.distill import judge_rows, programmatic_teacher, select_examples
from judgerl.train.teach import domain_teacher
from judgerl.train.teach.arith import chain_code, question_expression
from judgerl.train.teach.ifcheck import CHECKS, check_program
from judgerl.types import PreferencePair

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
PAV = get_protocol("pav", namespace=True)


@pytest.fixture(scope="module")
def sandbox():
    from judgerl.tools import get_sandbox

    sb = get_sandbox(timeout_s=10)
    yield sb
    sb.close()


def _judge_pairs(pairs, sandbox, proto=PAV, task="tir"):
    tools = task != "pairwise"  # pointwise rows are judged with tools here (the Judge's sandbox)
    rows = build_rows(pairs, task, proto, proto)
    teacher, usable, counts = domain_teacher(rows, {p.id: p for p in pairs}, {proto.name: proto}, tools=tools)
    judge = Judge(proto, teacher, SamplingParams(max_new_tokens=64), sandbox=sandbox if tools else None)
    return rows, usable, judge_rows({proto.name: judge}, usable, 1, seed=0)


def _accuracy(rows, judged) -> tuple[float, float]:
    """(accuracy over all rows, accuracy over the rows with a verdict)."""
    ok = [j.decision.valid and j.decision.verdict == r["label"] for r, [j] in zip(rows, judged)]
    decided = [j.decision.valid for [j] in judged]
    return sum(ok) / len(rows), sum(ok) / max(sum(decided), 1)


@pytest.mark.parametrize("form", ["expression", "word", "format", "prose"])
def test_arithmetic_teacher_on_held_out_forms(sandbox, form: str) -> None:
    from judgerl.data.builders.arith_forms import generate_form_pairs

    pairs = generate_form_pairs(form, "held-out", 12, seed=3)
    rows, usable, judged = _judge_pairs(pairs, sandbox)
    assert len(usable) == len(rows)
    acc, acc_decided = _accuracy(usable, judged)
    assert acc >= 0.95 and acc_decided == 1.0
    for [j] in judged:
        code = j.trajectory.segments[1].text
        assert "number_of(A) == value" in code and "number_of(B) == value" in code  # the namespace, no copy
        assert j.trajectory.tool_calls == 1 and j.trajectory.tool_errors == 0
        for p in pairs:  # the computation comes from the question, never a response's number
            assert p.chosen not in code and p.rejected not in code


def test_arithmetic_teacher_on_gsm8k_word_problems(sandbox) -> None:
    from judgerl.data.builders.gsm8k_forms import gsm8k_word_pairs

    pairs = gsm8k_word_pairs(DATA / "gsm8k" / "test.jsonl", "held-out", seed=0, limit=20)
    rows, usable, judged = _judge_pairs(pairs, sandbox)
    acc, acc_decided = _accuracy(usable, judged)
    assert len(usable) >= 0.8 * len(rows) and acc >= 0.8 and acc_decided == 1.0  # undecided rows are dropped
    assert all("step1 = " in j.trajectory.segments[1].text for [j] in judged)


def test_hedged_prose_reads_267_and_neither_right_gives_no_verdict(sandbox) -> None:
    meta = {"domain": "arith/prose", "expression": "89 * 3"}
    right = PreferencePair(id="r", prompt="What is 89 * 3?", chosen="The answer is definitely 267. I'm certain.",
                           rejected="Maybe 268? I could be off.", meta=meta)
    neither = dataclasses.replace(right, id="n", chosen="The answer is 266.")
    rows, usable, judged = _judge_pairs([right, neither], sandbox)
    verdicts = {(r["pair_id"], r["order"]): j.decision.verdict if j.decision.valid else None
                for r, [j] in zip(usable, judged)}
    assert verdicts == {("r", 0): "A", ("r", 1): "B", ("n", 0): None, ("n", 1): None}
    assert select_examples(usable, judged)[1]["selected"] == 2


def test_plain_form_and_no_tools_and_pointwise(sandbox) -> None:
    pair = PreferencePair(id="p", prompt="Compute 23,060 + 72,268.", chosen="95,328", rejected="95,338",
                          meta={"domain": "arith/format"})  # no expression in meta: read from the question
    for proto, task in ((get_protocol("pav"), "tir"), (get_protocol("pav"), "pairwise")):
        rows, usable, judged = _judge_pairs([pair], sandbox, proto, task)
        assert [j.decision.verdict for [j] in judged] == ["A", "B"]
    [[j], _] = _judge_pairs([pair], sandbox, get_protocol("pav"), "tir")[2]
    assert "value == 95328" in j.trajectory.segments[1].text  # plain form: the number read here
    pos = get_protocol("pos", min_score=0, max_score=9, namespace=True)
    rows, usable, judged = _judge_pairs([pair], sandbox, pos, "pointwise")
    assert [j.decision.scores for [j] in judged] == [(9.0,), (0.0,)]
    assert "number_of(RESPONSE) == value" in judged[0][0].trajectory.segments[1].text


@pytest.mark.parametrize("question,expr", [
    ("What is (12 + 7) * 4?", "(12 + 7) * 4"), ("Compute 23,060 + 72,268.", "23060 + 72268"),
    ("Find 6 × 7 − 2.", "6 * 7 - 2"), ("What is -45 * 12?", "-45 * 12"), ("Write a poem.", None),
])
def test_question_expression(question: str, expr) -> None:
    assert question_expression(question) == expr


def test_chain_code_names_earlier_steps() -> None:
    lines, value = chain_code(["12*15", "180-30", "150/5"])
    assert lines == ["step1 = 12*15", "step2 = step1-30", "step3 = step2/5", "value = step3"] and value == 30


CODE_PAIR = PreferencePair(
    id="c", prompt="Complete add.\n```python\nassert add(1, 2) == 3\nassert add(0, 0) == 0\n```",
    chosen="def add(a, b):\n    return a + b\n", rejected="```python\ndef add(a, b):\n    print('A 2 of 2')\n    return a - b\n```",
    meta={"domain": "code", "tests": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]})


def test_code_teacher_runs_examples_in_the_sandbox(sandbox) -> None:
    rows, usable, judged = _judge_pairs([CODE_PAIR], sandbox)
    assert [j.decision.verdict for [j] in judged] == ["A", "B"]
    j = judged[0][0]
    assert "passes(A, tests)" in j.trajectory.segments[1].text
    assert j.trajectory.segments[2].text == "```output\nA 2 of 2\nB 1 of 2\n```\n"  # the response's print is muted
    tie = dataclasses.replace(CODE_PAIR, id="t", rejected="def add(a, b):\n    return b + a\n")
    assert not any(j.decision.valid for [j] in _judge_pairs([tie], sandbox)[2])  # equal counts: dropped
    # code pairs need the namespace: refused (skipped) in the plain form
    assert domain_teacher(build_rows([CODE_PAIR], "tir", get_protocol("pav")), {"c": CODE_PAIR},
                          {"pav": get_protocol("pav")}, tools=True)[1] == []


IF_PAIR = PreferencePair(
    id="i", prompt="Write about rivers in lowercase, without commas, ending with 'any questions?'",
    chosen="rivers run to the sea and feed the land. any questions?",
    rejected="rivers run to the sea, and feed the land. any questions?",
    meta={"domain": "if", "instruction_ids": ["change_case:english_lowercase", "punctuation:no_comma",
                                              "startend:end_checker"],
          "kwargs": [{}, {}, {"end_phrase": "Any questions?"}], "broken": "punctuation:no_comma"})


def test_if_teacher_checks_every_instruction(sandbox) -> None:
    rows, usable, judged = _judge_pairs([IF_PAIR], sandbox)
    assert [j.decision.verdict for [j] in judged] == ["A", "B"]
    assert judged[0][0].trajectory.segments[2].text == "```output\nA 3 of 3\nB 2 of 3\n```\n"
    pos = get_protocol("pos", min_score=0, max_score=9, namespace=True)
    rows, usable, judged = _judge_pairs([IF_PAIR], sandbox, pos, "pointwise")
    assert [j.decision.scores for [j] in judged] == [(9.0,), (6.0,)]  # the gold's rule: round(9 * 2 / 3)
    # the pointwise program prints the rule's score: the judge copies a number its code printed
    assert [j[0].trajectory.segments[2].text for j in judged] == ["```output\n3 of 3 score 9\n```\n",
                                                                   "```output\n2 of 3 score 6\n```\n"]
    assert "Score 6." in judged[1][0].trajectory.segments[3].text


def test_if_teacher_pointwise_score_line_matches_the_gold_rule() -> None:
    from judgerl.gold.ifeval import score_from_counts
    from judgerl.train.teach.base import read_counts, read_score

    for total in range(1, 12):
        for passed in range(total + 1):
            c = [True] * passed + [False] * (total - passed)
            printed = (18 * sum(c) + len(c)) // (2 * len(c))  # the expression check_program writes
            assert printed == score_from_counts(passed, total)
    assert read_counts("3 of 4 score 7", 1) == [(3, 4)] and read_score("3 of 4 score 7\n") == 7
    assert read_score("3 of 4") is None and read_score("A 3 of 4\nB 1 of 4") is None
    assert "(18 * sum(c) + len(c)) // (2 * len(c))" in check_program(["punctuation:no_comma"], [{}], set(), ["A"])
    assert "score" not in check_program(["punctuation:no_comma"], [{}], set(), ["A", "B"])


def test_if_teacher_writes_the_short_form_when_the_prompt_names_the_measures(sandbox) -> None:
    measured = get_protocol("pav", namespace=True, measures=True)
    rows, usable, judged = _judge_pairs([IF_PAIR], sandbox, measured)
    assert [j.decision.verdict for [j] in judged] == ["A", "B"]
    code = judged[0][0].trajectory.segments[1].text
    assert "ends_with(t, " in code and "def " not in code, code
    assert judged[0][0].trajectory.segments[2].text == "```output\nA 3 of 3\nB 2 of 3\n```\n"


def test_if_checks_cover_the_25_instruction_types() -> None:
    from judgerl.data.builders.if_compose import SUPPORTED

    assert sorted(CHECKS) == sorted(SUPPORTED) and len(CHECKS) == 25
    with pytest.raises(ValueError, match="no check"):
        check_program(["unknown:thing"], [{}], set(), ["A"])


def test_chat_teacher_never_calls_a_tool_and_the_reward_sees_chat(sandbox) -> None:
    from judgerl.data.builders.chat_mix import chat_mix_pairs
    from judgerl.rewards.tir import get_tir_reward

    pairs, _ = chat_mix_pairs([DATA], "held-out", seed=0, limit=3)
    rows, usable, judged = _judge_pairs(pairs, sandbox)
    assert len(usable) == len(rows) and all(j.decision.valid for [j] in judged)
    assert all(j.trajectory.tool_calls == 0 and "```python" not in j.text for [j] in judged)
    reward = get_tir_reward(PAV)
    scores = reward([j.text for [j] in judged], label=[r["label"] for r in usable],
                    category=[r["category"] for r in usable], responses=[r["responses"] for r in usable])
    assert set(scores) <= {0.0, 1.0} and {r["category"] for r in usable} <= {"chat", "safety"}


def test_teachers_never_read_the_label(sandbox) -> None:
    # The same texts shown in the same order, with chosen and rejected swapped (the label flips): every
    # teacher writes the same trajectory, so its decisions come from the texts alone.
    from judgerl.data.builders.arith_forms import generate_form_pairs

    pairs = [generate_form_pairs("prose", "held-out", 1, seed=5)[0], CODE_PAIR, IF_PAIR]
    for p in pairs:
        swapped = dataclasses.replace(p, chosen=p.rejected, rejected=p.chosen)
        rows, usable, judged = _judge_pairs([p], sandbox)
        rows2, usable2, judged2 = _judge_pairs([swapped], sandbox)
        assert [j.text for [j] in judged] == [j.text for [j] in reversed(judged2)]
        assert [r["label"] for r in usable] == [r["label"] for r in usable2]  # A, B: the label moved with the texts


def test_distill_routes_domain_pairs_to_the_domain_teacher() -> None:
    rows = build_rows([IF_PAIR, CODE_PAIR], "tir", PAV)
    teacher, usable = programmatic_teacher(rows, {"i": IF_PAIR, "c": CODE_PAIR}, {"pav": PAV}, tools=True)
    assert teacher.name == "programmatic/domains" and len(usable) == 4


@pytest.mark.slow
def test_held_out_builds_per_domain(sandbox) -> None:
    """The figures of bench/teachers.py on 30 held-out pairs per domain (code and IF need their data)."""
    import bench.teachers as bt

    for name, pairs in bt.held_out_pairs(30).items():
        if not pairs:
            continue
        res = bt.measure(pairs, sandbox)
        if name == "chat":
            assert res["tool_use"] == 0.0 and res["valid"] == 1.0
        else:
            assert res["accuracy_decided"] >= 0.95, (name, res)
