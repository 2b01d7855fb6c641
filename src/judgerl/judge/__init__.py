"""The Judge and everything a judgment is made of.

======================  =====================================================================
module                  holds
======================  =====================================================================
``core``                :class:`Judge` (protocol + backend + sampling + tools + forcing), its
                        inputs, requests and judgments; the inputs x samples expansion
``decision``            reading a decision: the protocol's parse, then the quoted-answer check
``aggregate``           combining N samples (majority vote, mean, Borda; J1 test-time scaling)
``expected``            the judge-as-reward expected score Σ s·p(s) / Σ p(s)
``ensemble``            several judges combined by mean or min
``scorer``              the pointwise scoring interface (:class:`~judgerl.judge.scorer.JudgeScorer`)
``options``             :class:`~judgerl.judge.options.JudgeOptions`: the one set of judge options
``progress``            progress of a judging run (tokens, judgments, running accuracy)
======================  =====================================================================
"""

from judgerl.judge.core import (
    FORCEABLE_REASONS,
    FORCED_ANSWER_TOKENS,
    JUDGE_INVALID_REASONS,
    AggregateJudgment,
    Judge,
    JudgeInput,
    JudgeRequest,
    Judgment,
    judgment_record,
)
from judgerl.judge.decision import observations_of, read_decision, worst_for

__all__ = [
    "AggregateJudgment",
    "FORCEABLE_REASONS",
    "FORCED_ANSWER_TOKENS",
    "JUDGE_INVALID_REASONS",
    "Judge",
    "JudgeInput",
    "JudgeRequest",
    "Judgment",
    "judgment_record",
    "observations_of",
    "read_decision",
    "worst_for",
]
