"""judgerl: build, train with RL, evaluate and serve reasoning LLM judges.

The names a user starts with: a :class:`Judge` (``judgerl.judge``) built from a protocol
(:func:`get_protocol`), a backend (:func:`load_backend`) and sampling parameters, or from
:class:`JudgeOptions`; its inputs and judgments; the records of ``judgerl.types``. The layout of the
package and its data flow: ``docs/architecture.md``.
"""

from judgerl.backends.runtime import apply_omp_policy

apply_omp_policy()  # before anything imports torch; see judgerl.backends.runtime

from judgerl.backends import SamplingParams, load_backend  # noqa: E402
from judgerl.judge import AggregateJudgment, Judge, JudgeInput, JudgeRequest, Judgment  # noqa: E402
from judgerl.judge.ensemble import JudgeEnsemble  # noqa: E402
from judgerl.judge.options import JudgeOptions  # noqa: E402
from judgerl.protocols import get_protocol  # noqa: E402
from judgerl.types import Completion, Decision, PreferencePair, Segment, Trajectory  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AggregateJudgment",
    "Completion",
    "Decision",
    "Judge",
    "JudgeEnsemble",
    "JudgeInput",
    "JudgeOptions",
    "JudgeRequest",
    "Judgment",
    "PreferencePair",
    "SamplingParams",
    "Segment",
    "Trajectory",
    "__version__",
    "get_protocol",
    "load_backend",
]
