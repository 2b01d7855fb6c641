"""``value_of(PROMPT)``: the question's arithmetic as data the judge's code reads (a small judge mis-copies
expressions: stop 33's first mixture SFT judge computed a wrong value in 85-100 % of its held-out arithmetic
judgments), exact, in agreement with the builders' labels, and available in the sandbox."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from judgerl.data.builders.arith_exact import exact_value
from judgerl.tools.namespace_arith import exact_value_of, question_expression, value_of


@pytest.fixture(scope="module")
def sandbox():
    from judgerl.tools import get_sandbox

    sb = get_sandbox(timeout_s=10)
    yield sb
    sb.close()


@pytest.mark.parametrize("question,value", [
    ("Quick question: what's ((82 + 46) * 12 - 77) * 5?", 7295),
    ("Find the value of 12 × (94 + 55) - 64.", 1724),
    ("Compute 23,060 + 72,268.", 95328),
    ("What is 24676 * 45.82?", 1130654.32),
    ("What is -45 * 12?", -540),
    ("What is 7 ÷ 2 − 1?", 2.5),
    ("What is 6 x 7?", 42),
    ("What is 1 / 3?", 1 / 3),
    ("What is 5 / 0?", None),
    ("Write a poem about 2024.", None),
    ("", None),
    ("9" * 70 + " * " + "9" * 70, None),  # over MAX_DIGITS: no value, no exception
])
def test_value_of_reads_the_questions_expression_exactly(question: str, value) -> None:
    assert value_of(question) == value
    assert value is None or type(value_of(question)) is type(value)


def test_value_of_compares_like_number_of_reads_the_same_decimal() -> None:
    from judgerl.tools.namespace_helpers import number_of

    assert number_of("The answer is 1,130,654.32.") == value_of("What is 24676 * 45.82?")
    assert number_of("It is 0.3") == value_of("What is 0.1 * 3?") == 0.3
    assert 0.1 * 3 != 0.3  # the float product a judge's own code gets is not


def test_it_agrees_with_the_builders_exact_values_on_every_form() -> None:
    from judgerl.data.builders.arith_forms import FORMS, generate_form_pairs

    pairs = [p for form in FORMS for split in ("train", "held-out") for p in generate_form_pairs(form, split, 40, seed=3)]
    checked = 0
    for p in pairs:
        expr = p.meta.get("expression")
        if expr and question_expression(p.prompt) is not None:
            assert exact_value_of(p.prompt) == exact_value(expr), (p.prompt, expr)
            checked += 1
    stated = [p for p in pairs if p.meta["form"] in ("expression", "format")]  # word / prose: a story, no expression
    assert sum(exact_value_of(p.prompt) is not None for p in stated) == len(stated) and checked >= len(stated)


def test_hostile_questions_never_raise_and_stay_fast() -> None:
    import time

    rng = random.Random(0)
    for text in ["(" * 5000 + "1" + ")" * 5000, "1 + " * 20000, " " * 100000 + "1+1", "1," * 50000,
                 "".join(rng.choice("0123456789+-*/(). ,x×÷−") for _ in range(30000))]:
        t0 = time.perf_counter()
        value_of(text)
        assert time.perf_counter() - t0 < 2.0


def test_the_sandbox_namespace_has_value_of(sandbox) -> None:
    from judgerl.tools.namespace import namespaced_code, response_namespace

    ns = response_namespace("pairwise", "What is ((82 + 46) * 12 - 77) * 5?", ["7295", "7294"])
    r = sandbox.run(namespaced_code("value = value_of(PROMPT)\nprint(number_of(A) == value, number_of(B) == value)", ns))
    assert r.stdout == "True False\n", r


def test_the_teacher_reads_the_question_with_value_of_and_keeps_steps_for_word_problems() -> None:
    from judgerl.protocols import get_protocol
    from judgerl.train.teach.arith import ArithmeticPlan
    from judgerl.train.teach.base import Case
    from judgerl.types import PreferencePair

    plan, proto = ArithmeticPlan(), get_protocol("pav", namespace=True)
    expr = PreferencePair(id="e", prompt="What is ((82 + 46) * 12 - 77) * 5?", chosen="7295", rejected="7294",
                          meta={"domain": "arith/expression", "expression": "((82 + 46) * 12 - 77) * 5"})
    word = PreferencePair(id="w", prompt="Tom has 12 crates with 15 apples each. He sells 30. How many are left?",
                          chosen="150", rejected="160", meta={"domain": "arith/word", "calculations": ["12*15", "180-30"]})
    for pair, want in ((expr, "value = value_of(PROMPT)\n"), (word, "step1 = 12*15\n")):
        case = Case(proto, (pair.chosen, pair.rejected), pair.prompt, True, True, plan.prepare(pair, proto, True))
        assert plan.first(case, 0).code.startswith(want)
    plain = Case(proto, ("7295", "7294"), expr.prompt, True, False, plan.prepare(expr, proto, True))
    assert "value_of" not in plan.first(plain, 0).code  # the paper's plain form: no namespace, no helper
