"""verl custom reward function that asks a judgerl reward server for the reward.

Start the judge server (its own GPU / machine; the paper-3 setup hosts the judge separately)::

    judgerl serve --model vllm/<judge> --protocol pos --host 0.0.0.0 --port 8000

Point verl at this file (verl's ``custom_reward_function`` config)::

    custom_reward_function.path=examples/verl_reward.py \\
    custom_reward_function.name=compute_score

and set ``JUDGERL_REWARD_URL=http://<judge-host>:8000`` in the trainer's environment.

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info)`` once per response
(NaiveRewardManager); with ``reward_model.reward_manager=batch`` it calls the batched form
``compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos)``; point
``custom_reward_function.name`` at that one to send one HTTP request per batch (the server then
gathers the whole batch into generation batches).

verl does not pass the prompt to reward functions, so the prompt must be in ``extra_info`` under
``"question"`` or ``"prompt"`` (verl's example preprocessors store ``extra_info["question"]``).
``ground_truth`` is sent as the reference response, which pairwise servers (``--protocol pav``)
need and pointwise servers ignore. The reward is the server's normalised score in [0, 1]
(invalid judgments get the server's ``--invalid-reward``).
"""

from __future__ import annotations

import os
from typing import Any

from judgerl.serve.client import JudgeClient

_CLIENTS: dict[str, JudgeClient] = {}


def _client() -> JudgeClient:
    url = os.environ.get("JUDGERL_REWARD_URL", "http://127.0.0.1:8000")
    if url not in _CLIENTS:
        _CLIENTS[url] = JudgeClient(url)
    return _CLIENTS[url]


def _prompt(extra_info: dict[str, Any] | None) -> str:
    info = extra_info or {}
    for key in ("question", "prompt"):
        value = info.get(key)
        if isinstance(value, str) and value:
            return value
    raise KeyError(
        "verl_reward needs the prompt in extra_info['question'] or extra_info['prompt'] "
        f"(extra_info keys: {sorted(info)})"
    )


def _reference(ground_truth: Any) -> str | None:
    return ground_truth if isinstance(ground_truth, str) and ground_truth else None


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None) -> float:
    """Reward of one response in [0, 1] from the judge server (verl's per-sample signature)."""
    out = _client().rewards([_prompt(extra_info)], [solution_str], [_reference(ground_truth)])
    return float(out["rewards"][0])


def compute_score_batch(
    data_sources: list[str],
    solution_strs: list[str],
    ground_truths: list[Any],
    extra_infos: list[dict[str, Any] | None],
    **kwargs: Any,
) -> list[float]:
    """Rewards of a batch of responses in one request (verl's BatchRewardManager signature)."""
    refs = [_reference(g) for g in ground_truths]
    out = _client().rewards(
        [_prompt(e) for e in extra_infos], list(solution_strs), refs if any(r is not None for r in refs) else None
    )
    return [float(r) for r in out["rewards"]]
