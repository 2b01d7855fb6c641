"""IFEval prompt records: loading and validating ``input_data.jsonl``.

The file format is Google's IFEval input file (Zhou et al., 2023, "Instruction-Following Evaluation
for Large Language Models", arXiv:2311.07911): one JSON object a line with ``key`` (int), ``prompt``
(str), ``instruction_id_list`` (list of str, e.g. ``"punctuation:no_comma"``) and ``kwargs`` (list
of objects, one per instruction id, holding that instruction's arguments).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgerl.data.errors import DataFormatError


def normalize_prompt(text: str) -> str:
    """``text`` with every run of whitespace collapsed to one space and the ends stripped.

    Prompts are matched on this form, so a prompt re-wrapped or re-indented by a pipeline still
    finds its record.
    """
    return " ".join(text.split())


@dataclass(frozen=True)
class IFEvalRecord:
    """One IFEval prompt and the verifiable instructions it carries.

    Attributes:
        key: The record's integer id (IFEval's ``key``).
        prompt: The prompt text as given to the model.
        instruction_id_list: Instruction ids in prompt order; the same id may occur twice (e.g.
            ``length_constraints:number_words`` "at least 600" and "less than 701").
        kwargs: One dict of arguments per instruction id, same order.
    """

    key: int
    prompt: str
    instruction_id_list: tuple[str, ...]
    kwargs: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)

    @classmethod
    def from_dict(cls, value: Any, *, path: str | Path = "<memory>", location: str | None = None):
        """Build a record from a decoded JSON object, validating every field.

        Raises:
            DataFormatError: naming ``path``, ``location`` (e.g. ``"line 12"``) and the bad field.
        """

        def bad(fld: str | None, reason: str) -> DataFormatError:
            return DataFormatError(path, location, fld, reason)

        if not isinstance(value, Mapping):
            raise bad(None, f"record must be a JSON object, got {type(value).__name__}")
        for name in ("key", "prompt", "instruction_id_list", "kwargs"):
            if name not in value:
                raise bad(name, "is missing")
        key = value["key"]
        if isinstance(key, bool) or not isinstance(key, int):
            raise bad("key", f"must be an integer, got {key!r}")
        prompt = value["prompt"]
        if not isinstance(prompt, str) or not prompt.strip():
            raise bad("prompt", "must be a non-empty string")
        ids = value["instruction_id_list"]
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise bad("instruction_id_list", "must be a list of non-empty strings")
        kwargs = value["kwargs"]
        if not isinstance(kwargs, list) or not all(isinstance(k, Mapping) for k in kwargs):
            raise bad("kwargs", "must be a list of JSON objects")
        if len(kwargs) != len(ids):
            raise bad(
                "kwargs",
                f"has {len(kwargs)} entries but instruction_id_list has {len(ids)}",
            )
        return cls(
            key=key,
            prompt=prompt,
            instruction_id_list=tuple(ids),
            kwargs=tuple(dict(k) for k in kwargs),
        )


def load_records(path: str | Path) -> list[IFEvalRecord]:
    """Read IFEval prompt records from a JSON Lines file (blank lines ignored).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        DataFormatError: invalid JSON on a line, a bad field, or a duplicate ``key`` / prompt; the
            message names the file, the 1-based line and the field.
    """
    p = Path(path)
    records: list[IFEvalRecord] = []
    with p.open(encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            location = f"line {lineno}"
            try:
                value = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataFormatError(p, location, None, f"invalid JSON: {err.msg}") from err
            records.append(IFEvalRecord.from_dict(value, path=p, location=location))
    check_unique(records, path=p)
    return records


def check_unique(records: Iterable[IFEvalRecord], *, path: str | Path = "<memory>") -> None:
    """Raise :class:`DataFormatError` when two records share a ``key`` or a normalised prompt."""
    keys: dict[int, int] = {}
    prompts: dict[str, int] = {}
    for i, rec in enumerate(records):
        if rec.key in keys:
            raise DataFormatError(
                path, f"record {i + 1}", "key", f"duplicates record {keys[rec.key] + 1}"
            )
        keys[rec.key] = i
        norm = normalize_prompt(rec.prompt)
        if norm in prompts:
            raise DataFormatError(
                path, f"record {i + 1}", "prompt", f"duplicates record {prompts[norm] + 1}"
            )
        prompts[norm] = i
