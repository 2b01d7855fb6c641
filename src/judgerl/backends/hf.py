"""transformers backend: batched generation with left padding on CPU or GPU.

How a call to :meth:`HFBackend.generate` runs:

1. every prompt is rendered with the model's chat template (a trailing assistant message is
   continued, see :func:`render_chat`) and tokenised once;
2. prompts are sorted by token length (longest first) and cut into batches by
   :func:`plan_batches`, bounded both by ``batch_size`` rows and by a token budget
   ``rows x (longest prompt + max_new_tokens) <= max_batch_tokens`` so long prompts never blow
   up memory, and similar lengths share a batch (little padding);
3. each batch runs one ``model.generate`` with left padding and, on CPU by default, a KV cache
   preallocated to exactly ``longest prompt + max_new_tokens`` positions (transformers'
   ``StaticCache``): this avoids re-concatenating the whole cache at every decode step, which
   costs ~40% of a CPU decode step with the default dynamic cache. Before that, each prompt's
   prefill runs alone and unpadded, the prefix shared by the whole batch only once
   (:meth:`HFBackend._prefill_rows`; 2.3x less prefill CPU time on PaV prompts). transformers
   stops a batch as soon as every row has hit EOS / a stop string / the token limit;
4. sampling (``temperature > 0``) draws each row's tokens from its own ``torch.Generator``,
   seeded from ``(params.seed, prompt text, occurrence)`` by :func:`prompt_seed`, so a prompt's
   completion does not depend on which other prompts share its call or batch (up to
   floating-point differences between batch shapes);
5. outputs are cut at EOS / the first stop string and returned in input order.
"""

from __future__ import annotations

import threading
import warnings
from collections import Counter
from typing import Any, Sequence

from judgerl.backends.base import SamplingParams, cut_at_stop, prompt_seed
from judgerl.types import Completion, Messages

#: Accepted ``dtype`` names and the torch dtype attribute they map to.
DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
}


#: Shortest prefix shared by all prompts of a batch that is computed once and reused.
MIN_SHARED_PREFIX = 16


def _common_prefix_len(seqs: Sequence[Sequence[int]]) -> int:
    """Length of the longest prefix common to all ``seqs`` (0 for an empty list)."""
    if not seqs:
        return 0
    n = min(len(s) for s in seqs)
    first = seqs[0]
    for j in range(n):
        t = first[j]
        if any(s[j] != t for s in seqs):
            return j
    return n


def render_chat(tokenizer: Any, messages: Messages) -> str:
    """Render chat messages to the model's prompt text.

    A trailing assistant message is *continued* (prefill): the template is applied to the
    messages before it with a generation prompt, and the assistant content is appended verbatim
    (no end-of-turn token), so the model's output continues that text.

    Args:
        tokenizer: A transformers tokenizer; its ``chat_template`` is used when it has one,
            otherwise messages are joined as ``"role: content"`` paragraphs.
        messages: The chat prompt.

    Raises:
        ValueError: a message lacks a ``role`` or ``content`` field (names the message index).
    """
    msgs = []
    for i, m in enumerate(messages):
        if "role" not in m or "content" not in m:
            raise ValueError(f"message {i} needs 'role' and 'content' fields, got keys {sorted(m)}")
        msgs.append({"role": m["role"], "content": m["content"]})
    prefix = ""
    if msgs and msgs[-1]["role"] == "assistant":
        prefix = msgs.pop()["content"]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    else:  # base models without a template: plain concatenation
        text = "\n\n".join(f"{m['role']}: {m['content']}" for m in msgs) + "\n\nassistant: "
    return text + prefix


