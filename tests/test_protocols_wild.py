"""Saved raw judge outputs from real models (tests/fixtures/raw_outputs/*.jsonl) and a live check.

Each fixture line: ``id``, ``protocol``, ``kwargs``, ``n_responses``, ``raw`` (the generated text)
and ``expect`` (the Decision fields ``valid``, ``invalid_reason``, ``verdict``, ``scores``,
``ranking``). Add outputs that surprised a parser here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.backends import SamplingParams
from judgerl.protocols import INVALID_REASONS, get_protocol

FIXTURES = Path(__file__).parent / "fixtures" / "raw_outputs"


def _rows() -> list[dict]:
    rows = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for i, line in enumerate(path.read_text().splitlines(), start=1):
            if line.strip():
                row = json.loads(line)
                row["_where"] = f"{path.name}:{i}"
                rows.append(row)
    return rows


ROWS = _rows()


def test_fixtures_present() -> None:
    assert len(ROWS) >= 8


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_saved_output(row: dict) -> None:
    decision = get_protocol(row["protocol"], **row["kwargs"]).parse(row["raw"], n_responses=row["n_responses"])
    got = decision.to_dict()
    for field, want in row["expect"].items():
        assert got[field] == want, f"{row['_where']}: {field}"


@pytest.mark.slow
def test_embedded_model_outputs_always_parse(embedded_backend) -> None:
    """The embedded judge's raw output never crashes a parser; an invalid one names its reason."""
    protos = [get_protocol("pav"), get_protocol("pos", max_score=9)]
    prompts = [
        protos[0].build("What is 2 + 3?", ["2 + 3 = 5.", "2 + 3 = 6."]),
        protos[1].build("Name a primary colour.", ["Blue."], tools=True),
    ]
    outs = embedded_backend.generate(prompts, SamplingParams(max_new_tokens=24))
    for proto, out in zip(protos, outs):
        decision = proto.parse(out.text)
        assert decision.valid or decision.invalid_reason in INVALID_REASONS
