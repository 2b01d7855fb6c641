"""Arithmetic pairs in four forms (issue 23): labels from the question, held-out disjointness, seeds, errors."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from judgerl.data.builders import arith_render as R
from judgerl.data.builders import arith_templates as W
from judgerl.data.builders.arith_exact import exact_value, fmt, left_to_right, slip, steps
from judgerl.data.builders.arith_forms import FORMS, generate_form_pairs
from judgerl.data.builders.gsm8k_forms import gsm8k_word_pairs
from judgerl.data.builders.splits import (HELD_OUT, TRAIN, grouped_families_of, overlap, partition, split_of)
from judgerl.data.errors import DataFormatError
from judgerl.verify.answers import equivalent, extract_final_answer

GSM8K = Path(__file__).parents[1] / ".." / "shared" / "data" / "gsm8k"
_LAST_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")
_WORDS_FAMILIES = {"prose:words", "prose:words-sentence"}


def final_number(text: str) -> str | None:
    """The response's final number: the last number of what judgerl's extractor reads as the final
    answer ("the answer is definitely 267" -> 267), else the last number written."""
    found = extract_final_answer(text)
    numbers = _LAST_NUMBER.findall(found) if found is not None else []
    numbers = numbers or _LAST_NUMBER.findall(text)
    return numbers[-1] if numbers else None


def stated_words(template: str, text: str) -> str:
    """The number-in-words a prose template wrapped (``"The answer is {vw}."`` -> what stands for {vw})."""
    pattern = re.escape(template).replace(re.escape("{vw}"), "(.+)")
    m = re.fullmatch(pattern, text)
    assert m, (template, text)
    return m.group(1)


def check_label(p) -> None:
    """The right response states the value, the wrong one states ``wrong`` (a different number)."""
    answer, wrong = p.meta["answer"], p.meta["wrong_answer"]
    assert Fraction(answer) != Fraction(wrong), p.id
    assert Fraction(str(p.meta["value"])) == Fraction(answer) and Fraction(str(p.meta["wrong"])) == Fraction(wrong)
    if p.meta["response_family"] in _WORDS_FAMILIES:
        manners, m = R.PROSE[p.meta["response_family"].split(":", 1)[1]], p.meta["right_manner"]
        chosen_t, rejected_t = manners[m], manners[1 - m]
        assert stated_words(chosen_t, p.chosen) == R.words(Fraction(answer)), p.id
        assert stated_words(rejected_t, p.rejected) == R.words(Fraction(wrong)) != R.words(Fraction(answer)), p.id
        return
    got_right, got_wrong = final_number(p.chosen), final_number(p.rejected)
    assert equivalent(answer, got_right) is True, (p.id, p.chosen, answer)
    assert equivalent(answer, got_wrong) is False, (p.id, p.rejected, answer)


def question_expression(p) -> str:
    """The expression written in a generated ``expression`` / ``format`` question, in Python syntax."""
    text = p.prompt.replace(",", "").replace("×", "*").replace("÷", "/")
    assert p.meta["expression"] in text, (p.prompt, p.meta["expression"])
    return p.meta["expression"]


@pytest.fixture(scope="module")
def built() -> dict[tuple[str, str], list]:
    return {(form, split): generate_form_pairs(form, split, 120, seed=7) for form in FORMS for split in (TRAIN, HELD_OUT)}


@pytest.mark.parametrize("form", FORMS)
def test_every_form_is_labelled_from_the_question(built, form: str) -> None:
    for split in (TRAIN, HELD_OUT):
        pairs = built[form, split]
        assert len(pairs) == 120 and len({p.id for p in pairs}) == 120
        for p in pairs:
            assert p.meta["domain"] == f"arith/{form}" and p.meta["split"] == split
            value = exact_value(p.meta["expression"])
            assert fmt(value) == p.meta["answer"]
            if p.meta["template"].startswith("word:"):
                numbers = set(re.findall(r"\d+", p.prompt))
                template = next(t for t in W.TEMPLATES if f"word:{t.id}" == p.meta["template"])
                constants = set(re.findall(r"\d+", template.expression))
                assert set(re.findall(r"\d+", p.meta["expression"])) <= numbers | constants, p.prompt
            else:
                question_expression(p)
            check_label(p)


def test_forms_cover_the_issue_cases(built) -> None:
    fmt_pairs = built["format", TRAIN] + built["format", HELD_OUT]
    assert any("," in p.prompt for p in fmt_pairs), "thousands separators"
    assert any(p.meta["value"] < 0 for p in fmt_pairs), "negatives"
    assert any(isinstance(p.meta["value"], float) for p in fmt_pairs), "decimals"
    expr = built["expression", TRAIN]
    assert any("(" in p.meta["expression"] and len(steps(p.meta["expression"])) >= 3 for p in expr), "nesting"
    assert any(p.meta["error"] == "precedence" for p in expr), "the left-to-right precedence error"
    fams = {p.meta["response_family"] for s in (TRAIN, HELD_OUT) for p in built["prose", s]}
    groups = {g for g, names in R.PROSE_GROUPS.items() if any(f"prose:{n}" in fams for n in names)}
    assert groups == set(R.PROSE_GROUPS), "hedged, buried, in words, quoted, manner"


def test_held_out_shares_no_problem_question_template_or_phrasing(built) -> None:
    for form in FORMS:
        shared = overlap(built[form, TRAIN], built[form, HELD_OUT])
        assert all(not v for v in shared.values()), (form, shared)
    every_train = [p for (f, s), ps in built.items() if s == TRAIN for p in ps]
    every_held = [p for (f, s), ps in built.items() if s == HELD_OUT for p in ps]
    assert all(not v for v in overlap(every_train, every_held).values())
    held_q = set(grouped_families_of(HELD_OUT, {"q": list(R.QUESTIONS)}))
    for p in every_held:  # structural, not by luck of the sample: every part is a held-out one
        assert split_of(p.meta["problem_key"]) == HELD_OUT
        if not p.meta["template"].startswith("word:"):
            assert p.meta["question_family"] in held_q
    for p in every_train:
        assert split_of(p.meta["problem_key"]) == TRAIN


def test_split_helper_is_deterministic_and_keeps_every_kind() -> None:
    names = [f"fam-{i}" for i in range(10)]
    parts = partition(names)
    assert parts == partition(list(reversed(names))) and list(parts.values()).count(HELD_OUT) == 2
    assert set(partition(["a", "b"]).values()) == {TRAIN, HELD_OUT}
    for groups in (R.PROSE_GROUPS, R.RESPONSE_GROUPS):
        for names in groups.values():
            assert grouped_families_of(TRAIN, {"g": names}) and grouped_families_of(HELD_OUT, {"g": names})
    with pytest.raises(ValueError, match="at least 2 distinct"):
        partition(["only"])
    with pytest.raises(ValueError, match="unknown split"):
        generate_form_pairs("expression", "test", 5)
    with pytest.raises(ValueError, match="unknown arithmetic form"):
        generate_form_pairs("algebra", TRAIN, 5)


def test_same_seed_same_pairs_other_seed_other_pairs() -> None:
    a = [p.to_dict() for p in generate_form_pairs("prose", TRAIN, 30, seed=1)]
    assert a == [p.to_dict() for p in generate_form_pairs("prose", TRAIN, 30, seed=1)]
    assert a != [p.to_dict() for p in generate_form_pairs("prose", TRAIN, 30, seed=2)]


def test_exact_arithmetic_and_slips() -> None:
    assert exact_value("3.75 + 1.5") == Fraction("5.25") and exact_value("-45 * 12") == -540
    assert exact_value("23060 + 72268") == 95328 and fmt(Fraction(95328), separators=True) == "95,328"
    assert left_to_right("2 + 3 * 4") == 20 and left_to_right("(2 + 3) * 4") == 20
    st = steps("(2 + 3) * 4", {0: Fraction(6)})
    assert [s.value for s in st] == [6, 24]  # the slip propagates
    for text in ("23,060 + 72,268", "2 ** 8", "x + 1", "1 / 0", "1e3 + 1", "__import__('os')"):
        with pytest.raises(ValueError, match="not an exact"):
            exact_value(text)
    import random

    rng = random.Random(0)
    for v in (Fraction(0), Fraction(7), Fraction(-45), Fraction("5.25"), Fraction(95328)):
        for _ in range(20):
            w, kind = slip(v, rng)
            assert w != v and kind


@pytest.mark.skipif(not (GSM8K / "train.jsonl").is_file(), reason="needs ../shared/data/gsm8k")
def test_gsm8k_pairs_gold_from_the_file_and_held_out_phrasings() -> None:
    train = gsm8k_word_pairs(GSM8K / "train.jsonl", TRAIN, limit=300)
    held = gsm8k_word_pairs(GSM8K / "test.jsonl", HELD_OUT, limit=150, exclude_from=GSM8K / "train.jsonl")
    lines = (GSM8K / "train.jsonl").read_text().splitlines()
    for p in train:
        line = int(p.meta["gsm8k_location"].split()[-1])
        gold = json.loads(lines[line - 1])["answer"].split("####")[-1].strip().replace(",", "")
        assert Fraction(gold) == Fraction(p.meta["answer"]) and p.meta["domain"] == "arith/word"
        assert "<<" not in p.chosen + p.rejected
        check_label(p)
    for p in held:
        check_label(p)
    errors = {p.meta["error"].split(":")[0] for p in train}
    assert {"slip", "short"} <= errors
    slipped = next(p for p in train if p.meta["error"].startswith("slip"))
    assert slipped.chosen.count("\n") == slipped.rejected.count("\n")  # same solution, slipped numbers
    assert all(not v for v in overlap(train, held).values())
    train_questions = {json.loads(x)["question"].strip() for x in lines}
    assert not train_questions & {p.prompt for p in held}


def test_gsm8k_bad_input_names_file_line_and_field(tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"question": "q?", "answer": "1+1=2\\n#### 2"}\n{not json\n')
    with pytest.raises(DataFormatError, match=r"bad\.jsonl line 2: invalid JSON"):
        gsm8k_word_pairs(bad_json, TRAIN)
    no_final = tmp_path / "nofinal.jsonl"
    no_final.write_text('{"question": "q?", "answer": "1+1=2\\n#### 2"}\n\n{"question": "r?", "answer": "it is 3"}\n')
    with pytest.raises(DataFormatError, match=r"nofinal\.jsonl line 3: field 'answer' has no final '#### <number>'"):
        gsm8k_word_pairs(no_final, TRAIN)
    missing = tmp_path / "missing.jsonl"
    missing.write_text('{"answer": "#### 2"}\n')
    with pytest.raises(DataFormatError, match=r"missing\.jsonl line 1: field 'question' is missing"):
        gsm8k_word_pairs(missing, TRAIN)


def test_gsm8k_corruption_propagates(tmp_path: Path) -> None:
    src = tmp_path / "g.jsonl"
    src.write_text(json.dumps({"question": "Natalia sold clips to 48 friends in April and half as many in May. "
                               "How many altogether?",
                               "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = "
                               "<<48+24=72>>72 clips altogether.\n#### 72"}) + "\n")
    from judgerl.data.builders.gsm8k_forms import corrupt, read_gold

    pb = next(read_gold(src))
    import random

    for seed in range(10):
        text, wrong, error = corrupt(pb, random.Random(seed))
        assert wrong != 72 and "<<" not in text
        if error.endswith("@0"):
            first = Fraction(re.search(r"48/2 = (\d+)", text).group(1))
            assert first != 24 and f"48+{fmt(first)} = {fmt(wrong)}" in text  # the later step follows the slip
