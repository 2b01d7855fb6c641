"""judgerl: build, train with RL, evaluate and serve reasoning LLM judges."""

from judgerl.runtime import apply_omp_policy

apply_omp_policy()  # before anything imports torch; see judgerl.runtime

from judgerl.judge import AggregateJudgment, Judge, JudgeInput, JudgeRequest, Judgment  # noqa: E402
from judgerl.types import Completion, Decision, PreferencePair, Segment, Trajectory  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AggregateJudgment",
    "Completion",
    "Decision",
    "Judge",
    "JudgeInput",
    "JudgeRequest",
    "Judgment",
    "PreferencePair",
    "Segment",
    "Trajectory",
    "__version__",
]
