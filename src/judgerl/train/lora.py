"""LoRA training with ``peft`` and saving trained judges (full weights, or merged + adapter).

With ``lora.r > 0`` a recipe trains a LoRA adapter (Hu et al., 2021: W + alpha/r · B A with rank-r
B, A; base weights frozen) on every stage (SFT and GRPO continue the same adapter). Each saved model
directory is then a *merged* model (loadable by every backend, evaluated like any checkpoint) with
the adapter alone in ``<dir>/adapter`` (a few MB: what a shipped judge stores; see
:mod:`judgerl.backends.named`).
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

#: The adapter's sub-directory inside a saved model directory.
ADAPTER_DIR = "adapter"


def linear_names(model: Any) -> list[str]:
    """Names (last component) of the ``nn.Linear`` modules inside the decoder blocks of ``model``
    (what ``all-linear`` means, as an explicit list ``peft`` accepts with ``layers_to_transform``)."""
    import torch

    return sorted({name.rsplit(".", 1)[-1] for name, m in model.named_modules()
                   if isinstance(m, torch.nn.Linear) and ".layers." in name})


def peft_config(lora: Any, n_layers: int | None = None, linear: list[str] | None = None) -> Any:
    """A ``peft.LoraConfig`` for the recipe's ``lora`` section, or None when ``lora.r`` is 0.

    Args:
        lora: The :class:`~judgerl.train.config.LoraConfig` section.
        n_layers: The model's number of decoder blocks (needed when ``lora.top_layers`` is set).
        linear: The model's :func:`linear_names` (replaces ``all-linear`` with ``top_layers``).

    Raises:
        ImportError: ``peft`` is not installed (``pip install 'judgerl[train]'``).
        ValueError: ``top_layers`` exceeds ``n_layers`` (or ``n_layers`` is unknown).
    """
    if not lora.r:
        return None
    try:
        from peft import LoraConfig
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("lora.r > 0 needs peft: pip install 'judgerl[train]'") from e
    layers, targets = None, lora.target_modules
    if lora.top_layers:
        if n_layers is None or not 0 < lora.top_layers <= n_layers:
            raise ValueError(f"lora.top_layers={lora.top_layers}: the model has {n_layers} decoder blocks")
        layers = list(range(n_layers - int(lora.top_layers), n_layers))
        if targets == "all-linear":
            if not linear:
                raise ValueError("lora.top_layers with target_modules all-linear needs the model's linear layer names")
            targets = list(linear)
    return LoraConfig(r=int(lora.r), lora_alpha=int(lora.alpha), lora_dropout=float(lora.dropout),
                      target_modules=targets, task_type="CAUSAL_LM", bias="none",
                      layers_to_transform=layers)


def is_peft(model: Any) -> bool:
    """Whether ``model`` is a ``peft`` model (without importing peft when it is not installed)."""
    return type(model).__module__.startswith("peft.")


@contextmanager
def merged_for_generation(model: Any) -> Iterator[Any]:
    """Run generation on merged weights W + alpha/r · B A, leaving the trained adapter bit-exact.

    Inside the block every LoRA layer of a ``peft`` model computes ``base_layer(x)`` with the
    merged weight instead of ``W x + scale · B(A x)`` (two extra matmuls and a dropout module per
    adapted linear). The merge is ``peft``'s own (``merge_adapter(safe_merge=True)``, with its
    NaN check); the base weights are copied first, and on exit (also after an exception) each base parameter gets
    its copy back and the layers are marked unmerged, so the base weights are restored bit for bit whether peft
    merges into a new tensor (0.21) or in place (0.22) — unlike ``merge_adapter()`` / ``unmerge_adapter()``
    (W + Δ - Δ ≠ W in floating point, a drift that would grow over training steps). Memory: one or two extra
    copies of the adapted base weights while the block runs. A model that is not a ``peft`` model is yielded unchanged.

    Use for generation only (under ``torch.no_grad``): the LoRA parameters get no gradient from
    what runs inside. Merged outputs equal unmerged ones up to floating-point rounding (fp32:
    logits within ~1e-5; see docs/training.md, "Rollouts on merged weights").

    Raises:
        RuntimeError: the adapter is already merged (a merge inside a merge would not restore).
        ValueError: a LoRA variant (DoRA, ...: its merge caches state this restore would not
            undo), or from ``peft`` when merging is impossible (GPTQ, replicated layers) or the
            merged weights hold NaNs (the model is restored first).
    """
    if not is_peft(model):
        yield model
        return
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [m for m in model.modules() if isinstance(m, BaseTunerLayer)]
    if any(m.merged for m in layers):
        raise RuntimeError("merged_for_generation: the LoRA adapter is already merged into the base weights")
    variants = sorted({type(v).__name__ for m in layers for v in getattr(m, "lora_variant", {}).values()})
    if variants:
        raise ValueError(f"merged_for_generation: plain LoRA only, the adapter uses {variants}")
    # a copy, not the tensor itself: peft 0.21 merged into a new tensor, peft 0.22 merges in place (CI, stop 44)
    saved = [(p, p.data.clone()) for m in layers for p in m.get_base_layer().parameters(recurse=False)]
    try:
        model.merge_adapter(safe_merge=True)
        yield model
    finally:
        for p, data in saved:
            p.data = data
        for m in layers:
            m.merged_adapters.clear()


def wrap(model: Any, lora: Any, adapter_dir: str | Path | None = None) -> Any:
    """``model`` with a trainable LoRA adapter: a fresh one, or the one saved in ``adapter_dir``
    (continuing a run); unchanged when ``lora.r`` is 0.

    Raises:
        ImportError: ``peft`` is not installed.
    """
    if not lora.r:
        return model
    cfg = peft_config(lora, getattr(model.config, "num_hidden_layers", None), linear_names(model))
    if cfg is None or is_peft(model):
        return model
    from peft import PeftModel, get_peft_model

    if adapter_dir is not None:
        return PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=True)
    return get_peft_model(model, cfg)


def save_trained(model: Any, tokenizer: Any, dest: str | Path, base_path: str | Path) -> Path:
    """Save a trained judge to ``dest``: full weights, or for a ``peft`` model the adapter in
    ``dest/adapter`` and the merged model in ``dest`` (the training model is not modified).

    Call on the main process only.

    Returns:
        ``dest`` as a Path.
    """
    dest = Path(dest)
    if not is_peft(model):
        model.save_pretrained(dest)
        tokenizer.save_pretrained(dest)
        return dest
    from judgerl.backends.named import merge_adapter

    staging = dest.parent / f".{dest.name}-adapter"
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    merge_adapter(base_path, staging, dest)
    shutil.move(str(staging), str(dest / ADAPTER_DIR))
    return dest
