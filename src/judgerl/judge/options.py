"""The one set of judge options: what every command that runs a judge (eval, serve, label, probe,
arena) and the in-process training judge take, with one set of defaults.

A :class:`JudgeOptions` is plain data (JSON-ready); :meth:`JudgeOptions.make_judge` builds the
:class:`~judgerl.judge.core.Judge` from it: the protocol by name with its options, the backend by
model name with its keyword arguments, the sampling parameters (temperature rule:
:func:`judgerl.judge.defaults.default_temperature`), the sandbox when ``tools`` is on, and the tool budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from judgerl.backends.base import Backend, SamplingParams
from judgerl.judge.core import Judge
from judgerl.judge.defaults import (  # noqa: F401 (re-exported)
    DEFAULT_BATCH_SIZE,
    DEFAULT_MAX_NEW_TOKENS,
    SAMPLING_TEMPERATURE,
    default_temperature,
)
from judgerl.protocols.base import JudgeProtocol
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.tools import Executor

@dataclass(frozen=True)
class JudgeOptions:
    """How to build a judge.

    Attributes:
        model: Judge model (``smollm2-135m``, ``hf/<path>``, ``openai/<model>``, ``vllm/<path>``,
            ``scripted/<file>``, a named shipped judge or a local directory).
        model_args: Keyword arguments of the backend's constructor (``--model-arg``).
        base_url: Endpoint of an ``openai/<model>`` judge.
        protocol: Protocol name (:data:`judgerl.protocols.PROTOCOLS`); ``protocol_args`` its options.
        anti_hacking: Add the anti-hacking instruction (every protocol's option).
        samples: Judgments per item (voted / averaged).
        temperature: Sampling temperature; None: :func:`default_temperature` of ``samples``.
        top_p: Nucleus sampling mass.
        max_new_tokens: Tokens per generation (per round with tools).
        seed: Base seed of every sample's seed.
        force_answer: Prefill the answer tag when a judgment ends without one.
        tools: Let the judge run Python (the TIR tool loop in the sandbox).
        max_tool_rounds: Most executed code blocks per judgment (also what the prompt states).
        unsafe_sandbox: Allow the fallback executor where bubblewrap is missing (not a boundary).
        batch_size: Judgments per judge call.
    """

    model: str
    model_args: Mapping[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    protocol: str = "pav"
    protocol_args: Mapping[str, Any] = field(default_factory=dict)
    anti_hacking: bool = False
    samples: int = 1
    temperature: float | None = None
    top_p: float = 1.0
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    seed: int = 0
    force_answer: bool = False
    tools: bool = False
    max_tool_rounds: int = MAX_TOOL_ROUNDS
    unsafe_sandbox: bool = False
    batch_size: int = DEFAULT_BATCH_SIZE

    def __post_init__(self) -> None:
        for name in ("samples", "max_new_tokens", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_tool_rounds < 0:
            raise ValueError(f"max_tool_rounds must be >= 0, got {self.max_tool_rounds}")
        if self.base_url is not None and not self.model.startswith("openai/"):
            raise ValueError(f"--base-url only applies to openai/<model> judges, not {self.model!r}")

    def params(self) -> SamplingParams:
        """The sampling parameters (temperature rule applied).

        Raises:
            ValueError: a bad temperature or ``top_p``.
        """
        temp = self.temperature if self.temperature is not None else default_temperature(self.samples)
        return SamplingParams(max_new_tokens=self.max_new_tokens, temperature=temp, top_p=self.top_p)

    def identity(self) -> dict[str, Any]:
        """The :meth:`~judgerl.judge.core.Judge.config` the judge of these options will have, computed
        without loading the model (:func:`judgerl.judge.identity.judge_config`).

        Raises:
            ValueError / TypeError: an unknown model provider, protocol or option.
        """
        from judgerl.backends.models import backend_name
        from judgerl.judge.identity import judge_config

        return judge_config(backend_name(self.model, **self.backend_kwargs()), self.make_protocol(), self.params(),
                            tools=self.tools, max_tool_rounds=self.max_tool_rounds, force_answer=self.force_answer)

    def make_protocol(self) -> JudgeProtocol:
        """``get_protocol(protocol, **protocol_args)`` (+ ``anti_hacking``).

        Raises:
            ValueError / TypeError: an unknown protocol or option.
        """
        from judgerl.protocols import get_protocol

        kwargs = dict(self.protocol_args)
        if self.anti_hacking:
            kwargs["anti_hacking"] = True
        return get_protocol(self.protocol, **kwargs)

    def backend_kwargs(self) -> dict[str, Any]:
        """The backend's keyword arguments: ``model_args`` plus ``base_url``."""
        kwargs = dict(self.model_args)
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        return kwargs

    def make_backend(self, **extra: Any) -> Backend:
        """``load_backend(model, **backend_kwargs(), **extra)``.

        Raises:
            ValueError: an option the backend does not take (names it and the model).
            ImportError: the provider's extra is not installed.
        """
        from judgerl.backends import load_backend

        try:
            return load_backend(self.model, **(self.backend_kwargs() | extra))
        except TypeError as e:  # an unknown keyword for this backend's constructor
            raise ValueError(f"--model-arg for {self.model}: {e}") from e

    def make_sandbox(self) -> Executor | None:
        """The sandbox when ``tools`` is on (None otherwise).

        Raises:
            judgerl.tools.SandboxError: no sandbox can run code here (unsafe fallback not allowed).
        """
        if not self.tools:
            return None
        from judgerl.tools import get_sandbox

        return get_sandbox(allow_unsafe=self.unsafe_sandbox)

    def make_judge(self, backend: Backend | None = None, protocol: JudgeProtocol | None = None,
                   sandbox: Executor | None = None) -> Judge:
        """The :class:`~judgerl.judge.core.Judge` of these options (``backend`` / ``protocol`` /
        ``sandbox``: already built ones; default built here; without ``tools`` no sandbox is used).

        Raises:
            ValueError / TypeError / ImportError: from the pieces above.
        """
        return Judge(protocol or self.make_protocol(), backend or self.make_backend(), self.params(),
                     sandbox=sandbox if sandbox is not None else self.make_sandbox(),
                     max_tool_rounds=self.max_tool_rounds, force_answer=self.force_answer, seed=self.seed)


__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_MAX_NEW_TOKENS", "JudgeOptions", "SAMPLING_TEMPERATURE",
           "default_temperature"]
