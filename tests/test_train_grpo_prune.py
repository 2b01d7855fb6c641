"""prune_checkpoints: a finished run's resume-only checkpoints go, nothing else does."""

from pathlib import Path

from judgerl.train.grpo import prune_checkpoints


def test_prune_removes_only_checkpoint_dirs(tmp_path: Path):
    for d in ("checkpoint-1", "checkpoint-20", "round-0/grpo/checkpoint-3", "final", "sft", "checkpoint-notes"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "model.safetensors").write_bytes(b"x" * 10)
    (tmp_path / "checkpoint-9").write_text("a file, not a checkpoint")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "w").write_bytes(b"y" * 7)
    (tmp_path / "checkpoint-5").symlink_to(outside)
    assert prune_checkpoints(tmp_path) == 30
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_dir() and not p.is_symlink())
    assert left == ["checkpoint-notes", "final", "round-0", "round-0/grpo", "sft"]
    assert (tmp_path / "checkpoint-9").is_file() and (outside / "w").is_file()
    assert prune_checkpoints(tmp_path / "missing") == 0
