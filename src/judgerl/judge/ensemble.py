"""Judge ensembles: combine the judgments of several judges (mean or min), mixed backends allowed.

The judge-as-reward paper ("Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training",
2025) lists "several judges /
ensembles" among the defences against reward hacking: a response that fools one judge must now
fool all of them (``combine="min"``) or most of them (``combine="mean"``). A
:class:`JudgeEnsemble` has the batch API of :class:`judgerl.judge.Judge`: ``ensemble.judge(inputs,
samples=N)`` returns one result per input whose ``decision`` is the combined decision and whose
``samples`` are every member's samples, so code written against ``Judge.judge`` (the probe, reward
code) takes an ensemble unchanged. Each member judges every input with its own protocol, backend,
sampling and seed (a local model next to an API model is fine); members run one after the other.

Combination rules (per input, after each member's own vote over its ``samples``):

* **pointwise**: each member's score ``s_k`` on its protocol's scale ``[lo_k, hi_k]`` is normalised
  to ``u_k = (s_k - lo_k) / (hi_k - lo_k)`` in [0, 1]; the ensemble's ``u`` is the mean or the min
  of the ``u_k``; the decision's score is ``lo + u (hi - lo)`` on the ensemble's scale (the
  members' common scale, else [0, 1], or the ``scale`` given).
* **pairwise**: member ``k`` gives each response a credit, ``(1, 0)`` for verdict A, ``(0, 1)`` for
  B, ``(0.5, 0.5)`` for a tie; the ensemble's credit of each response is the mean or the min over
  members, the decision's ``scores`` are the two credits (in [0, 1]) and its verdict the response
  with the higher credit (equal: ``"tie"``). With ``min`` a response wins only when no member
  prefers the other one: two members that disagree give a tie.
* **invalid members**: with ``require_all=True`` (default) one invalid member makes the combined
  decision invalid (``invalid_reason`` ``"judge <k>: <its reason>"``), so an attacker cannot escape
  a strict judge by making it fail; ``require_all=False`` combines the valid members (all invalid:
  the first member's reason). A member whose answer was **quoted from a response** (``quoted_answer``)
  makes the decision invalid in either mode, with the plain reason ``quoted_answer`` (so sample votes
  above it void too, :func:`judgerl.judge.aggregate.voided_by_quote`): dropping it would let a response
  spell out the answers it dislikes (``</think><score>2</score>``) and have exactly the members that gave
  them left out.

Listwise judges are not combined (no agreed combination of rankings under "min").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

from judgerl.judge.aggregate import QUOTED_ANSWER, mean, voided_by_quote
from judgerl.judge.core import AggregateJudgment, Judge, JudgeInput, Judgment
from judgerl.types import Decision

Combine = Literal["mean", "min"]
#: Called ``f(member index, flat sample index, judgment)`` per finished member sample.
EnsembleOnDone = Callable[[int, int, Judgment], None]

_CREDIT = {"A": (1.0, 0.0), "B": (0.0, 1.0), "tie": (0.5, 0.5)}


def judge_scale(judge: "Judge | JudgeEnsemble") -> tuple[float, float] | None:
    """The pointwise score scale ``(min, max)`` of a :class:`Judge` (its protocol's
    :attr:`~judgerl.protocols.JudgeProtocol.score_scale`) or a :class:`JudgeEnsemble`; None when the
    judge has none (pairwise, listwise)."""
    if isinstance(judge, JudgeEnsemble):
        return judge.scale
    return judge.protocol.score_scale if judge.kind == "pointwise" else None


@dataclass(frozen=True)
class EnsembleJudgment:
    """The combined judgment of one input.

    Attributes:
        decision: The combined decision (rules in the module docstring).
        members: Each member's :class:`~judgerl.judge.AggregateJudgment`, in member order.
    """

    decision: Decision
    members: tuple[AggregateJudgment, ...]

    @property
    def samples(self) -> tuple[Judgment, ...]:
        """Every member's samples, member by member."""
        return tuple(s for m in self.members for s in m.samples)

    @property
    def n_invalid(self) -> int:
        """Member samples whose decision is invalid."""
        return sum(m.n_invalid for m in self.members)

    @property
    def retryable(self) -> bool:
        """True when any member sample failed for a reason a retry may fix."""
        return any(m.retryable for m in self.members)


