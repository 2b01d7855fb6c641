"""vLLM backend (optional extra ``judgerl[vllm]``, needs a GPU): offline batched generation.

Uses vLLM's offline API: ``vllm.LLM(model=...)`` and ``LLM.chat(conversations, sampling_params,
add_generation_prompt=..., continue_final_message=...)``, which applies the model's chat
template and schedules all conversations together (continuous batching, paged KV cache).
vLLM is imported only when a :class:`VLLMBackend` is created, so judgerl works without it.

Because vLLM applies the template itself, the conversations are first put in the form the template
accepts (:func:`chat_conversations`: a template without a system role, Gemma's, gets the system
prompt folded into the first user turn, as the hf backend does through
:func:`judgerl.backends.chat.apply_template`).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from judgerl.backends.base import Backend, OnResult, SamplingParams, resolve_seeds, too_long_message
from judgerl.backends.chat import template_messages
from judgerl.backends.scores import TopLogprobReader
from judgerl.types import Completion, Messages

INSTALL_HINT = "pip install 'judgerl[vllm]' (needs Linux and a CUDA GPU)"


def import_vllm() -> Any:
    """Import and return the ``vllm`` module.

    Raises:
        ImportError: vLLM is not installed; the message says how to install the extra.
    """
    try:
        import vllm
    except ImportError as e:
        raise ImportError(f"The vllm backend needs the optional extra: {INSTALL_HINT}") from e
    return vllm


def to_vllm_params(
    vllm: Any, params: SamplingParams, seed: int | None = None, min_new_tokens: int = 0
) -> Any:
    """Map judgerl :class:`SamplingParams` to a ``vllm.SamplingParams``.

    ``max_new_tokens`` -> ``max_tokens``, ``min_new_tokens`` -> ``min_tokens``; ``temperature``
    0 is greedy in vLLM too; ``stop`` strings are cut from the output
    (``include_stop_str_in_output=False``); ``seed`` is the per-request seed (None = random).

    Args:
        vllm: The imported vllm module (from :func:`import_vllm`).
        params: judgerl sampling parameters.
        seed: Per-request sampling seed, or None.
        min_new_tokens: Suppress EOS before this many tokens.
    """
    return vllm.SamplingParams(
        n=1,
        max_tokens=params.max_new_tokens,
        min_tokens=min(min_new_tokens, params.max_new_tokens),
        temperature=params.temperature,
        top_p=params.top_p if params.temperature > 0 else 1.0,
        seed=seed if params.temperature > 0 else None,
        stop=list(params.stop) or None,
        include_stop_str_in_output=False,
        skip_special_tokens=True,
    )


class VLLMBackend(Backend):
    """Generate with vLLM's offline ``LLM`` engine.

    Args:
        model_path: Local model directory or hub id (as ``vllm.LLM(model=...)`` accepts).
        dtype: vLLM dtype (``"auto"``, ``"bfloat16"``, ``"float16"``, ``"float32"``).
        gpu_memory_utilization: Fraction of GPU memory vLLM may take (weights + KV cache).
        tensor_parallel_size: Number of GPUs to shard the model over.
        max_model_len: Context length limit (None = the model's).
        **llm_kwargs: Further keyword arguments for ``vllm.LLM`` (e.g. ``enforce_eager=True``).

    Prompts ending with an assistant message are continued (``continue_final_message=True``,
    no generation prompt); the others get a new assistant turn. Sampling seeds are per prompt
    (``seeds``, see :func:`judgerl.backends.base.resolve_seeds`), so a prompt's output does not
    depend on the rest of the batch. A prompt whose tokens plus ``max_new_tokens`` exceed the
    engine's ``max_model_len`` is not generated (``finish_reason="prompt_too_long"``).

    Raises:
        ImportError: vLLM is not installed (message names the extra to install).
    """

    def __init__(
        self,
        model_path: str,
        dtype: str = "auto",
        gpu_memory_utilization: float = 0.9,
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        **llm_kwargs: Any,
    ) -> None:
        self._vllm = import_vllm()
        self.name = f"vllm/{model_path}"
        self.model_path = model_path
        self.llm = self._vllm.LLM(
            model=model_path,
            dtype=dtype,
            gpu_memory_utilization=gpu_memory_utilization,
            tensor_parallel_size=tensor_parallel_size,
            max_model_len=max_model_len,
            **llm_kwargs,
        )
        try:  # vLLM's resolved context window (its own max_model_len check would raise per batch)
            self.context_length: int | None = int(self.llm.llm_engine.model_config.max_model_len)
        except (AttributeError, TypeError, ValueError):
            self.context_length = None

    def generate(
        self,
        prompts: Sequence[Messages],
        params: SamplingParams,
        *,
        seeds: Sequence[int] | None = None,
        on_result: OnResult | None = None,
        min_new_tokens: int = 0,
    ) -> list[Completion]:
        """Generate one completion per prompt, in input order (see :class:`Backend`).

        Raises:
            ValueError: a message lacks ``role`` / ``content`` (names the prompt and message);
                bad ``seeds``.
        """
        if not prompts:
            return []
        tok = self.llm.get_tokenizer()
        checked = [_conversation(p, i) for i, p in enumerate(prompts)]
        keys = [json.dumps(c, sort_keys=True) for c in checked]  # seeds from the prompt as given
        convs = chat_conversations(tok, checked)
        resolved = resolve_seeds(keys, params, seeds)
        row_seeds = [None if resolved is None else s % (2**31) for s in (resolved or [None] * len(convs))]
        out: list[Completion | None] = [None] * len(convs)
        for i, c in enumerate(convs):
            if self.context_length is None:
                break
            cont = c[-1]["role"] == "assistant"
            n = len(tok.apply_chat_template(c, tokenize=True, return_dict=False, add_generation_prompt=not cont,
                                            continue_final_message=cont))  # token ids (transformers 5: a dict by default)
            if n + params.max_new_tokens > self.context_length:
                out[i] = Completion("", n, 0, "prompt_too_long",
                                    error=too_long_message(self.name, n, params.max_new_tokens, self.context_length))
        for cont in (False, True):
            idx = [i for i, c in enumerate(convs) if (c[-1]["role"] == "assistant") == cont and out[i] is None]
            if not idx:
                continue
            sp = [to_vllm_params(self._vllm, params, row_seeds[i], min_new_tokens) for i in idx]
            results = self.llm.chat(
                [convs[i] for i in idx],
                sampling_params=sp,
                use_tqdm=False,
                add_generation_prompt=not cont,
                continue_final_message=cont,
            )
            for i, r in zip(idx, results):
                out[i] = _completion(r)
        if on_result is not None:
            for i, c in enumerate(out):
                on_result(i, c)  # type: ignore[arg-type]
        return out  # type: ignore[return-value]

    def score_reader(self) -> TopLogprobReader:
        """Score probabilities from the top log-probabilities of one generated token
        (:class:`~judgerl.backends.scores.TopLogprobReader`: single-character scores)."""
        return TopLogprobReader(self.top_logprobs, name=self.name)

    def top_logprobs(self, prompts: Sequence[Messages], k: int = 20) -> list[list[tuple[str, float]] | str]:
        """See :func:`top_logprobs` (for the expected score, :mod:`judgerl.judge.expected`)."""
        return top_logprobs(self, prompts, k)


def top_logprobs(backend: "VLLMBackend", prompts: Sequence[Messages], k: int = 20) -> list[list[tuple[str, float]] | str]:
    """The top-``k`` alternatives of the first token vLLM would generate after each prompt
    (greedy, ``max_tokens=1``, ``SamplingParams(logprobs=k)``; a trailing assistant message is continued).

    Returns:
        Per prompt: ``[(decoded token, natural-log probability), ...]`` or an error message (str).

    Raises:
        ValueError: ``k`` < 1 or a malformed message.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    convs = chat_conversations(backend.llm.get_tokenizer(), prompts)
    out: list[list[tuple[str, float]] | str] = ["not generated"] * len(convs)
    sp = backend._vllm.SamplingParams(n=1, max_tokens=1, temperature=0.0, logprobs=k)
    for cont in (False, True):
        idx = [i for i, c in enumerate(convs) if (c[-1]["role"] == "assistant") == cont]
        if not idx:
            continue
        results = backend.llm.chat([convs[i] for i in idx], sampling_params=sp, use_tqdm=False,
                                   add_generation_prompt=not cont, continue_final_message=cont)
        for i, r in zip(idx, results):
            steps = r.outputs[0].logprobs if r.outputs else None
            if not steps:
                out[i] = "vLLM returned no logprobs"
                continue
            out[i] = [(str(getattr(v, "decoded_token", None) or ""), float(v.logprob)) for v in steps[0].values()]
    return out


def chat_conversations(tokenizer: Any, prompts: Sequence[Messages]) -> list[list[dict[str, str]]]:
    """The conversations to hand to ``LLM.chat``: each prompt's messages checked and put in the form
    ``tokenizer``'s chat template accepts (:func:`judgerl.backends.chat.template_messages`: the
    system prompt folded into the first user turn for a template without a system role), with the
    flags vLLM will render them with (a trailing assistant message is continued).

    Needs no vLLM: ``tokenizer`` is any transformers tokenizer (``LLM.get_tokenizer()`` in the backend).

    Args:
        tokenizer: The engine's tokenizer; one without a ``chat_template`` leaves the messages as they are.
        prompts: Chat prompts, shape (n,).

    Returns:
        One list of ``{"role", "content"}`` dicts per prompt, in input order.

    Raises:
        ValueError: a prompt has no messages or a message lacks ``role`` / ``content`` (names the
            prompt and message index).
        jinja2.TemplateError: the template fails for a reason other than a system role.
    """
    out = []
    for i, p in enumerate(prompts):
        conv = _conversation(p, i)
        cont = conv[-1]["role"] == "assistant"
        out.append(template_messages(tokenizer, conv, add_generation_prompt=not cont, continue_final_message=cont))
    return out


def _conversation(messages: Messages, index: int) -> list[dict[str, str]]:
    conv = []
    for j, m in enumerate(messages):
        if "role" not in m or "content" not in m:
            raise ValueError(f"prompt {index}, message {j}: needs 'role' and 'content', got keys {sorted(m)}")
        conv.append({"role": m["role"], "content": m["content"]})
    if not conv:
        raise ValueError(f"prompt {index} has no messages")
    return conv


def _completion(request_output: Any) -> Completion:
    """A judgerl Completion from one ``vllm.RequestOutput`` (its first sample)."""
    sample = request_output.outputs[0]
    finish = "length" if sample.finish_reason == "length" else "stop"
    return Completion(
        text=sample.text,
        prompt_tokens=len(request_output.prompt_token_ids or []),
        completion_tokens=len(sample.token_ids),
        finish_reason=finish,
    )
