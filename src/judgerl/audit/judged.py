"""Reward-hacking flags of responses under judgment, for the outputs of ``judgerl eval`` and ``serve``.

A judge's numbers mean little when the responses it judged hack it. :func:`audit_pairs` flags both
responses of every evaluated pair (:func:`judgerl.audit.flag_response` with the pair's prompt) and
counts them per kind; ``judgerl eval`` stores the result in ``summary.json["audit"]`` and lists the
flagged responses in ``report.md``. The reward server flags each ``/v1/rewards`` item the same way.
"""

from __future__ import annotations

from typing import Any, Sequence

from judgerl.audit.audit import KINDS, audit_texts
from judgerl.types import PreferencePair

ROLES = ("chosen", "rejected")


def _counts(flags: Sequence[Sequence[str]]) -> dict[str, int]:
    out = {k: sum(k in f for f in flags) for k in KINDS}
    out["any"] = sum(bool(f) for f in flags)
    return out


def audit_pairs(pairs: Sequence[PreferencePair], max_listed: int = 20) -> dict[str, Any]:
    """Flag the chosen and rejected response of every pair.

    Args:
        pairs: The evaluated pairs.
        max_listed: Most flagged responses listed in ``flagged`` (all are counted).

    Returns:
        ``{"n_responses", "n_flagged", "counts": {kind: n, "any": n}, "by_role": {"chosen": counts,
        "rejected": counts}, "flagged": [{"pair_id", "response": "chosen"|"rejected", "flags"}]}``;
        counts are numbers of responses (``any``: with at least one flag).
    """
    prompts = [p.prompt for p in pairs]
    by_role = {role: audit_texts(prompts, [getattr(p, role) for p in pairs]) for role in ROLES}
    flagged = [{"pair_id": p.id, "response": role, "flags": by_role[role][i]}
               for i, p in enumerate(pairs) for role in ROLES if by_role[role][i]]
    every = by_role["chosen"] + by_role["rejected"]
    return {
        "n_responses": len(every),
        "n_flagged": len(flagged),
        "counts": _counts(every),
        "by_role": {role: _counts(by_role[role]) for role in ROLES},
        "flagged": flagged[:max_listed],
    }
