"""A ready TRL reward function for ``trl grpo --reward_funcs judgerl.serve.trl_reward.judge_reward``.

TRL's ``grpo`` script resolves a ``--reward_funcs`` entry that is not one of its own names as a dotted
import path (``module.path.function``: ``importlib.import_module`` + ``getattr``), so the function must
exist at import time with no arguments to configure it. :func:`judge_reward` reads its server from the
environment on first call:

* ``JUDGERL_REWARD_URL`` -- the judgerl reward server (default ``http://127.0.0.1:8000``);
* ``JUDGERL_REFERENCE_COLUMN`` -- dataset column with reference responses (pairwise servers);
* ``JUDGERL_INVALID_AS_NONE=1`` -- None instead of the invalid reward for unparseable judgments.

Each call logs the judge's verdict and reasoning per completion into TRL's completions table (the
``log_extra`` hook GRPOTrainer passes to reward functions), and ``judge/valid_rate`` through ``log_metric``.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

_REWARDS: dict[tuple[str, str | None, bool], Any] = {}


def judge_reward(completions: Sequence[Any], prompts: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
    """TRL reward ``fn(completions, prompts=..., **columns)`` from the judgerl server at ``$JUDGERL_REWARD_URL``
    (:func:`judgerl.serve.client.remote_reward`; system prompts are part of what the judge reads).

    Raises:
        judgerl.serve.client.JudgeClientError: the server failed, or answered the wrong number of rewards.
        KeyError: ``$JUDGERL_REFERENCE_COLUMN`` is not a column of the batch.
        ValueError: no ``prompts``.
    """
    from judgerl.serve.client import remote_reward

    key = (os.environ.get("JUDGERL_REWARD_URL", "http://127.0.0.1:8000"), os.environ.get("JUDGERL_REFERENCE_COLUMN")
           or None, os.environ.get("JUDGERL_INVALID_AS_NONE") == "1")
    if key not in _REWARDS:
        _REWARDS[key] = remote_reward(key[0], reference_column=key[1], invalid_as_none=key[2])
    return _REWARDS[key](completions, prompts=prompts, **kwargs)


__all__ = ["judge_reward"]
