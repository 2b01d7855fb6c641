"""Trained judges that ship with judgerl as small LoRA adapters, and the one LoRA merge.

A named judge (e.g. ``smollm2-135m-judge``, registered in
:data:`judgerl.backends.models.NAMED_JUDGES`) is a base model name plus a ``peft`` LoRA adapter
(Hu et al., 2021) stored as package data in ``judgerl/backends/judges/<name>/`` (``adapter_config.json`` +
``adapter_model.safetensors``, a few MB). On first use :func:`named_judge_path` merges the adapter
into the base weights (W + alpha/r · B A, by ``peft``'s ``merge_and_unload``) and caches the merged
model in ``$JUDGERL_CACHE/models/<name>``; every backend (hf, vllm) then loads a plain model
directory. The cache records the adapter's SHA-256, so a new adapter is merged again.

A missing adapter is an error that names the command building it -- never a silent fallback to the
base model.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
_STAMP = "adapter.sha256"


class JudgeNotBuiltError(FileNotFoundError):
    """A named judge's adapter is not in the package (the message names the command that builds it)."""


def package_adapter_dir(name: str) -> Path:
    """``judgerl/backends/judges/<name>/`` (package data; may hold no adapter yet)."""
    return Path(str(resources.files("judgerl.backends") / "judges" / name))


def adapter_digest(adapter_dir: str | Path) -> str:
    """SHA-256 over the adapter files (config + weights), hex."""
    h = hashlib.sha256()
    for f in ADAPTER_FILES:
        h.update((Path(adapter_dir) / f).read_bytes())
    return h.hexdigest()


def merge_adapter(base_path: str | Path, adapter_dir: str | Path, dest: str | Path) -> Path:
    """Merge a LoRA adapter into its base model and save the result (+ tokenizer) to ``dest``.

    Writes to a temporary directory beside ``dest`` and renames it into place, so an interrupted
    merge never leaves a half-written model; ``dest`` is replaced if it exists.

    Args:
        base_path: The base model directory (what the adapter was trained on).
        adapter_dir: A ``peft`` adapter directory (``adapter_config.json``, weights).
        dest: Output model directory (loadable with ``AutoModelForCausalLM.from_pretrained``).

    Returns:
        ``dest`` as a Path.

    Raises:
        ImportError: ``peft`` is not installed (``pip install 'judgerl[train]'``).
        FileNotFoundError: an adapter file is missing.
    """
    try:
        from peft import PeftModel
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("merging a LoRA judge needs peft: pip install 'judgerl[train]'") from e
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    adapter_dir, dest = Path(adapter_dir), Path(dest)
    for f in ADAPTER_FILES:
        if not (adapter_dir / f).is_file():
            raise FileNotFoundError(f"{adapter_dir}: missing {f}")
    base = AutoModelForCausalLM.from_pretrained(str(base_path), dtype=torch.float32)
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    tok_src = adapter_dir if (adapter_dir / "tokenizer_config.json").is_file() else Path(base_path)
    tokenizer = AutoTokenizer.from_pretrained(str(tok_src))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        merged.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / _STAMP).write_text(adapter_digest(adapter_dir) + "\n")
        os.chmod(tmp, 0o755)
        if dest.exists():
            shutil.rmtree(dest)
        os.rename(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def named_judge_path(name: str, base_path: str | Path, build_command: str, cache_root: str | Path) -> Path:
    """The merged model directory of the named judge ``name``, merging its shipped adapter on first use.

    Args:
        name: The judge's name (its package-data folder and cache folder).
        base_path: The base model directory its adapter applies to.
        build_command: The documented command that trains and ships the adapter (for the error).
        cache_root: Where merged models are cached (``$JUDGERL_CACHE/models``).

    Raises:
        JudgeNotBuiltError: the package holds no adapter for ``name``.
        ImportError: ``peft`` is missing and the merge is needed.
    """
    adapter = package_adapter_dir(name)
    if not all((adapter / f).is_file() for f in ADAPTER_FILES):
        raise JudgeNotBuiltError(
            f"the trained judge {name!r} is not built: {adapter} holds no LoRA adapter "
            f"({', '.join(ADAPTER_FILES)}). Build and ship it with: {build_command}"
        )
    target = Path(cache_root) / name
    stamp = target / _STAMP
    if (target / "model.safetensors").is_file() and stamp.is_file() and stamp.read_text().strip() == adapter_digest(adapter):
        return target
    return merge_adapter(base_path, adapter, target)


__all__ = ["ADAPTER_FILES", "JudgeNotBuiltError", "adapter_digest", "merge_adapter", "named_judge_path",
           "package_adapter_dir"]
