"""Building a :class:`~judgerl.judge.Judge` from command-line options, shared by eval, serve, label, probe and
arena: the backend options (``--model-arg KEY=VALUE``, ``--base-url``), the protocol, the sampling parameters.

Each command declares the shared options with the same objects (``model_arg: Optional[List[str]] =
MODEL_ARG_OPTION``), so their names and help read the same everywhere.
"""

from __future__ import annotations

from typing import Any, List

import typer


#: ``--model-arg KEY=VALUE`` (repeatable): keyword arguments of the backend's constructor.
MODEL_ARG_OPTION: Any = typer.Option(
    None, "--model-arg", help="Backend option KEY=VALUE (repeatable; values read as YAML scalars), passed to the "
    "backend: vllm/ e.g. tensor_parallel_size=8 dtype=bfloat16 max_model_len=32768 gpu_memory_utilization=0.85; "
    "hf/ e.g. dtype=bfloat16 batch_size=32; openai/ e.g. max_concurrency=32.")

#: ``--base-url URL``: the endpoint of an ``openai/<model>`` judge.
BASE_URL_OPTION: Any = typer.Option(
    None, "--base-url", help="Endpoint of an openai/<model> judge, e.g. http://gpu-box:8000/v1 (default: "
    "$OPENAI_BASE_URL).")


def backend_kwargs(model: str, model_arg: List[str] | None, base_url: str | None) -> dict[str, Any]:
    """The backend keyword arguments of ``--model-arg`` and ``--base-url``.

    Raises:
        ValueError: a malformed ``KEY=VALUE``, or ``--base-url`` with a model that is not ``openai/...``.
    """
    from judgerl.cli.eval_cmd import parse_protocol_args

    try:
        kwargs = parse_protocol_args(model_arg)
    except ValueError as e:
        raise ValueError(str(e).replace("--protocol-arg", "--model-arg")) from e
    if base_url is not None:
        if not model.startswith("openai/"):
            raise ValueError(f"--base-url only applies to openai/<model> judges, not {model!r}")
        kwargs["base_url"] = base_url
    return kwargs


def load_judge_backend(model: str, model_arg: List[str] | None = None, base_url: str | None = None,
                       **extra: Any) -> Any:
    """``load_backend(model, **--model-arg, base_url=--base-url, **extra)``.

    Raises:
        ValueError: bad options, or an option the backend does not take (names it and the model).
        ImportError: the provider's extra is not installed.
    """
    from judgerl.backends import load_backend

    kwargs = backend_kwargs(model, model_arg, base_url) | extra
    try:
        return load_backend(model, **kwargs)
    except TypeError as e:  # an unknown keyword for this backend's constructor
        raise ValueError(f"--model-arg for {model}: {e}") from e


def make_protocol(protocol: str, protocol_arg: List[str] | None, anti_hacking: bool) -> Any:
    """``get_protocol(protocol, **--protocol-arg)``, with ``anti_hacking=True`` when the flag is set;
    exits 2 with one line on a bad name or option."""
    from judgerl.cli.eval_cmd import parse_protocol_args
    from judgerl.protocols import get_protocol

    try:
        kwargs = parse_protocol_args(protocol_arg)
        if anti_hacking:
            kwargs["anti_hacking"] = True
        return get_protocol(protocol, **kwargs)
    except (ValueError, TypeError) as e:
        typer.echo(f"error: --protocol {protocol}: {e}", err=True)
        raise SystemExit(2) from e


def make_params(max_new_tokens: int, temperature: float | None, top_p: float, samples: int) -> Any:
    """Sampling parameters (temperature default: 0 for one sample, 0.7 for several); exits 2 on bad values."""
    from judgerl.backends import SamplingParams

    temp = temperature if temperature is not None else (0.0 if samples == 1 else 0.7)
    try:
        return SamplingParams(max_new_tokens=max_new_tokens, temperature=temp, top_p=top_p)
    except ValueError as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(2) from e


def make_judge(model: str, protocol: Any, params: Any, *, force_answer: bool, seed: int,
               model_arg: List[str] | None = None, base_url: str | None = None) -> Any:
    """A judge on :func:`load_judge_backend` (no tools)."""
    from judgerl.judge import Judge

    return Judge(protocol, load_judge_backend(model, model_arg, base_url), params, force_answer=force_answer, seed=seed)