class JudgeEnsemble:
    """Several judges combined by ``mean`` or ``min`` (see the module docstring).

    Args:
        judges: Two or more :class:`~judgerl.judge.Judge` objects of one kind (all pointwise or
            all pairwise); backends, protocols, scales and sampling may differ.
        combine: ``"mean"`` or ``"min"``.
        require_all: Combined decision invalid when any member is invalid (default True).
        scale: Pointwise only: the ``(min, max)`` scale of the combined score; default the
            members' common scale, or ``(0, 1)`` when their scales differ.

    Raises:
        ValueError: fewer than 2 judges, an unknown ``combine``, mixed kinds, a listwise judge, a
            pointwise judge without a score scale, or a bad ``scale``.
    """

    def __init__(self, judges: Sequence[Judge], combine: Combine = "mean", *, require_all: bool = True,
                 scale: tuple[float, float] | None = None) -> None:
        judges = list(judges)
        if len(judges) < 2:
            raise ValueError(f"an ensemble needs at least 2 judges, got {len(judges)}")
        if combine not in ("mean", "min"):
            raise ValueError(f"combine must be 'mean' or 'min', got {combine!r}")
        kinds = {j.kind for j in judges}
        if len(kinds) > 1:
            raise ValueError(f"ensemble members must share one kind, got {sorted(kinds)}")
        kind = kinds.pop()
        if kind not in ("pointwise", "pairwise"):
            raise ValueError(f"ensembles combine pointwise or pairwise judges, not {kind}")
        self.judges = judges
        self.combine: Combine = combine
        self.require_all = require_all
        self._kind = kind
        self.scale: tuple[float, float] | None = None
        if kind == "pointwise":
            scales = [judge_scale(j) for j in judges]
            if any(s is None for s in scales):
                raise ValueError("every pointwise member needs a protocol with a score scale (min_score / max_score)")
            if scale is not None:
                lo, hi = (float(x) for x in scale)
                if not lo < hi:
                    raise ValueError(f"scale must be (min, max) with min < max, got {scale}")
                self.scale = (lo, hi)
            else:
                self.scale = scales[0] if len(set(scales)) == 1 else (0.0, 1.0)  # type: ignore[assignment]
        elif scale is not None:
            raise ValueError("scale applies to pointwise ensembles only")

    @property
    def kind(self) -> str:
        """The members' protocol kind: ``pointwise`` or ``pairwise``."""
        return self._kind

    @property
    def min_score(self) -> float | None:
        """Lowest combined score (pointwise), else None."""
        return self.scale[0] if self.scale else None

    @property
    def max_score(self) -> float | None:
        """Highest combined score (pointwise), else None."""
        return self.scale[1] if self.scale else None

    def config(self) -> dict[str, Any]:
        """The ensemble's identity as JSON: combination rule and every member's
        :meth:`~judgerl.judge.Judge.config` (with its seed)."""
        return {
            "ensemble": {"combine": self.combine, "require_all": self.require_all,
                         "scale": list(self.scale) if self.scale else None},
            "members": [{**j.config(), "seed": j.seed} for j in self.judges],
        }

    def judge(self, inputs: Sequence[JudgeInput], samples: int = 1,
              on_done: EnsembleOnDone | None = None) -> list[EnsembleJudgment]:
        """Judge each input with every member (``samples`` each) and combine.

        Args:
            inputs: What to judge (1 response per input for pointwise, 2 for pairwise).
            samples: Samples per input and member (each member votes over its own samples first).
            on_done: Called ``f(member index, flat index, judgment)`` per finished member sample.

        Returns:
            One :class:`EnsembleJudgment` per input, in order.

        Raises:
            ValueError, TypeError: from a member (bad inputs, ``samples`` < 1).
        """
        per_member: list[list[AggregateJudgment]] = []
        for k, j in enumerate(self.judges):
            cb = None if on_done is None else (lambda i, jd, k=k: on_done(k, i, jd))
            per_member.append(j.judge(inputs, samples, cb))
        out = []
        for i in range(len(inputs)):
            members = tuple(m[i] for m in per_member)
            out.append(EnsembleJudgment(self.combine_decisions([m.decision for m in members]), members))
        return out

    def combine_decisions(self, decisions: Sequence[Decision]) -> Decision:
        """Combine one decision per member (in member order) by the ensemble's rule.

        Raises:
            ValueError: not one decision per member.
        """
        if len(decisions) != len(self.judges):
            raise ValueError(f"expected {len(self.judges)} decisions (one per member), got {len(decisions)}")
        bad = [(k, d) for k, d in enumerate(decisions) if not d.valid]
        if voided_by_quote(d.invalid_reason for _, d in bad):
            return next(d for _, d in bad if d.invalid_reason == QUOTED_ANSWER)
        if bad and (self.require_all or len(bad) == len(decisions)):
            k, d = bad[0]
            return Decision.invalid(f"judge {k}: {d.invalid_reason}")
        valid = [(k, d) for k, d in enumerate(decisions) if d.valid]
        pick = mean if self.combine == "mean" else min
        if self._kind == "pointwise":
            units = []
            for k, d in valid:
                lo, hi = judge_scale(self.judges[k])  # type: ignore[misc]
                units.append((d.scores[0] - lo) / (hi - lo))  # type: ignore[index]
            lo, hi = self.scale  # type: ignore[misc]
            return Decision(valid=True, scores=(lo + pick(units) * (hi - lo),))
        for k, d in valid:
            if d.verdict not in _CREDIT:
                return Decision.invalid(f"judge {k}: no verdict")
        credits = [_CREDIT[str(d.verdict)] for _, d in valid]
        ca, cb = pick([c[0] for c in credits]), pick([c[1] for c in credits])
        verdict = "A" if ca > cb else "B" if cb > ca else "tie"
        return Decision(valid=True, verdict=verdict, scores=(ca, cb))  # type: ignore[arg-type]


__all__ = ["EnsembleJudgment", "JudgeEnsemble", "judge_scale"]
