"""Carry a resumable run directory across machines whose disk does not persist (a session's ``runs/`` is gone
at the next one): a **snapshot** is the part of a run directory that is expensive to recompute and small enough
to commit -- stage records, options, data, evaluations, metrics, figures and the LoRA adapter of every finished
training phase -- and a **restore** puts it back and rebuilds each merged model from its adapter, so that
``bench/bench_generalise.py`` / ``bench/bench_judge_as_reward.py`` rerun with the same command skip what was
finished and continue at the next stage.

Kept: every file of at most :data:`MAX_FILE_BYTES`, and everything under an ``adapter/`` directory. Left out:
resume-only checkpoints (``checkpoint-*``), merged weights (``model.safetensors``: rebuilt from the adapter) and
``tokenizer.json`` (copied from the base model by the merge). Absolute paths of the run directory inside the
kept text files (stage records name their model directories) are rewritten to the restored directory.

Usage::

    python bench/run_snapshot.py save runs/generalise results/generalise        # then git add results/generalise
    python bench/run_snapshot.py restore results/generalise runs/generalise     # then rerun the bench command
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import sys
from pathlib import Path
from typing import Callable

#: Largest file kept outside an ``adapter/`` directory (bytes).
MAX_FILE_BYTES = 2 * 1024 * 1024
#: Files never kept (rebuilt on restore).
DROPPED = ("model.safetensors", "tokenizer.json")
#: Text files whose run-directory paths are rewritten on restore.
TEXT_SUFFIXES = (".json", ".jsonl", ".txt", ".md", ".yaml")
MANIFEST = "snapshot.json"


def _kept(path: Path, rel: Path, exclude: tuple[str, ...] = ()) -> bool:
    parts = rel.parts
    if any(p.startswith("checkpoint-") for p in parts) or any(fnmatch.fnmatch(str(rel), g) for g in exclude):
        return False
    if "adapter" in parts[:-1]:
        return True
    return path.name not in DROPPED and path.stat().st_size <= MAX_FILE_BYTES


def save(out: Path, dest: Path, exclude: tuple[str, ...] = ()) -> dict:
    """Copy the kept files of run directory ``out`` into ``dest`` (replacing an earlier snapshot there; a
    hand-written ``dest/README.md`` that ``out`` lacks is kept: it describes the snapshot and its commands).

    Args:
        out: The run directory.
        dest: The snapshot directory (replaced).
        exclude: ``fnmatch`` patterns of paths relative to ``out`` left out as well (for example the adapters
            of finished phases nothing resumes from any more: ``train/zero/rounds/round-0/*``).

    Returns:
        The manifest (``out``: the absolute run directory, ``files``: count, ``bytes``: total), also
        written to ``dest/snapshot.json``.

    Raises:
        FileNotFoundError: ``out`` is not a directory.
    """
    out = out.resolve()
    if not out.is_dir():
        raise FileNotFoundError(f"{out}: no run directory to snapshot")
    readme = dest / "README.md"
    kept_readme = readme.read_bytes() if readme.is_file() and not (out / "README.md").is_file() else None
    if dest.exists():
        shutil.rmtree(dest)
    n, size = 0, 0
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out)
        if path.is_file() and not path.is_symlink() and _kept(path, rel, tuple(exclude)):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            n, size = n + 1, size + path.stat().st_size
    if kept_readme is not None:
        dest.mkdir(parents=True, exist_ok=True)
        readme.write_bytes(kept_readme)
    manifest = {"out": str(out), "files": n, "bytes": size}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _merge(base: str, adapter: Path, dest: Path) -> None:
    """Rebuild ``dest/model.safetensors`` (+ tokenizer) from ``dest/adapter`` without touching dest's other files."""
    from judgerl.backends.named import merge_adapter

    staging = dest.parent / f".{dest.name}-merged"
    merge_adapter(base, adapter, staging)
    for f in staging.iterdir():
        if not (dest / f.name).exists():
            shutil.move(str(f), str(dest / f.name))
    shutil.rmtree(staging, ignore_errors=True)


def restore(src: Path, out: Path, *, base: str = "smollm2-135m",
            merge: Callable[[str, Path, Path], None] | None = None) -> list[Path]:
    """Copy snapshot ``src`` into run directory ``out`` (files already there are kept), rewrite the old run
    directory's absolute path in the text files to ``out``'s, and rebuild the merged model of each directory
    that holds an ``adapter/`` but no ``model.safetensors``.

    Args:
        src: A snapshot written by :func:`save`.
        out: The run directory to restore into (created).
        base: The base model name or directory the adapters were trained on.
        merge: ``merge(base_dir, adapter_dir, model_dir)`` (tests pass a fake; default merges with peft).

    Returns:
        The model directories rebuilt.

    Raises:
        FileNotFoundError: ``src`` has no ``snapshot.json``.
    """
    manifest_file = src / MANIFEST
    if not manifest_file.is_file():
        raise FileNotFoundError(f"{src}: no {MANIFEST}; not a snapshot written by run_snapshot.py save")
    old = json.loads(manifest_file.read_text())["out"]
    out.mkdir(parents=True, exist_ok=True)
    new = str(out.resolve())
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        target = out / rel
        if not path.is_file() or rel == Path(MANIFEST) or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix in TEXT_SUFFIXES and old != new:
            target.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
        else:
            shutil.copy2(path, target)
    from judgerl.backends.models import resolve_hf_path

    rebuilt = []
    for adapter in sorted(out.rglob("adapter")):
        model_dir = adapter.parent
        if adapter.is_dir() and not (model_dir / "model.safetensors").exists() \
                and not any(p.startswith("checkpoint-") for p in model_dir.relative_to(out).parts):
            (merge or _merge)(str(resolve_hf_path(base)), adapter, model_dir)
            rebuilt.append(model_dir)
    return rebuilt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save", help="run directory -> snapshot")
    s.add_argument("out", type=Path)
    s.add_argument("dest", type=Path)
    s.add_argument("--exclude", action="append", default=[], help="fnmatch pattern of a relative path to leave out")
    r = sub.add_parser("restore", help="snapshot -> run directory (merged models rebuilt)")
    r.add_argument("src", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--base", default="smollm2-135m", help="the base model the adapters were trained on")
    args = ap.parse_args(argv)
    if args.cmd == "save":
        m = save(args.out, args.dest, tuple(args.exclude))
        print(f"snapshot {args.dest}: {m['files']} files, {m['bytes'] / 2**20:.1f} MiB")
    else:
        for d in restore(args.src, args.out, base=args.base):
            print(f"rebuilt {d}")
        print(f"restored {args.src} -> {args.out}: rerun the bench command with --out {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
