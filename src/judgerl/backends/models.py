"""Resolve a model name to a backend.

Names are ``provider/name`` (``hf/…``, ``openai/…``, ``vllm/…``), the embedded model's short name
``smollm2-135m``, a trained judge that ships with judgerl (:data:`NAMED_JUDGES`, e.g.
``smollm2-135m-judge``), ``scripted/<outputs.jsonl>`` (replays outputs, for tests) or a local
directory (loaded with the ``hf`` provider). Providers are imported lazily so optional extras are
only needed when used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgerl.backends.base import Backend
from judgerl.backends.embedded import EMBEDDED_NAME, cache_dir, embedded_model_path

PROVIDERS = ("hf", "openai", "vllm", "scripted")

#: Trained judges shipped as LoRA adapters (``judgerl/backends/judges/<name>/``): name -> (base model name,
#: the command that trains and ships the adapter). Merged into the base on first use
#: (:func:`judgerl.backends.named.named_judge_path`).
NAMED_JUDGES: dict[str, tuple[str, str]] = {
    "smollm2-135m-judge": (
        EMBEDDED_NAME,
        "python bench/bench_train_judges.py --out runs/proof --ship tir  (docs/training.md, 'LoRA and the shipped judge')",
    ),
}


def resolve_hf_path(name: str) -> str:
    """The local directory (or hub id) of a transformers model name.

    ``smollm2-135m`` / ``embedded`` (optionally with an ``hf/`` prefix) -> the embedded model's
    cached safetensors directory; a :data:`NAMED_JUDGES` name -> its merged model directory;
    ``hf/<path>`` -> ``<path>``; anything else unchanged. The one place model names are resolved,
    for eval, serve and training alike.

    Raises:
        judgerl.backends.named.JudgeNotBuiltError: a named judge whose adapter is not in the package (the
            message names the command that builds it).
    """
    if name.startswith("hf/"):
        name = name[3:]
    if name in (EMBEDDED_NAME, "embedded"):
        return str(embedded_model_path())
    if name in NAMED_JUDGES:
        from judgerl.backends.named import named_judge_path

        base, command = NAMED_JUDGES[name]
        return str(named_judge_path(name, resolve_hf_path(base), command, cache_dir() / "models"))
    return name


def _provider(model: str) -> tuple[str, str]:
    """``(provider, name)`` of a model spec (see :func:`load_backend`).

    Raises:
        ValueError: unknown provider prefix.
    """
    if model == EMBEDDED_NAME or model in NAMED_JUDGES:
        return "hf", model
    if "/" in model and model.split("/", 1)[0] in PROVIDERS:
        provider, name = model.split("/", 1)
        return provider, name
    if Path(model).exists():
        return "hf", model
    raise ValueError(
        f"Unknown model {model!r}: use {EMBEDDED_NAME}, a local directory, or provider/name "
        f"with provider in {PROVIDERS}"
    )


def backend_name(model: str, **kwargs: Any) -> str:
    """The ``name`` the backend :func:`load_backend` builds for ``model`` will have, without building it
    (no model loads): part of a judge's identity (:func:`judgerl.judge.identity.judge_config`).

    Raises:
        ValueError: unknown provider prefix.
    """
    provider, name = _provider(model)
    if provider == "hf":
        return model if model.startswith("hf/") else f"hf/{name}"
    if provider == "openai":
        return f"openai/{name}"
    if provider == "scripted":
        return str(kwargs.get("name", f"scripted/{name}"))
    return model


def load_backend(model: str, **kwargs: Any) -> Backend:
    """Create the backend for ``model``.

    Args:
        model: ``smollm2-135m``, a :data:`NAMED_JUDGES` name, ``hf/<path-or-id>``,
            ``openai/<model>``, ``vllm/<path>`` or a local directory. Hub ids are passed to
            transformers unchanged (they only work where a hub is
            reachable or the model is already cached).
        **kwargs: Passed to the backend's constructor (e.g. ``batch_size``, ``base_url``).

    Raises:
        ValueError: unknown provider prefix.
        ImportError: the provider's optional extra is not installed (message names the extra).
    """
    provider, name = _provider(model)
    if provider == "hf":
        from judgerl.backends.hf import HFBackend

        backend = HFBackend(resolve_hf_path(name), **kwargs)
        backend.name = backend_name(model)
        return backend
    if provider == "openai":
        try:
            from judgerl.backends.openai import OpenAIBackend
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("The openai backend needs: pip install 'judgerl[openai]'") from e
        return OpenAIBackend(name, **kwargs)
    if provider == "vllm":
        from judgerl.backends.vllm import VLLMBackend

        backend = VLLMBackend(resolve_hf_path(name), **kwargs)
        backend.name = backend_name(model)
        return backend
    if provider == "scripted":
        return load_scripted(name, **kwargs)
    raise ValueError(f"Provider {provider!r} cannot be loaded by name; construct it directly")


def load_scripted(path: str, **kwargs: Any) -> Backend:
    """A :class:`ScriptedBackend` replaying the outputs in a JSONL file, cycled forever.

    Each line is a JSON string (the output) or an object with a ``"text"`` field (optionally
    ``"finish_reason"`` and ``"error"``; ``"text": null`` simulates a null API answer); blank lines
    are skipped. Used as ``--model scripted/<path>`` for fast CLI tests and demos. Outputs are
    replayed by prompt content (``replay="content"``): a prompt's output is a pure function of its
    messages and seed, so resumed runs and other batch sizes replay the same outputs.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a line is not a JSON string / object with a string ``"text"`` (names file:line),
            or the file holds no outputs.
    """
    import json

    from judgerl.backends.scripted import ScriptedBackend

    outputs: list[Any] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as e:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({e})") from e
            if isinstance(item, dict):
                if "text" not in item or not (item["text"] is None or isinstance(item["text"], str)):
                    raise ValueError(f"{path}:{lineno}: field 'text' must be a string or null")
                outputs.append(item)
            elif isinstance(item, str):
                outputs.append(item)
            else:
                raise ValueError(f"{path}:{lineno}: expected a JSON string or an object with a string 'text'")
    if not outputs:
        raise ValueError(f"{path}: no scripted outputs")
    return ScriptedBackend(outputs, name=kwargs.pop("name", f"scripted/{path}"), replay="content", **kwargs)
