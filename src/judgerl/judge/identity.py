"""A judge's identity as JSON, computable before any model loads.

:func:`judge_config` is the one definition of what makes two judges give the same judgments (model
name, protocol with its options, sampling, tools, forcing). :meth:`judgerl.judge.core.Judge.config`
returns it for a built judge; :meth:`judgerl.judge.options.JudgeOptions.identity` returns the same dict
from a command's options alone, so ``judgerl eval`` can refuse to resume into a run directory that holds
another judge's run *before* it spends the model load (seconds to minutes).
"""

from __future__ import annotations

from typing import Any

from judgerl.protocols.base import JudgeProtocol
from judgerl.backends.base import SamplingParams


def judge_config(model: str, protocol: JudgeProtocol, params: SamplingParams, *, tools: bool,
                 max_tool_rounds: int, force_answer: bool) -> dict[str, Any]:
    """The identity of a judge as a JSON-serialisable dict.

    Args:
        model: The backend's name (``hf/<path>``, ``openai/<model>``, ...:
            :func:`judgerl.backends.models.backend_name`).
        protocol: The judge's protocol (its name, kind and :meth:`~JudgeProtocol.options`).
        params: Sampling parameters.
        tools: Whether the judge runs code; ``max_tool_rounds`` is recorded only then.
        force_answer: Whether an unanswered judgment is forced.

    Returns:
        ``{"model", "protocol", "sampling", "tools", "max_tool_rounds", "force_answer"}``.
    """
    proto: dict[str, Any] = {"name": protocol.name, "kind": protocol.kind, **dict(sorted(protocol.options().items()))}
    return {
        "model": model,
        "protocol": proto,
        "sampling": {"max_new_tokens": params.max_new_tokens, "temperature": params.temperature,
                     "top_p": params.top_p, "stop": list(params.stop)},
        "tools": "python" if tools else None,
        "max_tool_rounds": max_tool_rounds if tools else None,
        "force_answer": force_answer,
    }


__all__ = ["judge_config"]
