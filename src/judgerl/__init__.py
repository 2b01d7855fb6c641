"""judgerl: build, train with RL, evaluate and serve reasoning LLM judges."""

from judgerl.types import Completion, Decision, PreferencePair, Segment, Trajectory

__version__ = "0.1.0"

__all__ = ["Completion", "Decision", "PreferencePair", "Segment", "Trajectory", "__version__"]
