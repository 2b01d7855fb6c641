"""Rubrics derived from IFEval instructions (judgerl.gold.rubric)."""

from __future__ import annotations

import pytest

from judgerl.gold.records import IFEvalRecord
from judgerl.gold.rubric import RUBRIC_HEADER, RUBRIC_SCORING, IFEvalRubrics, ifeval_rubric

REC = IFEvalRecord(7, "Write a haiku about rain.", ("punctuation:no_comma", "length_constraints:number_words",
                                                     "made_up:check"),
                   ({}, {"relation": "less than", "num_words": 40}, {"k": 2}))


def test_rubric_numbers_each_instruction_in_the_librarys_words():
    rubrics = IFEvalRubrics([REC])
    text = rubrics.for_prompt("Write a  haiku about rain.")  # whitespace-normalised lookup
    lines = text.splitlines()
    assert lines[0] == RUBRIC_HEADER and lines[-1] == RUBRIC_SCORING and len(lines) == 5
    assert "commas" in lines[1] and "less than 40 words" in lines[2]
    assert lines[3] == '3. made_up:check (k=2)'  # no check in the library: named with its arguments
    assert rubrics.for_prompt(7) == text and rubrics.for_prompt("unknown") is None
    assert rubrics.by_prompt()[REC.prompt] == text


def test_rubric_refuses_mismatched_descriptions_and_empty_records():
    with pytest.raises(ValueError, match="2 descriptions for 3 instructions"):
        ifeval_rubric(REC, ["a", "b"])
    with pytest.raises(ValueError, match="no instruction"):
        ifeval_rubric(IFEvalRecord(1, "p", (), ()), [])


def test_every_shipped_ifeval_prompt_gets_a_rubric(shared_data):
    rubrics = IFEvalRubrics.from_file(shared_data / "ifeval" / "input_data.jsonl")
    assert all(rubrics.for_prompt(r.key) for r in rubrics.records)
