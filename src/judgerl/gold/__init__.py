"""Gold judges: reference judges whose scores other judges are trained and checked against.

:class:`IFEvalGoldJudge` is the programmatic one: IFEval's instruction checks (Zhou et al., 2023)
turned into a pointwise 0-9 score. See ``docs/gold.md``. Importing this package is cheap; the
checking library (the ``gold`` extra) loads when a judge is built.
"""

from judgerl.gold.ifeval_summary import IFEvalSummary, aggregate
from judgerl.gold.ifeval import (
    GoldScore,
    IFEvalGoldJudge,
    InstructionCheck,
    UnknownPromptError,
    score_from_counts,
)
from judgerl.gold.punkt_data import NEEDS_PUNKT
from judgerl.gold.records import IFEvalRecord, load_records, normalize_prompt

__all__ = [
    "NEEDS_PUNKT",
    "GoldScore",
    "IFEvalGoldJudge",
    "IFEvalRecord",
    "IFEvalSummary",
    "InstructionCheck",
    "UnknownPromptError",
    "aggregate",
    "load_records",
    "normalize_prompt",
    "score_from_counts",
]
