"""File reading (JSON arrays, JSON Lines, gzip, NaN tokens), limits and the canonical JSONL round trip."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from judgerl.data import detect_format, iter_records, load_pairs, write_pairs_jsonl
from judgerl.data.errors import DataFormatError
from judgerl.data.formats.base import dataset_stem
from judgerl.types import PreferencePair

FIXTURES = Path(__file__).parent / "fixtures" / "data"


def test_array_and_lines_give_the_same_pairs(tmp_path: Path) -> None:
    recs = [json.loads(line) for line in (FIXTURES / "autoj_pairwise.jsonl").read_text().splitlines()]
    as_array = tmp_path / "autoj_pairwise.json"
    as_array.write_text(json.dumps(recs, indent=1))
    assert load_pairs(as_array).pairs == load_pairs(FIXTURES / "autoj_pairwise.jsonl").pairs


def test_gzip_detected_by_content_not_name(tmp_path: Path) -> None:
    data = (FIXTURES / "rewardbench.jsonl").read_bytes()
    named = tmp_path / "rb.jsonl.gz"
    named.write_bytes(gzip.compress(data))
    misnamed = tmp_path / "rb.jsonl"
    misnamed.write_bytes(gzip.compress(data))
    expected = [(p.prompt, p.chosen) for p in load_pairs(FIXTURES / "rewardbench.jsonl").pairs]
    for path in (named, misnamed):
        assert [(p.prompt, p.chosen) for p in load_pairs(path).pairs] == expected
    # A gzipped JSON array works too.
    arr = tmp_path / "rm.json.gz"
    arr.write_bytes(gzip.compress((FIXTURES / "rmbench.json").read_bytes()))
    assert len(load_pairs(arr).pairs) == 18


def test_bom_and_locations(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}\n\n{"a": 2}\n')
    recs = list(iter_records(path))
    assert [(r.index, r.location, r.value) for r in recs] == [
        (0, "line 1", {"a": 1}),
        (1, "line 3", {"a": 2}),
    ]


def test_leading_blank_lines_keep_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text('\n  \n  {"a": 1}\n{oops\n')
    recs = list(iter_records(path))
    assert [(r.location, r.value, r.error is None) for r in recs] == [
        ("line 3", {"a": 1}, True),
        ("line 4", None, False),
    ]


def test_nan_tokens_are_read(tmp_path: Path) -> None:
    path = tmp_path / "with_nan.jsonl"
    path.write_text('{"prompt": "p", "chosen": "c", "rejected": "r", "subset": NaN}\n')
    (pair,) = load_pairs(path).pairs
    assert pair.source == "with_nan"  # NaN subset counts as absent: the dataset stem is used


def test_limit_stops_early(shared_data: Path) -> None:
    result = load_pairs(shared_data / "hh-rlhf" / "harmless-base-test.jsonl.gz", limit=5)
    assert (len(result.pairs), result.n_records) == (5, 5)
    rm = load_pairs(FIXTURES / "rmbench.json", limit=4)
    assert len(rm.pairs) == 4 and rm.n_records == 1


@pytest.mark.parametrize(
    ("path", "stem"),
    [
        ("a/natural.json", "natural"),
        ("x/harmless-base-test.jsonl.gz", "harmless-base-test"),
        ("LLMBar/Natural/dataset.json", "natural"),
        ("train.JSONL", "train"),
    ],
)
def test_dataset_stem(path: str, stem: str) -> None:
    assert dataset_stem(path) == stem


@pytest.mark.parametrize("name", ["pairs.jsonl", "nested/dir/pairs.jsonl.gz"])
def test_canonical_round_trip(tmp_path: Path, name: str) -> None:
    pairs = [
        PreferencePair(
            "a",
            "p",
            "c",
            "r",
            source="s",
            tie=False,
            chosen_score=9.0,
            rejected_score=2.5,
            meta={"votes": [1, 1, 0], "ü": "ß"},
        ),
        PreferencePair("b", "p2", "x", "y", source="s2", tie=True),
        PreferencePair("c", "p3", "x", "y", rubric="1. No commas.\n2. All lowercase."),  # a rubric survives
    ]
    out = tmp_path / name
    assert write_pairs_jsonl(pairs, out) == 3
    assert detect_format(out) == "judgerl"
    result = load_pairs(out)
    assert result.format == "judgerl" and result.pairs == pairs
    assert not list(out.parent.glob(".*"))  # no temporary file left behind


@pytest.mark.parametrize("rubric", [3, ["a"], {"1": "x"}, True])
def test_canonical_rubric_must_be_text_or_null(tmp_path: Path, rubric) -> None:
    path = tmp_path / "pairs.jsonl"
    row = {"id": "a", "prompt": "p", "chosen": "c", "rejected": "r", "tie": False, "rubric": rubric}
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "id": "b", "rubric": None}) + "\n")
    with pytest.raises(DataFormatError, match=r"pairs.jsonl.*line 1.*rubric"):
        load_pairs(path)
    for none in (None, "", "  \n"):  # blank is no rubric, as every protocol's build reads it
        path.write_text(json.dumps({**row, "rubric": none}) + "\n")
        assert load_pairs(path).pairs[0].rubric is None


def test_real_data_round_trip(tmp_path: Path, shared_data: Path) -> None:
    original = load_pairs(shared_data / "pandalm" / "testset-v1.json").pairs
    out = tmp_path / "pandalm.jsonl"
    write_pairs_jsonl(original, out)
    assert load_pairs(out).pairs == original


def test_write_rejects_nan_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "bad.jsonl"
    with pytest.raises(ValueError, match="pair 'x' cannot be written as JSON"):
        write_pairs_jsonl(
            [
                PreferencePair("ok", "p", "c", "r"),
                PreferencePair("x", "p", "c", "r", chosen_score=float("nan")),
            ],
            out,
        )
    assert not out.exists() and not list(tmp_path.iterdir())


def test_written_file_gets_the_umask_mode_not_mkstemps_0600(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        out = tmp_path / "pairs.jsonl"
        write_pairs_jsonl([PreferencePair("a", "p", "c", "r")], out)
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644


def test_a_cut_record_names_its_line_and_column(tmp_path: Path) -> None:
    """The column of a JSON error is the record's own (was always 1: the parser saw the line break)."""
    from judgerl.data import DataFormatError

    p = tmp_path / "cut.jsonl"
    p.write_text('{"prompt": "q", "chosen": "a", "rejected": "b"}\n{"prompt": "q2", "chosen": "a",\r\n')
    with pytest.raises(DataFormatError, match=r"line 2: invalid JSON: .*\(column 32\)"):
        load_pairs(p)
