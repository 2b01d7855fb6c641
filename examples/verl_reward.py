"""verl custom reward function that asks a judgerl reward server for the reward.

Start the judge server (its own GPU / machine; the paper-3 setup hosts the judge separately)::

    judgerl serve --model vllm/<judge> --protocol pos --host 0.0.0.0 --port 8000

Point verl at this file (verl's ``custom_reward_function`` config) and keep verl's default reward
manager, ``naive`` (the reward loop, ``reward_model.use_reward_loop=True``, calls it once per response,
concurrently, in a thread pool; ``reward_model.reward_manager=remote`` runs it in separate processes)::

    custom_reward_function.path=examples/verl_reward.py \\
    custom_reward_function.name=compute_score

and set ``JUDGERL_REWARD_URL=http://<judge-host>:8000`` in the trainer's environment.

verl calls ``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...,
**kwargs)``; its GenRM path adds ``reward_router_address`` / ``reward_model_tokenizer``, which this
function accepts and ignores (the judge is the judgerl server). It returns a dict, as verl's reward loop
accepts: ``score`` (the server's reward in [0, 1]; the server's ``--invalid-reward`` for an invalid
judgment), ``judge_valid`` (1.0 / 0.0) and ``judge_reason`` (``""`` when valid) -- the same keys for every
item, which verl stacks into ``reward_extra_info`` arrays, so an invalid judgment is never mistaken for a
real 0.

``compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, **kwargs)`` is the batched
form for verl's legacy ``BatchRewardManager`` (``reward_model.use_reward_loop=False
reward_model.reward_manager=batch``; the reward loop has no ``batch`` manager): one HTTP request per batch.

verl does not pass the prompt to reward functions, so the prompt must be in ``extra_info`` under
``"question"`` or ``"prompt"`` (verl's example preprocessors store ``extra_info["question"]``); an item
without one gets ``judge_reason`` ``"no_prompt"`` and ``$JUDGERL_INVALID_SCORE`` (default 0.0) -- the
others are judged. ``ground_truth`` (a non-empty string) is sent as the reference response, which
pairwise servers (``--protocol pav``) need (an item without one: ``"no_reference"``) and pointwise
servers ignore.
"""

from __future__ import annotations

import os
from typing import Any

from judgerl.serve.client import JudgeClient, JudgeClientError

_CLIENTS: dict[str, JudgeClient] = {}
_KINDS: dict[str, str] = {}


def _client() -> JudgeClient:
    url = os.environ.get("JUDGERL_REWARD_URL", "http://127.0.0.1:8000")
    if url not in _CLIENTS:
        _CLIENTS[url] = JudgeClient(url)
    return _CLIENTS[url]


def _kind(client: JudgeClient) -> str:
    """The server protocol's kind (pairwise / pointwise), asked once per server."""
    if client.url not in _KINDS:
        _KINDS[client.url] = str(client.health().get("kind"))
    return _KINDS[client.url]


def _prompt(extra_info: Any) -> str | None:
    info = extra_info if isinstance(extra_info, dict) else {}
    for key in ("question", "prompt"):
        value = info.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _reference(ground_truth: Any) -> str | None:
    return ground_truth if isinstance(ground_truth, str) and ground_truth.strip() else None


def _invalid(reason: str) -> dict[str, Any]:
    return {"score": float(os.environ.get("JUDGERL_INVALID_SCORE", "0")), "judge_valid": 0.0, "judge_reason": reason}


def _judge(prompts: list[str | None], solutions: list[str], refs: list[str | None]) -> list[dict[str, Any]]:
    client = _client()
    pairwise = _kind(client) == "pairwise"
    out: list[dict[str, Any] | None] = [None] * len(solutions)
    todo = []
    for i, (p, r) in enumerate(zip(prompts, refs)):
        if p is None:
            out[i] = _invalid("no_prompt")
        elif pairwise and r is None:
            out[i] = _invalid("no_reference")
        else:
            todo.append(i)
    if todo:
        sent_refs = [refs[i] for i in todo]
        answer = client.rewards([prompts[i] for i in todo], [solutions[i] for i in todo],  # type: ignore[misc]
                                sent_refs if any(r is not None for r in sent_refs) else None)
        for k, i in enumerate(todo):
            ok = bool(answer["valid"][k])
            out[i] = {"score": float(answer["rewards"][k]), "judge_valid": float(ok),
                      "judge_reason": "" if ok else str((answer.get("reasons") or [None] * len(todo))[k] or "invalid")}
    return out  # type: ignore[return-value]


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None,
                  **kwargs: Any) -> dict[str, Any]:
    """Reward of one response from the judge server (verl's reward-loop signature).

    Returns:
        ``{"score": float, "judge_valid": 1.0 | 0.0, "judge_reason": str}``.

    Raises:
        JudgeClientError: the server failed or answered the wrong number of rewards.
    """
    return _judge([_prompt(extra_info)], [solution_str], [_reference(ground_truth)])[0]


def compute_score_batch(data_sources: list[str], solution_strs: list[str], ground_truths: list[Any],
                        extra_infos: list[dict[str, Any] | None], **kwargs: Any) -> list[dict[str, Any]]:
    """Rewards of a batch of responses in one request (verl's legacy ``BatchRewardManager`` signature);
    one dict per response as in :func:`compute_score`.

    Raises:
        ValueError: the lists differ in length.
        JudgeClientError: the server failed or answered the wrong number of rewards.
    """
    n = len(solution_strs)
    if len(ground_truths) != n or len(extra_infos) != n:
        raise ValueError(f"verl_reward: {n} solutions, {len(ground_truths)} ground truths, {len(extra_infos)} extra_infos")
    return _judge([_prompt(e) for e in extra_infos], list(solution_strs), [_reference(g) for g in ground_truths])


__all__ = ["JudgeClientError", "compute_score", "compute_score_batch"]
