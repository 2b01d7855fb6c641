"""Building a :class:`~judgerl.judge.Judge` from command-line options (``judgerl probe`` / ``arena``)."""

from __future__ import annotations

from typing import Any, List

import typer


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


def make_judge(model: str, protocol: Any, params: Any, *, force_answer: bool, seed: int) -> Any:
    """A judge on ``load_backend(model)`` (no tools)."""
    from judgerl.backends import load_backend
    from judgerl.judge import Judge

    return Judge(protocol, load_backend(model), params, force_answer=force_answer, seed=seed)
