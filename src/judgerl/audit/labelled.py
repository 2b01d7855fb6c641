"""Measure the audit against a labelled set: recall and false-positive rate per kind.

The set (``bench/data/audit_labelled.jsonl``, written for judgerl) has one record per line with
``id``, ``split`` (``dev`` or ``heldout``), ``prompt``, ``response`` and ``labels`` (the kinds a
careful reader assigns, a subset of :data:`judgerl.audit.KINDS`). The detectors were tuned on the
``dev`` split only; ``heldout`` was written before any detector existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgerl.audit.audit import DEFAULT_CONFIG, KINDS, AuditConfig, audit_response
from judgerl.data.errors import DataFormatError
from judgerl.data.io import iter_records

LABELLED_SET = Path(__file__).resolve().parents[3] / "bench" / "data" / "audit_labelled.jsonl"


@dataclass(frozen=True)
class LabelledRecord:
    """One labelled example (see the module docstring)."""

    id: str
    split: str
    prompt: str | None
    response: str
    labels: tuple[str, ...]


def load_labelled(path: str | Path = LABELLED_SET) -> list[LabelledRecord]:
    """Read a labelled audit set.

    Raises:
        FileNotFoundError: ``path`` does not exist (the default set lives in the source checkout).
        DataFormatError: a record lacks a field or has an unknown label (message names file and line).
    """
    out = []
    for raw in iter_records(path):
        if raw.error:
            raise DataFormatError(path, raw.location, None, raw.error)
        v = raw.value
        if not isinstance(v, dict):
            raise DataFormatError(path, raw.location, None, "must be a JSON object")
        for key in ("id", "response", "labels"):
            if key not in v:
                raise DataFormatError(path, raw.location, key, "is missing")
        if not isinstance(v["response"], str):
            raise DataFormatError(path, raw.location, "response", "must be a string")
        labels = v["labels"]
        if not isinstance(labels, list) or any(lab not in KINDS for lab in labels):
            raise DataFormatError(path, raw.location, "labels", f"must be a list of {', '.join(KINDS)}")
        out.append(LabelledRecord(str(v["id"]), str(v.get("split", "dev")), v.get("prompt"), v["response"],
                                  tuple(labels)))
    return out


@dataclass(frozen=True)
class KindScore:
    """Confusion counts of one kind: ``recall = tp / (tp + fn)``, ``fpr = fp / (fp + tn)``."""

    tp: int
    fn: int
    fp: int
    tn: int

    @property
    def recall(self) -> float | None:
        """Share of labelled positives flagged; None without positives."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def fpr(self) -> float | None:
        """Share of labelled negatives flagged; None without negatives."""
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else None

    def to_dict(self) -> dict[str, Any]:
        """Counts plus ``recall`` and ``fpr``."""
        return {"tp": self.tp, "fn": self.fn, "fp": self.fp, "tn": self.tn, "recall": self.recall, "fpr": self.fpr}


def score_labelled(records: Sequence[LabelledRecord], config: AuditConfig = DEFAULT_CONFIG
                   ) -> tuple[dict[str, KindScore], list[dict[str, Any]]]:
    """Audit each record and compare with its labels.

    Returns:
        ``(scores, errors)``: a :class:`KindScore` per kind, and one entry per misclassified record
        (``id``, ``missed`` kinds, ``extra`` kinds) for inspection.
    """
    counts = {k: [0, 0, 0, 0] for k in KINDS}
    errors = []
    for rec in records:
        flags = set(audit_response(rec.response, rec.prompt, config).flags)
        gold = set(rec.labels)
        for k in KINDS:
            idx = (0 if k in flags else 1) if k in gold else (2 if k in flags else 3)
            counts[k][idx] += 1
        if flags != gold:
            errors.append({"id": rec.id, "missed": sorted(gold - flags), "extra": sorted(flags - gold)})
    return {k: KindScore(*c) for k, c in counts.items()}, errors
