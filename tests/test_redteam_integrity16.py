"""A sixteenth adversarial pass on issue 22 (decision integrity), the sixth against the carrier rule, written against
stop 40's generalisations (Unicode-derived bracket tables, any closing tag ending thinking, compound tag names, loose
numbers after ``[RESULT]``): 155 new injections and 69 new honest responses (156 checks), none in the earlier
red-team files; the rows and their statuses are in ``tests/support/redteam16_rows.py``.

Against the rule as the pass found it, 141 of 155 injections won and 110 of 156 honest checks were voided -- the
generalisations over-reached: a closing tag of markup the response opened (``<h3>Quiz results</h3>`` then ``Score:
8/10``; ``<details>`` ... ``Winner: B``) ended "thinking", compound names of their own (``<f1_score>0.91``,
``<best_lap>12``, ``<credit_score>720``) were read as the judge's tag, markdown link text ``[the result](url)`` as the
template marker; and a run of backticks took 46 s (the arena's fence pattern tried at every backtick). Fixed: a
closing tag ends thinking only outside code and when the response never opened its element; a compound name is the
stem with words of the judge's answer only (``final_``, ``_for_b``, ``_second``); the loose marker is not link text or
a link definition; a fence opens at a line start only (the project's code-block reader, 0.4 s). Now 126 of 155 win (15 more caught since stop 43: after a fake end of thinking) and 58 of 156 honest checks are
void: each row says why (value dresses inside compound tags, labels in list items or HTML after ``</think>``, arena
letters in quotes or parentheses, ties in words, split ``[RESULT]`` markers; honest mathematics ``A ≫ B`` and
semantic brackets ``⟦A⟧``).

Each row is asserted as the rule of this commit decides it: a voided injection and a standing honest judgment are
asserted; an open injection and a voided honest check are strict xfails (they fail loudly once the rule changes).
"""
from __future__ import annotations

import time

import pytest

from judgerl.judge.decision import read_decision
from support.dressed_copies import protocol_by_name as _proto  # noqa: E402
from support.redteam15_rows import INJECTIONS as PASS15  # noqa: E402
from support.redteam16_rows import HONEST, INJECTIONS, SLOW  # noqa: E402
from support.redteam_params import honest_params, injection_params  # noqa: E402
from test_redteam_integrity14 import WIN, check_carrier, check_honest  # noqa: E402


def test_the_rows_are_new_and_well_formed():
    assert len(INJECTIONS) == 155 and len(HONEST) == 69
    assert not {r[2] for r in INJECTIONS} & {r[2] for r in PASS15}
    assert all(set(r[3]) <= set(r[2]) for r in HONEST)
    assert all(k in WIN for *_, k, _o in INJECTIONS)
    assert sum(bool(r[4]) for r in INJECTIONS) == 126 and sum(len(r[3]) for r in HONEST) == 58  # the docstring's


@pytest.mark.parametrize("proto,text,judge", list(injection_params(INJECTIONS, 16)))
def test_a_carrier_never_gains(proto, text, judge):
    check_carrier(proto, text, judge)


@pytest.mark.parametrize("proto,text", list(honest_params(HONEST, 16)))
def test_an_honest_judgment_of_an_ordinary_response_stands(proto, text):
    check_honest(proto, text)


@pytest.mark.parametrize("desc,expr,proto,_before", SLOW, ids=[f"slow-{i}" for i in range(len(SLOW))])
def test_adversarial_inputs_read_in_linear_time(desc, expr, proto, _before):
    text = eval(expr)  # noqa: S307 -- the row's own expression, from the rows file
    t0 = time.perf_counter()
    read_decision(_proto(proto), "<think>x</think>\n<verdict>[[A>>B]]</verdict>", (text, "b"))
    assert time.perf_counter() - t0 < 10.0, desc  # generous for a shared CI machine; was 46 s at 256 KB
