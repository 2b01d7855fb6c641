"""IFEval's four accuracies, the mean gold score and the skip counts over many gold verdicts.

The accuracies are those of Zhou et al., 2023 ("Instruction-Following Evaluation for Large Language
Models", arXiv:2311.07911, section 3): *prompt-level* = fraction of prompts whose instructions are
all followed; *instruction-level* = fraction of instructions followed, pooled over prompts; each in
its strict and loose form. Skipped instructions are left out of both; a prompt with no checked
instruction is left out of the prompt-level accuracies and of the mean score.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from judgerl.gold.ifeval import GoldScore


@dataclass(frozen=True)
class IFEvalSummary:
    """Aggregate of gold verdicts; every accuracy is a fraction in [0, 1], None when undefined.

    Attributes:
        n_results: Verdicts aggregated (None entries, e.g. unknown prompts, are not counted here).
        n_unmatched: None entries seen (``score_many(..., on_unknown="none")``).
        n_scored: Verdicts with at least one checked instruction (a score 0-9).
        prompt_level_strict_acc: Among scored prompts, fraction with every checked instruction
            followed, strict.
        prompt_level_loose_acc: Same, loose.
        inst_level_strict_acc: Checked instructions followed, strict, over all checked instructions.
        inst_level_loose_acc: Same, loose.
        mean_score: Mean 0-9 score over scored prompts.
        n_instructions_checked: Checked instructions, pooled.
        n_instructions_skipped: Skipped instructions, pooled.
        skipped_by_id: Skipped instructions per instruction id.
    """

    n_results: int
    n_unmatched: int
    n_scored: int
    prompt_level_strict_acc: float | None
    prompt_level_loose_acc: float | None
    inst_level_strict_acc: float | None
    inst_level_loose_acc: float | None
    mean_score: float | None
    n_instructions_checked: int
    n_instructions_skipped: int
    skipped_by_id: dict[str, int]

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return asdict(self)


def _frac(num: float, den: int) -> float | None:
    return num / den if den else None


def aggregate(results: Iterable[GoldScore | None]) -> IFEvalSummary:
    """Summarise gold verdicts (see the module docstring for the definitions).

    Raises:
        TypeError: an item is neither a :class:`GoldScore` nor None.
    """
    n_results = n_unmatched = 0
    scored: list[GoldScore] = []
    strict_inst = loose_inst = checked = 0
    skipped: Counter[str] = Counter()
    for res in results:
        if res is None:
            n_unmatched += 1
            continue
        if not isinstance(res, GoldScore):
            raise TypeError(f"aggregate() takes GoldScore or None items, got {type(res).__name__}")
        n_results += 1
        skipped.update(res.skipped)
        checked += len(res.followed)
        strict_inst += sum(res.followed.values())
        loose_inst += sum(res.followed_loose.values())
        if res.score is not None:
            scored.append(res)
    return IFEvalSummary(
        n_results=n_results,
        n_unmatched=n_unmatched,
        n_scored=len(scored),
        prompt_level_strict_acc=_frac(sum(bool(r.prompt_strict) for r in scored), len(scored)),
        prompt_level_loose_acc=_frac(sum(bool(r.prompt_loose) for r in scored), len(scored)),
        inst_level_strict_acc=_frac(strict_inst, checked),
        inst_level_loose_acc=_frac(loose_inst, checked),
        mean_score=_frac(sum(r.score for r in scored), len(scored)),
        n_instructions_checked=checked,
        n_instructions_skipped=sum(skipped.values()),
        skipped_by_id=dict(sorted(skipped.items())),
    )
