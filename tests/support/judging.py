"""Test helpers: build a Judge and run an eval in one call."""

from __future__ import annotations

from typing import Any

from judgerl.backends import SamplingParams
from judgerl.eval import run_eval
from judgerl.judge import Judge


def ev(backend: Any, protocol: Any, pairs: Any, out_dir: Any, *, params: SamplingParams | None = None,
       seed: int = 0, sandbox: Any = None, max_tool_rounds: int = 3, force_answer: bool = False,
       samples: int = 1, **kwargs: Any) -> dict:
    """``run_eval`` on ``Judge(protocol, backend, params, ...)`` (the default params of the CLI:
    512 new tokens, temperature 0 for one sample and 0.7 for several)."""
    if params is None:
        params = SamplingParams(max_new_tokens=512, temperature=0.0 if samples == 1 else 0.7)
    judge = Judge(protocol, backend, params, sandbox=sandbox, max_tool_rounds=max_tool_rounds,
                  force_answer=force_answer, seed=seed)
    return run_eval(judge, pairs, out_dir, samples=samples, **kwargs)
