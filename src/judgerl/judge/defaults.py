"""The one set of judge defaults (their one home; no imports): the Judge, :class:`judgerl.judge.options.JudgeOptions`,
the commands' shared options and the scorers read them from here. The tool budget's default is
TIR-Judge's :data:`judgerl.text.codeblocks.MAX_TOOL_ROUNDS`.
"""

#: Tokens per generation (per tool round with tools) unless a command or recipe says otherwise.
DEFAULT_MAX_NEW_TOKENS = 512
#: Judgments per judge call (the backend batches inside it); changes speed, never results.
DEFAULT_BATCH_SIZE = 32
#: Sampling temperature when several samples are voted on and none was given.
SAMPLING_TEMPERATURE = 0.7


def default_temperature(samples: int) -> float:
    """THE temperature rule: greedy (0) for one sample, :data:`SAMPLING_TEMPERATURE` for several (so
    the samples of a vote differ)."""
    return 0.0 if samples == 1 else SAMPLING_TEMPERATURE


def default_score_mode(samples: int) -> str:
    """THE pointwise score-mode rule where none was asked for (and where ``expected`` cannot be read):
    ``parsed`` (the written score) for one sample, ``mean`` (of the samples' scores) for several."""
    return "parsed" if samples == 1 else "mean"


__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_MAX_NEW_TOKENS", "SAMPLING_TEMPERATURE", "default_score_mode",
           "default_temperature"]
