"""Text-generation backends behind one small interface (:class:`Backend`)."""

from judgerl.backends.base import Backend, SamplingParams
from judgerl.backends.models import load_backend
from judgerl.backends.scripted import ScriptedBackend

__all__ = ["Backend", "SamplingParams", "ScriptedBackend", "load_backend"]
