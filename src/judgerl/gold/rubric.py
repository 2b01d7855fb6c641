"""Rubrics from IFEval instructions: a prompt's verifiable instructions as criteria a judge reads.

Rubric-conditioned judging is one of the defences against reward hacking the judge-as-reward paper
lists ("Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training", 2025): the judge
prompt carries a per-prompt rubric (``protocol.build(..., rubric=...)``; ``--rubric`` in eval, label,
serve and policy training). For IFEval prompts (Zhou et al., 2023, arXiv:2311.07911) the rubric is
derived from the record itself: each entry of ``instruction_id_list`` with its ``kwargs``, worded by
the checking library's own ``build_description`` (lm-eval's IFEval port, the wording the gold judge's
report uses; :meth:`judgerl.gold.ifeval.IFEvalGoldJudge.descriptions`), numbered, with the gold
judge's scoring rule (9 x instructions followed / instructions, rounded half up). An id the library
has no check for is named with its arguments instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from judgerl.gold.records import IFEvalRecord, load_records, normalize_prompt

#: The first line of every IFEval rubric.
RUBRIC_HEADER = "The response must follow every instruction of the user:"
#: The last line: the gold judge's scoring rule (:func:`judgerl.gold.ifeval.score_from_counts`).
RUBRIC_SCORING = "Score: 9 x (instructions followed) / (instructions), rounded."


def _named(instruction_id: str, kwargs: Mapping[str, Any]) -> str:
    """``"keywords:forbidden_words (forbidden_words=['a', 'b'])"`` for an id without a library wording."""
    given = {k: v for k, v in kwargs.items() if v not in (None, "", [], {})}
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(given.items()))
    return f"{instruction_id} ({args})" if args else instruction_id


def ifeval_rubric(record: IFEvalRecord, descriptions: Sequence[str | None]) -> str:
    """The rubric of one IFEval record (module docstring).

    Args:
        record: The IFEval record (``instruction_id_list`` and ``kwargs``).
        descriptions: One wording per instruction (None: name the id and its arguments), e.g.
            :meth:`~judgerl.gold.ifeval.IFEvalGoldJudge.descriptions`.

    Returns:
        ``RUBRIC_HEADER``, one numbered line per instruction, ``RUBRIC_SCORING`` (newline-separated).

    Raises:
        ValueError: ``descriptions`` does not have one entry per instruction, or the record has none.
    """
    ids = record.instruction_id_list
    if len(descriptions) != len(ids):
        raise ValueError(f"IFEval key {record.key}: {len(descriptions)} descriptions for {len(ids)} instructions")
    if not ids:
        raise ValueError(f"IFEval key {record.key}: no instruction to make a rubric of")
    lines = [RUBRIC_HEADER]
    for n, (iid, kwargs, desc) in enumerate(zip(ids, record.kwargs, descriptions), start=1):
        text = " ".join(desc.split()) if desc else _named(iid, kwargs)
        lines.append(f"{n}. {text}")
    lines.append(RUBRIC_SCORING)
    return "\n".join(lines)


class IFEvalRubrics:
    """Rubrics of a set of IFEval records, looked up by prompt text (whitespace-normalised) or key.

    Args:
        records: The IFEval records (unique keys and prompts).

    Raises:
        ImportError: the ``gold`` extra (lm-eval) is not installed: the wording is the library's.
        DataFormatError: duplicate keys or prompts. ValueError: arguments the library rejects.
    """

    def __init__(self, records: Iterable[IFEvalRecord]) -> None:
        from judgerl.gold.ifeval import IFEvalGoldJudge

        self.records = list(records)
        gold = IFEvalGoldJudge(self.records, punkt="off")  # wording only: no sentence model needed
        self._by_prompt = {normalize_prompt(r.prompt): ifeval_rubric(r, gold.descriptions(r)) for r in self.records
                           if r.instruction_id_list}
        self._by_key = {r.key: self._by_prompt.get(normalize_prompt(r.prompt)) for r in self.records}

    @classmethod
    def from_file(cls, path: str | Path) -> "IFEvalRubrics":
        """Rubrics of the records of an IFEval ``input_data.jsonl`` (:func:`judgerl.gold.records.load_records`)."""
        return cls(load_records(path))

    def for_prompt(self, prompt: str | int) -> str | None:
        """The rubric of a prompt text or key; None when unknown (or the record has no instruction)."""
        if isinstance(prompt, int) and not isinstance(prompt, bool):
            return self._by_key.get(prompt)
        return self._by_prompt.get(normalize_prompt(str(prompt)))

    def by_prompt(self) -> dict[str, str]:
        """Prompt text (as in the file, and whitespace-normalised) -> rubric: what the judge rewards take
        (``get_judge_reward(..., rubrics=...)``, ``remote_reward(..., rubrics=...)``)."""
        out: dict[str, str] = {}
        for r in self.records:
            text = self._by_prompt.get(normalize_prompt(r.prompt))
            if text is not None:
                out[r.prompt] = text
                out[normalize_prompt(r.prompt)] = text
        return out


__all__ = ["IFEvalRubrics", "RUBRIC_HEADER", "RUBRIC_SCORING", "ifeval_rubric"]
