"""bench/run_snapshot.py: what a snapshot keeps, and a restore that resumes where the run stopped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import run_snapshot  # noqa: E402


def _run_dir(out: Path) -> None:
    (out / "stages").mkdir(parents=True)
    (out / "stages" / "sft_distill.json").write_text(json.dumps({"result": {"sft_model": str(out / "train/d/sft")}}))
    sft = out / "train" / "d" / "sft"
    (sft / "adapter").mkdir(parents=True)
    (sft / "adapter" / "adapter_model.safetensors").write_bytes(b"\0" * (run_snapshot.MAX_FILE_BYTES + 1))
    (sft / "adapter" / "adapter_config.json").write_text("{}")
    (sft / "done.json").write_text('{"steps": 2}')
    (sft / "model.safetensors").write_bytes(b"merged")
    (sft / "tokenizer.json").write_text("{}")
    (out / "train" / "d" / "checkpoint-10").mkdir()
    (out / "train" / "d" / "checkpoint-10" / "optimizer.pt").write_bytes(b"x")
    (out / "train" / "d" / "big.bin").write_bytes(b"\0" * (run_snapshot.MAX_FILE_BYTES + 1))
    (out / "train" / "old").mkdir()
    (out / "train" / "old" / "note.txt").write_text("left out")


def test_save_keeps_records_and_adapters_and_drops_what_is_rebuilt(tmp_path: Path) -> None:
    out, snap = tmp_path / "run", tmp_path / "snap"
    _run_dir(out)
    manifest = run_snapshot.save(out, snap, exclude=("train/old/*",))
    kept = sorted(str(p.relative_to(snap)) for p in snap.rglob("*") if p.is_file())
    assert kept == ["snapshot.json", "stages/sft_distill.json", "train/d/sft/adapter/adapter_config.json",
                    "train/d/sft/adapter/adapter_model.safetensors", "train/d/sft/done.json"]
    assert manifest["out"] == str(out.resolve()) and manifest["files"] == 4


def test_a_second_save_replaces_the_snapshot_but_keeps_its_readme(tmp_path: Path) -> None:
    out, snap = tmp_path / "run", tmp_path / "snap"
    _run_dir(out)
    run_snapshot.save(out, snap)
    (snap / "README.md").write_text("# what this snapshot is, and its commands\n")
    (snap / "stale.json").write_text("{}")  # a file of the earlier snapshot the run no longer has
    run_snapshot.save(out, snap)
    assert (snap / "README.md").read_text() == "# what this snapshot is, and its commands\n"
    assert not (snap / "stale.json").exists() and (snap / "stages" / "sft_distill.json").is_file()


def test_restore_rewrites_paths_rebuilds_merged_models_and_keeps_existing_files(tmp_path: Path) -> None:
    out, snap, new = tmp_path / "run", tmp_path / "snap", tmp_path / "elsewhere" / "run"
    _run_dir(out)
    run_snapshot.save(out, snap)
    (new / "stages").mkdir(parents=True)
    (new / "stages" / "other.json").write_text("mine")
    merged = []

    def fake_merge(base: str, adapter: Path, model_dir: Path) -> None:
        merged.append((adapter, model_dir))
        (model_dir / "model.safetensors").write_bytes(b"rebuilt")

    rebuilt = run_snapshot.restore(snap, new, base=str(tmp_path), merge=fake_merge)
    sft = new / "train" / "d" / "sft"
    assert rebuilt == [sft] and merged == [(sft / "adapter", sft)]
    record = json.loads((new / "stages" / "sft_distill.json").read_text())
    assert record["result"]["sft_model"] == str(new.resolve() / "train/d/sft")
    assert (new / "stages" / "other.json").read_text() == "mine"
    assert not (new / "snapshot.json").exists()
    assert run_snapshot.restore(snap, new, base=str(tmp_path), merge=fake_merge) == []  # nothing left to rebuild


def test_restore_refuses_a_directory_that_is_no_snapshot(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="snapshot.json"):
        run_snapshot.restore(tmp_path, tmp_path / "out")
