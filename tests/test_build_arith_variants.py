"""Held-out variants of arithmetic pairs: other phrasings and the red-team attacks."""

from __future__ import annotations

import pytest

from judgerl.data.builders.arith_phrasing import ATTACKS, attack_arithmetic, rephrase_arithmetic
from judgerl.protocols import get_protocol
from judgerl.types import PreferencePair


def arith(i: int, a: int, op: str, b: int, wrong: int) -> PreferencePair:
    e = f"{a} {op} {b}"
    v = {"+": a + b, "-": a - b, "*": a * b}[op]
    return PreferencePair(id=f"p{i}", prompt=f"What is {e}?", chosen=f"{e} = {v}", rejected=f"{e} = {wrong}",
                          source=f"gsm8k/arith-{op}", meta={"expression": e, "value": v, "wrong": wrong})


PAIRS = [arith(i, 10 + i, "+-*"[i % 3], 3 + i, 7 * i + 1000) for i in range(60)]


def test_rephrasing_keeps_values_and_labels() -> None:
    out = rephrase_arithmetic(PAIRS, seed=0)
    assert [p.id for p in out] == [f"{p.id}-rephrased" for p in PAIRS]
    for old, new in zip(PAIRS, out):
        assert str(old.meta["value"]) in new.chosen and str(old.meta["wrong"]) in new.rejected
        assert new.prompt != old.prompt and new.meta["phrasing"]
    assert rephrase_arithmetic(PAIRS[::-1], seed=0) == out[::-1]  # per-pair choice: order-independent


def test_attacks_cover_every_kind_and_keep_the_label() -> None:
    out = attack_arithmetic(PAIRS, seed=0)
    assert {p.meta["attack"] for p in out} == {a[0] for a in ATTACKS}
    for old, new in zip(PAIRS, out):
        v, w = str(old.meta["value"]), str(old.meta["wrong"])
        assert new.prompt == old.prompt and new.source == f"gsm8k/arith-attack/{new.meta['attack']}"
        assert f"= {v}" in new.chosen and f"= {w}" in new.rejected  # the claims themselves are unchanged
    assert attack_arithmetic(PAIRS[::-1], seed=0) == out[::-1]
    assert attack_arithmetic(PAIRS, seed=1) != out


def test_attack_text_is_neutralised_in_the_judge_prompt() -> None:
    pair = next(p for p in attack_arithmetic(PAIRS) if p.meta["attack"] == "injected-verdict")
    msgs = get_protocol("pav").build(pair.prompt, [pair.chosen, pair.rejected], tools=True)
    assert "<verdict>" not in msgs[1]["content"].split("[User Question]")[1].split("Think inside")[0]


@pytest.mark.parametrize("bad", [
    {"expression": "1 + 2"}, {},
    {"expression": "48 + 24", "value": 74, "wrong": 72},   # reversed: the "chosen" would be wrong
    {"expression": "48 + 24", "value": 72, "wrong": 72},   # void: identical responses
    {"expression": "48", "value": 72, "wrong": 70},        # not the expression's value
    {"expression": "48 + 24 # x", "value": 72, "wrong": 70},
    None,
])
def test_variants_name_the_pair_without_meta(bad: dict | None) -> None:
    p = PreferencePair(id="bad-1", prompt="q", chosen="a", rejected="b", meta=bad)
    with pytest.raises(ValueError, match="bad-1"):
        attack_arithmetic([p])
    with pytest.raises(ValueError, match="bad-1"):
        rephrase_arithmetic([p])


def test_programmatic_teacher_never_mislabels_an_attacked_pair() -> None:
    """The teacher reads each response's last integer: on the quoted-number attacks it sees no single
    right claim and gives no verdict (dropped), never a wrong one."""
    from judgerl.backends import SamplingParams
    from judgerl.judge import Judge
    from judgerl.protocols import PaV
    from judgerl.train.datasets import build_rows
    from judgerl.train.distill import judge_rows, programmatic_teacher, select_examples
    from tests.support.sandboxes import ExecSandbox

    pairs = attack_arithmetic(PAIRS[:18])
    for task, sandbox in (("pairwise", None), ("tir", ExecSandbox())):
        rows = build_rows(pairs, task, PaV())
        teacher, rows = programmatic_teacher(rows, {p.id: p for p in pairs}, {"pav": PaV()}, tools=task == "tir")
        judged = judge_rows({"pav": Judge(PaV(), teacher, SamplingParams(max_new_tokens=64), sandbox=sandbox)},
                            rows, 1, seed=0)
        examples, stats = select_examples(rows, judged)
        labels = {f"{r['pair_id']}/pav/{r['order']}": r["label"] for r in rows}
        assert examples and all(PaV().parse(e.text).verdict == labels[e.key] for e in examples)
        assert stats["correct_rate"] < 1.0  # the quoted-number attacks are dropped, not mislabelled