def plan_batches(
    lengths: Sequence[int], batch_size: int, max_batch_tokens: int, max_new_tokens: int
) -> list[list[int]]:
    """Group prompt indices into batches, longest prompts first.

    A batch holds at most ``batch_size`` rows and, with left padding to its longest prompt,
    at most ``max_batch_tokens`` KV-cache positions: ``rows x (longest + max_new_tokens)``.
    A prompt longer than the budget on its own still gets a batch of one.

    Args:
        lengths: Prompt lengths in tokens, one per prompt (input order).
        batch_size: Maximum rows per batch (>= 1).
        max_batch_tokens: Token budget per batch (>= 1).
        max_new_tokens: Generation budget per row, counted in the token budget.

    Returns:
        Lists of indices into ``lengths``; every index appears exactly once.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        longest = lengths[current[0]] if current else lengths[i]
        if current and (
            len(current) + 1 > batch_size or (len(current) + 1) * (longest + max_new_tokens) > max_batch_tokens
        ):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _logits_processor_base() -> type:
    from transformers import LogitsProcessor

    return LogitsProcessor


class RowSeededSampler(_logits_processor_base()):  # type: ignore[misc]
    """Temperature + nucleus (top-p) sampling with one ``torch.Generator`` per batch row.

    Used as the last logits processor of a *greedy* ``generate`` call: it samples each row's
    next token itself and returns scores that are 0 at the sampled token and ``-inf`` elsewhere,
    so greedy selection picks exactly the sampled token. Row ``i`` always consumes exactly one
    draw of ``generators[i]`` per step, so its tokens do not depend on the other rows.

    Args:
        generators: One seeded generator per batch row, on the logits' device.
        temperature: Softmax temperature (> 0).
        top_p: Nucleus mass in (0, 1]; the smallest set of most-likely tokens whose probability
            reaches ``top_p`` is kept (Holtzman et al. 2020, "The Curious Case of Neural Text
            Degeneration", Sec. 3.1).
    """

    def __init__(self, generators: Sequence[Any], temperature: float, top_p: float) -> None:
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0 for sampling, got {temperature}")
        self.generators = list(generators)
        self.temperature = temperature
        self.top_p = top_p

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """``scores``: float tensor (batch, vocab) of logits; returns a tensor of the same shape."""
        import torch

        if scores.shape[0] != len(self.generators):
            raise ValueError(f"batch has {scores.shape[0]} rows but {len(self.generators)} generators")
        probs = torch.softmax(scores.float() / self.temperature, dim=-1)
        if self.top_p < 1.0:
            sorted_p, sorted_idx = torch.sort(probs, dim=-1, descending=True)
            # drop a token when the mass before it already reaches top_p (the top token is always kept)
            drop = (sorted_p.cumsum(dim=-1) - sorted_p) >= self.top_p
            sorted_p = sorted_p.masked_fill(drop, 0.0)
            probs = torch.zeros_like(probs).scatter_(-1, sorted_idx, sorted_p)
        picks = [
            torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(self.generators)
        ]
        chosen = torch.cat(picks)
        out = torch.full_like(scores, float("-inf"))
        out.scatter_(1, chosen[:, None], 0.0)
        return out


class HFBackend:
    """Generate with a transformers causal LM (batched, left padding).

    Args:
        model_path: Local directory (or hub id, where a hub is reachable) of the model.
        batch_size: Maximum prompts per ``model.generate`` call.
        device: ``"cpu"``, ``"cuda"``, ... (default: cuda when available, else cpu).
        dtype: ``"float32"``/``"fp32"``, ``"bfloat16"``/``"bf16"`` or ``"float16"``/``"fp16"``;
            default float32 on CPU (exact; see docs/backends.md for the bf16 trade-off) and
            bfloat16 on GPU.
        max_batch_tokens: KV-cache positions per batch, ``rows x (longest prompt +
            max_new_tokens)``; bounds memory for long prompts (see :func:`plan_batches`).
        static_cache: Preallocate each batch's KV cache to its final length; default True on
            CPU (saves re-concatenating the cache every step), False elsewhere (on GPU the
            dynamic cache is cheap, and a static one would make transformers compile per shape).
        row_prefill: With the static cache, run each prompt's prefill alone and unpadded
            (see :meth:`_prefill_rows`); saves the FLOPs spent on padding.
        num_threads: If given, ``torch.set_num_threads(num_threads)`` (process-wide).

    Generation is serialised with a lock, so one instance can be shared by threads.

    Raises:
        ValueError: ``batch_size``, ``max_batch_tokens`` or ``num_threads`` < 1, or an unknown
            ``dtype`` name.
        OSError: from transformers when ``model_path`` holds no loadable model.
    """

    def __init__(
        self,
        model_path: str,
        batch_size: int = 16,
        device: str | None = None,
        dtype: str | None = None,
        max_batch_tokens: int = 32768,
        static_cache: bool | None = None,
        num_threads: int | None = None,
        row_prefill: bool = True,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")
        if dtype is not None and dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(DTYPES)}")
        if num_threads is not None:
            if num_threads < 1:
                raise ValueError(f"num_threads must be >= 1, got {num_threads}")
            torch.set_num_threads(num_threads)
        self.name = f"hf/{model_path}"
        self.model_path = model_path
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.static_cache = (self.device == "cpu") if static_cache is None else static_cache
        self.row_prefill = row_prefill
        if dtype is None:
            dtype = "float32" if self.device == "cpu" else "bfloat16"
        self.dtype = DTYPES[dtype]
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, self.dtype))
        self.model.to(self.device)
        self.model.eval()
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else ([eos] if eos is not None else []))
        if self.tokenizer.eos_token_id is not None:
            eos_ids.add(self.tokenizer.eos_token_id)
        self.eos_token_ids = sorted(eos_ids)
        self._lock = threading.Lock()

    def render(self, messages: Messages) -> str:
        """The prompt text for ``messages`` (see :func:`render_chat`)."""
        return render_chat(self.tokenizer, messages)

    def generate(
        self, prompts: Sequence[Messages], params: SamplingParams, *, min_new_tokens: int = 0
    ) -> list[Completion]:
        """Generate one completion per prompt, in input order.

        Args:
            prompts: Chat prompts; a trailing assistant message is continued.
            params: Sampling parameters. ``temperature == 0`` is greedy; otherwise each prompt
                samples from its own generator seeded by :func:`prompt_seed` (``seed=None``
                draws a fresh random seed per call).
            min_new_tokens: Suppress EOS before this many new tokens (benchmarks use it to
                make every row generate the same number of tokens).

        Returns:
            Completions with the generated text (EOS and stop strings cut off), prompt and
            completion token counts, and ``finish_reason`` "stop" (EOS or stop string) or
            "length".
        """
        import torch

        if not prompts:
            return []
        texts = [self.render(p) for p in prompts]
        ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        seeds: list[int] | None = None
        if params.temperature > 0:
            base = params.seed if params.seed is not None else int(torch.randint(0, 2**62, (1,)).item())
            seen: Counter[str] = Counter()
            seeds = []
            for t in texts:
                seeds.append(prompt_seed(base, t, seen[t]))
                seen[t] += 1
        batches = plan_batches([len(x) for x in ids], self.batch_size, self.max_batch_tokens, params.max_new_tokens)
        out: list[Completion | None] = [None] * len(texts)
        with self._lock:
            for idx in batches:
                rows = [ids[i] for i in idx]
                row_seeds = [seeds[i] for i in idx] if seeds is not None else None
                for i, c in zip(idx, self._generate_batch(rows, params, row_seeds, min_new_tokens)):
                    out[i] = c
        return out  # type: ignore[return-value]

    def _generate_batch(
        self,
        rows: list[list[int]],
        params: SamplingParams,
        seeds: list[int] | None,
        min_new_tokens: int,
    ) -> list[Completion]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList, StaticCache

        tok = self.tokenizer
        enc = tok.pad({"input_ids": rows}, padding=True, return_tensors="pt").to(self.device)
        width = enc["input_ids"].shape[1]
        # Greedy selection always; sampling happens in RowSeededSampler (see its docstring).
        config = GenerationConfig(
            max_new_tokens=params.max_new_tokens,
            min_new_tokens=min(min_new_tokens, params.max_new_tokens) or None,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
            eos_token_id=self.eos_token_ids,
            stop_strings=list(params.stop) or None,
            disable_compile=True,
        )
        kwargs: dict[str, Any] = {"generation_config": config}
        if params.stop:
            kwargs["tokenizer"] = tok
        if seeds is not None:
            gens = [torch.Generator(device=self.device).manual_seed(s) for s in seeds]
            kwargs["logits_processor"] = LogitsProcessorList(
                [RowSeededSampler(gens, params.temperature, params.top_p)]
            )
        with torch.inference_mode(), warnings.catch_warnings():
            # transformers 5 renamed past_key_values= to cache=; the old name works across all
            # supported versions, so only its deprecation notice is silenced.
            warnings.filterwarnings("ignore", message=".*past_key_values.*", category=FutureWarning)
            if self.static_cache:
                cache = StaticCache(config=self.model.config, max_cache_len=width + params.max_new_tokens)
                if self.row_prefill and len(rows) > 1:
                    self._prefill_rows(rows, width, cache)
                kwargs["past_key_values"] = cache
            seqs = self.model.generate(**enc, **kwargs)
        new = seqs[:, width:].tolist()
        prompt_lens = [len(r) for r in rows]
        return [self._completion(row, plen, params.stop) for row, plen in zip(new, prompt_lens)]

    def _prefill_rows(self, rows: list[list[int]], width: int, cache: Any) -> None:
        """Fill ``cache`` with each row's prompt KV (all but its last token), row by row.

        Each prompt is run alone, unpadded, so no compute goes to padding (a batch of mixed
        lengths padded to its longest wastes a large share of the prefill FLOPs and more of the
        quadratic attention). The prefix shared by all rows of the batch (the judge
        instructions of a protocol: ~140 of ~500 tokens for PaV on LLMBar) is computed once and
        reused, when it is at least ``MIN_SHARED_PREFIX`` tokens. The rows are then written
        left-padded into the batch cache (positions ``[0, width - 1)``; the padding slots stay
        zero and are masked), and ``generate`` only runs the last prompt token.

        Args:
            rows: Token ids per row (unpadded), batch order.
            width: Padded prompt length of the batch.
            cache: An empty ``StaticCache`` with ``max_cache_len >= width``.
        """
        import torch
        from transformers import DynamicCache

        if width < 2:
            return
        bodies = [r[:-1] for r in rows]
        shared = _common_prefix_len(bodies)
        prefix_kv: list[tuple[Any, Any]] = []
        if shared >= MIN_SHARED_PREFIX:
            prefix_cache = DynamicCache()
            self.model(
                input_ids=torch.tensor([bodies[0][:shared]], device=self.device),
                past_key_values=prefix_cache,
                use_cache=True,
                logits_to_keep=1,
            )
            prefix_kv = [(layer.keys, layer.values) for layer in prefix_cache.layers]
        else:
            shared = 0
        per_row = []
        for body in bodies:
            if not body:
                per_row.append(None)
                continue
            row_cache = DynamicCache()
            for i, (k, v) in enumerate(prefix_kv):
                row_cache.update(k, v, i)  # later updates concatenate, the prefix is not modified
            if len(body) > shared:
                self.model(
                    input_ids=torch.tensor([body[shared:]], device=self.device),
                    past_key_values=row_cache,
                    use_cache=True,
                    logits_to_keep=1,
                )
            per_row.append(row_cache)
        first = next(c for c in per_row if c is not None)
        positions = torch.arange(width - 1, device=self.device)
        for layer in range(len(first.layers)):
            k0 = first.layers[layer].keys
            keys = k0.new_zeros((len(rows), k0.shape[1], width - 1, k0.shape[3]))
            values = torch.zeros_like(keys)
            for i, (body, c) in enumerate(zip(bodies, per_row)):
                if c is not None:
                    keys[i, :, width - 1 - len(body) :] = c.layers[layer].keys[0]
                    values[i, :, width - 1 - len(body) :] = c.layers[layer].values[0]
            cache.update(keys, values, layer, {"cache_position": positions})

    def _completion(self, row: list[int], prompt_tokens: int, stop: Sequence[str]) -> Completion:
        """Cut one generated row at EOS / the first stop string and count its tokens."""
        eos = set(self.eos_token_ids)
        n, hit_eos = len(row), False
        for j, t in enumerate(row):
            if t in eos:
                n, hit_eos = j, True
                break
        text = self.tokenizer.decode(row[:n], skip_special_tokens=True)
        text, stopped = cut_at_stop(text, stop)
        if stopped:
            n = len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return Completion(text, prompt_tokens, n, "stop" if (hit_eos or stopped) else "length")
