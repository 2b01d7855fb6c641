"""Sources through the `datasets` library: parquet / CSV files, save_to_disk directories, Hub names (offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")

from judgerl.data import DataFormatError, load_pairs  # noqa: E402
from judgerl.data import io as data_io  # noqa: E402

HS3 = [{"domain": "general", "language": "english", "context": [{"role": "user", "content": f"Q{k}"}],
        "response1": f"one {k}", "response2": f"two {k}", "overall_preference": p}
       for k, p in enumerate([-2, 0, 3])]
RB2 = [{"id": "1", "prompt": "P", "chosen": ["c"], "rejected": ["r0", "r1", "r2"], "num_correct": 1,
        "num_incorrect": 3, "total_completions": 4, "models": ["a", "b", "c", "d"], "subset": "Math",
        "additional_metadata": {"x": 1}}]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache", raising=False)


@pytest.mark.parametrize("rows", [HS3, RB2], ids=["helpsteer3", "rewardbench2"])
def test_parquet_jsonl_and_save_to_disk_read_the_same(tmp_path: Path, rows: list[dict]) -> None:
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ds = datasets.Dataset.from_list(rows)
    ds.to_parquet(str(tmp_path / "d.parquet"))
    ds.save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict({"test": ds, "train": ds}).save_to_disk(str(tmp_path / "saved_dict"))
    def strip(pairs):  # ids of records without their own id come from the file / directory name
        return [{k: v for k, v in p.to_dict().items() if k != "id"} for p in pairs]

    want = strip(load_pairs(jsonl).pairs)
    parquet = load_pairs(tmp_path / "d.parquet")
    saved = load_pairs(tmp_path / "saved")
    split = load_pairs(tmp_path / "saved_dict", split="test")
    assert parquet.format == saved.format == split.format == load_pairs(jsonl).format
    for got in (parquet, saved, split):
        assert strip(got.pairs) == want
    assert [p.id for p in parquet.pairs] == [p.id for p in load_pairs(jsonl).pairs]


def test_dataset_dict_needs_a_split_and_errors_name_rows(tmp_path: Path) -> None:
    ds = datasets.Dataset.from_list(HS3)
    datasets.DatasetDict({"test": ds, "train": ds}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(DataFormatError, match=r"has splits \['test', 'train'\]; choose one with --split"):
        load_pairs(tmp_path / "dd")
    with pytest.raises(DataFormatError, match=r"has no split 'dev'"):
        load_pairs(tmp_path / "dd", split="dev")
    bad = [dict(r) for r in HS3]
    bad[2]["overall_preference"] = 9
    datasets.Dataset.from_list(bad).to_parquet(str(tmp_path / "bad.parquet"))
    with pytest.raises(DataFormatError, match=r"bad.parquet row 2: field 'overall_preference' must be one of"):
        load_pairs(tmp_path / "bad.parquet")


def test_csv_with_field_map(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text("question,good,bad\nWhat?,yes,no\n", encoding="utf-8")
    pairs = load_pairs(tmp_path / "p.csv", field_map={"prompt": "question", "chosen": "good", "rejected": "bad"}).pairs
    assert [(p.prompt, p.chosen, p.rejected) for p in pairs] == [("What?", "yes", "no")]


def test_hub_name_offline_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataFormatError) as e:
        load_pairs("allenai/reward-bench-2", split="test")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("allenai/reward-bench-2: is not a local file")
    assert "offline (HF_HUB_OFFLINE=1)" in msg


def test_hub_name_is_passed_split_and_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    seen = {}

    def fake_load(name, config=None, split=None, **kw):
        seen.update(name=name, config=config, split=split)
        return datasets.Dataset.from_list(RB2)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    result = load_pairs("allenai/reward-bench-2", split="test", config="default")
    assert seen == {"name": "allenai/reward-bench-2", "config": "default", "split": "test"}
    assert result.format == "rewardbench2" and len(result.pairs) == 3


def test_plain_directory_and_missing_path(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataFormatError, match="is a directory but not a saved dataset"):
        load_pairs(tmp_path / "empty")
    with pytest.raises(FileNotFoundError):
        list(data_io.iter_source(tmp_path / "nope.jsonl"))
