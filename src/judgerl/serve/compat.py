"""Adapters for RL frameworks that send templated full texts (OpenRLHF ``--remote_rm_url`` /
``--reward.remote_url``).

OpenRLHF posts ``query`` = the policy's chat-templated prompt followed by the response, and
``prompts`` = the templated prompt alone. The judge wants the plain instruction and the plain
response, so the prompt is split off and the chat-template markup removed
(:mod:`judgerl.serve.chat_markup`: the policy tokenizer's own markers with ``--policy-tokenizer``,
else the common template families).

Every item stands alone (:func:`openrlhf_rewards`): a query that does not start with its prompt
(OpenRLHF left-truncates long prompts, so the query no longer starts with the prompt) or a pairwise
item without a reference gets the invalid reward and its reason; the other items are judged. Never a
4xx for the whole batch: OpenRLHF retries a failed request 5 times and then crashes the step (v0.9)
or leaves the rewards None (v0.11).
"""

from __future__ import annotations

from typing import Any, Sequence

from judgerl.serve.chat_markup import (
    DEFAULT_STRIP_TOKENS,
    KNOWN_MARKUPS,
    ChatMarkup,
    clean_response,
    untemplate_prompt,
)

__all__ = ["DEFAULT_STRIP_TOKENS", "clean_response", "openrlhf_rewards", "split_query", "untemplate_prompt"]

#: Per-item flags in ``extra_logs`` (floats, the same keys in every answer: OpenRLHF turns each into a
#: tensor and merges answers key by key).
FLAG_KEYS = {"bad_query": "judge_bad_query", "no_reference": "judge_no_reference"}


def split_query(query: str, prompt: str, strip_tokens: Sequence[str] = DEFAULT_STRIP_TOKENS,
                markups: Sequence[ChatMarkup] = KNOWN_MARKUPS) -> tuple[str, str]:
    """Split an OpenRLHF ``query`` (templated prompt + response) into (instruction, response).

    Leading / trailing whitespace around the prompt is tolerated.

    Raises:
        ValueError: ``query`` does not start with ``prompt`` (the message shows both beginnings).
    """
    for q in (query, query.lstrip()):
        for p in (prompt, prompt.strip()):
            if p and q.startswith(p):
                return untemplate_prompt(p, markups), clean_response(q[len(p):], strip_tokens)
    raise ValueError(
        f"query does not start with its prompt (a left-truncated prompt?): query begins {query[:60]!r}, "
        f"prompt begins {prompt[:60]!r}"
    )


def reference_label(label: Any) -> str | None:
    """A label usable as a reference answer: a non-blank string (OpenRLHF's default label is ``""``)."""
    return label if isinstance(label, str) and label.strip() else None


async def openrlhf_rewards(service: Any, req: Any, gone: Any = None) -> dict[str, Any]:
    """OpenRLHF remote reward on a :class:`~judgerl.serve.service.JudgeService`: split each query into
    prompt + response, then :meth:`~judgerl.serve.service.JudgeService.rewards` on the items that split.

    Args:
        service: The service (its config gives ``strip_tokens``, ``chat_markups``, ``invalid_reward``).
        req: An :class:`~judgerl.serve.schemas.OpenRLHFRequest`.
        gone: The client's disconnect check.

    Returns:
        ``{"rewards", "scores", "extra_logs", "reasons", "errors"}``: one entry per query. ``extra_logs``
        holds floats only (``judge_valid``, ``judge_bad_query``, ``judge_no_reference``, and
        ``audit_flagged`` with audit flags on); ``reasons`` the invalid reason per item (None when
        valid), ``errors`` a message for items that could not be judged.
    """
    from judgerl.serve.schemas import RewardItem

    cfg = service.config
    n = len(req.query)
    pairwise = service.protocol.kind == "pairwise"
    reasons: list[str | None] = [None] * n
    errors: list[str | None] = [None] * n
    items, where = [], []
    for i, (q, p) in enumerate(zip(req.query, req.prompts or [])):
        try:
            prompt, response = split_query(q, p, cfg.strip_tokens, cfg.chat_markups)
        except ValueError as e:
            reasons[i], errors[i] = "bad_query", f"query[{i}]: {e}"
            continue
        ref = reference_label(req.labels[i]) if req.labels is not None else None
        if pairwise and ref is None:
            reasons[i] = "no_reference"
            errors[i] = (f"query[{i}]: this server's protocol {service.protocol.name!r} is pairwise and judges each "
                         "response against labels[i]; the label is empty")
            continue
        items.append(RewardItem(prompt=prompt, response=response, reference=ref))
        where.append(i)
    for r in reasons:
        if r is not None:
            service.counts[f"openrlhf:{r}"] += 1
    rewards = [cfg.invalid_reward] * n
    valid = [False] * n
    flagged = [False] * n
    if items:
        out = await service.rewards(items, gone)
        for k, i in enumerate(where):
            rewards[i], valid[i] = out["rewards"][k], out["valid"][k]
            reasons[i], errors[i] = out["reasons"][k], out["errors"][k]
            flagged[i] = bool(out.get("flags", [None] * len(items))[k])
    logs = {"judge_valid": [float(v) for v in valid]}
    logs |= {key: [float(r == reason) for r in reasons] for reason, key in FLAG_KEYS.items()}
    if cfg.audit_flags:
        logs["audit_flagged"] = [float(f) for f in flagged]
    return {"rewards": rewards, "scores": list(rewards), "extra_logs": logs, "reasons": reasons, "errors": errors}
