"""transformers backend: batched generation on CPU or GPU.

How a call to :meth:`HFBackend.generate` runs:

1. every prompt is rendered with the model's chat template (a trailing assistant message is
   continued, see :func:`render_chat`) and tokenised once;
2. a prompt whose tokens plus ``max_new_tokens`` exceed the model's context is not generated:
   its Completion has ``finish_reason="prompt_too_long"`` and an error naming both numbers;
3. the other prompts run on one of two engines (``engine=``):

   * ``"continuous"`` (default where the model supports it, see
     :func:`~judgerl.backends.hf_engine.continuous_supported`): continuous batching
     (:mod:`judgerl.backends.hf_engine`): up to ``batch_size`` rows decode together, a row leaves
     the batch as soon as it finishes (EOS, stop string, token limit) and the next queued prompt
     takes its slot; each prompt's prefill runs alone, unpadded, from the longest prefix whose KV
     is already in the backend's prefix cache (:mod:`judgerl.backends.hf_prefix`: judge
     instructions, the question shared by both orders of a pair, the previous tool-loop round),
     across batches and calls;
   * ``"static"`` (the engine before continuous batching, kept for comparison and for models the
     continuous engine does not support): prompts sorted by length and cut into batches by
     :func:`plan_batches` (``rows x (longest prompt + max_new_tokens) <= max_batch_tokens``),
     one ``model.generate`` per batch with left padding, on CPU a preallocated ``StaticCache``
     and a per-row prefill sharing the batch's common prefix (:meth:`HFBackend._prefill_rows`);
     a batch runs until its longest row ends;

4. sampling (``temperature > 0``) draws each row's tokens from its own ``torch.Generator``,
   seeded with the prompt's own seed (the caller's ``seeds``, see
   :func:`~judgerl.backends.base.resolve_seeds`), one draw per token in both engines, so a
   prompt's completion does not depend on which other prompts share its call or batch;
5. outputs are cut at EOS / the first stop string and returned in input order; ``on_result``
   is called for each row as soon as it has finished.

``dtype="int8"`` quantises the linear layers to int8 with dynamic activation quantisation
(``torch.ao.quantization.quantize_dynamic``, CPU only): faster, but outputs are NOT identical to
fp32 (``bench/bench_generation.py --int8`` reports the verdict agreement on LLMBar pairs).
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, Sequence

from judgerl.backends.base import Backend, OnResult, SamplingParams, cut_at_stop, resolve_seeds, too_long_message
from judgerl.backends.chat import render_chat
from judgerl.backends.hf_batching import RowSeededSampler, RowWatcher, plan_batches
from judgerl.backends.hf_scores import HFScoreReader
from judgerl.backends.hf_prefix import DEFAULT_PREFIX_CACHE_BYTES, PrefixKVCache, shared_prefix_len
from judgerl.types import Completion, Messages

#: Accepted ``dtype`` names and the torch dtype attribute they map to.
DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "int8": "float32",  # fp32 model, linear layers quantised (see quantize_int8)
}

#: Generation engines (see the module docstring); "auto" = continuous where supported.
ENGINES = ("auto", "continuous", "static")


#: Shortest prefix shared by all prompts of a batch that is computed once and reused.
MIN_SHARED_PREFIX = 16


def quantize_int8(model: Any) -> Any:
    """``model`` with every ``nn.Linear`` replaced by an int8 dynamically quantised linear layer.

    Weights are quantised once (per-tensor, symmetric int8); activations are quantised on the fly
    per batch (Jacob et al. 2018, "Quantization and Training of Neural Networks for Efficient
    Integer-Arithmetic-Only Inference", Sec. 2). Uses torch's maintained CPU path
    ``torch.ao.quantization.quantize_dynamic`` (fbgemm/x86 kernels); its deprecation notices are
    silenced here. Outputs differ from fp32 (greedy texts diverge after some tokens); embeddings,
    norms and attention stay fp32.

    Raises:
        RuntimeError: this torch build has no quantised CPU engine.
    """
    import torch

    if not torch.backends.quantized.supported_engines or torch.backends.quantized.supported_engines == ["none"]:
        raise RuntimeError("this torch build has no quantised CPU engine for dtype='int8'")
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


class HFBackend(Backend):
    """Generate with a transformers causal LM (batched, left padding).

    Args:
        model_path: Local directory (or hub id, where a hub is reachable) of the model.
        batch_size: Maximum prompts per ``model.generate`` call.
        device: ``"cpu"``, ``"cuda"``, ... (default: cuda when available, else cpu).
        dtype: ``"float32"``/``"fp32"``, ``"bfloat16"``/``"bf16"``, ``"float16"``/``"fp16"`` or
            ``"int8"`` (CPU: fp32 model with int8 dynamically quantised linear layers, see
            :func:`quantize_int8`; outputs differ from fp32); default float32 on CPU (exact; see
            docs/backends.md for the bf16 trade-off) and bfloat16 on GPU.
        max_batch_tokens: KV-cache positions per batch, ``rows x (longest prompt +
            max_new_tokens)``; bounds memory for long prompts (see :func:`plan_batches`).
        static_cache: Preallocate each batch's KV cache to its final length; default True on
            CPU (saves re-concatenating the cache every step), False elsewhere (on GPU the
            dynamic cache is cheap, and a static one would make transformers compile per shape).
        num_threads: If given, ``torch.set_num_threads(num_threads)`` (process-wide).
        row_prefill: With the static cache, run each prompt's prefill alone and unpadded
            (see :meth:`_prefill_rows`); saves the FLOPs spent on padding.
        context_length: Override the model's context window in tokens (default: the config's
            ``max_position_embeddings``).
        engine: ``"continuous"`` (continuous batching + prefix cache), ``"static"`` (one
            ``generate`` per planned batch, the engine before continuous batching) or ``"auto"``
            (continuous when :func:`~judgerl.backends.hf_engine.continuous_supported`).
        prefix_cache_bytes: Byte budget of the prefix KV cache of the continuous engine (LRU,
            see :mod:`judgerl.backends.hf_prefix`); 0 disables reuse across prompts and calls.

    Generation is serialised with a lock, so one instance can be shared by threads. Use
    :meth:`from_loaded` to wrap a model that is already in memory (training rollouts).

    Raises:
        ValueError: ``batch_size``, ``max_batch_tokens`` or ``num_threads`` < 1, an unknown
            ``dtype`` or ``engine`` name, ``prefix_cache_bytes`` < 0, or ``int8`` off CPU.
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
        context_length: int | None = None,
        engine: str = "auto",
        prefix_cache_bytes: int = DEFAULT_PREFIX_CACHE_BYTES,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if dtype is not None and dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(DTYPES)}")
        if num_threads is not None:
            if num_threads < 1:
                raise ValueError(f"num_threads must be >= 1, got {num_threads}")
            torch.set_num_threads(num_threads)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if dtype is None:
            dtype = "float32" if device == "cpu" else "bfloat16"
        if dtype == "int8" and device != "cpu":
            raise ValueError(f"dtype='int8' (dynamic quantisation) runs on CPU only, not on {device!r}")
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, DTYPES[dtype]))
        model.to(device)
        model.eval()
        if dtype == "int8":
            model = quantize_int8(model)
        self._setup(model, tokenizer, f"hf/{model_path}", batch_size, max_batch_tokens, static_cache,
                    row_prefill, context_length, engine, prefix_cache_bytes)
        self.model_path = model_path
        self.dtype = "int8" if dtype == "int8" else DTYPES[dtype]

    @classmethod
    def from_loaded(
        cls,
        model: Any,
        tokenizer: Any,
        name: str = "policy",
        batch_size: int = 64,
        max_batch_tokens: int = 1 << 20,
        static_cache: bool | None = None,
        row_prefill: bool = True,
        engine: str = "auto",
        prefix_cache_bytes: int = DEFAULT_PREFIX_CACHE_BYTES,
    ) -> "HFBackend":
        """A backend over a model already in memory (e.g. the policy being trained; no copy).

        The model is used as it is (its train/eval mode and device are the caller's business);
        generation runs under ``torch.inference_mode``. The prefix cache is emptied whenever the
        model's parameters were modified in place since the previous call (an optimizer step),
        so rollouts never reuse KV of older weights.
        """
        self = cls.__new__(cls)
        self._setup(model, tokenizer, name, batch_size, max_batch_tokens, static_cache, row_prefill, None,
                    engine, prefix_cache_bytes)
        self.model_path = name
        self.dtype = str(next(model.parameters()).dtype).replace("torch.", "")
        return self

    def _setup(self, model: Any, tokenizer: Any, name: str, batch_size: int, max_batch_tokens: int,
               static_cache: bool | None, row_prefill: bool, context_length: int | None, engine: str,
               prefix_cache_bytes: int) -> None:
        from judgerl.backends.hf_engine import continuous_supported

        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; use one of {list(ENGINES)}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")
        self.name = name
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.device = str(next(model.parameters()).device)
        self.static_cache = self.device == "cpu" if static_cache is None else static_cache
        self.row_prefill = row_prefill
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.context_length = context_length or getattr(model.config, "max_position_embeddings", None)
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else ([eos] if eos is not None else []))
        if tokenizer.eos_token_id is not None:
            eos_ids.add(tokenizer.eos_token_id)
        self.eos_token_ids = sorted(eos_ids)
        self._lock = threading.Lock()
        self.prefix_cache = PrefixKVCache(prefix_cache_bytes)
        why_not = continuous_supported(model)
        if engine == "continuous" and why_not:
            raise ValueError(f"engine='continuous' cannot run {name}: {why_not}; use engine='static'")
        self.engine = "static" if engine == "static" or why_not else "continuous"
        #: Why "auto" chose the static engine (None when continuous).
        self.engine_note = why_not if engine == "auto" else None
        self.last_stats: Any = None

    def clear_prefix_cache(self) -> None:
        """Forget every cached prefix KV (benchmarks call it so that each timed run starts cold)."""
        with self._lock:
            self.prefix_cache.clear()

    def score_reader(self) -> HFScoreReader:
        """Score probabilities from this model's logits (:class:`~judgerl.backends.hf_scores.HFScoreReader`,
        one per backend)."""
        return HFScoreReader.for_backend(self)

    def describe(self) -> str:
        """One line: name, dtype, device, engine, batch size, prefix cache budget and whether decode
        steps use the split attention of :mod:`~judgerl.backends.hf_decode` (``--verbose``)."""
        from judgerl.backends.hf_decode import usable

        cache = f"prefix cache {self.prefix_cache.max_bytes / 2**20:.0f} MiB" if self.engine == "continuous" else \
            "no prefix cache"
        if self.engine == "continuous":
            cache += ", split decode attention" if usable(self.model) else ", one attention call per decode step"
        note = f" (static: {self.engine_note})" if self.engine_note else ""
        return (f"{self.name}: {self.dtype} on {self.device}, engine {self.engine}{note}, batch {self.batch_size}, "
                f"{cache}")

    def render(self, messages: Messages) -> str:
        """The prompt text for ``messages`` (see :func:`~judgerl.backends.chat.render_chat`)."""
        return render_chat(self.tokenizer, messages)

    def generate(
        self,
        prompts: Sequence[Messages],
        params: SamplingParams,
        *,
        seeds: Sequence[int] | None = None,
        on_result: OnResult | None = None,
        min_new_tokens: int = 0,
    ) -> list[Completion]:
        """Generate one completion per prompt, in input order.

        Args:
            prompts: Chat prompts; a trailing assistant message is continued.
            params: Sampling parameters. ``temperature == 0`` is greedy; otherwise each prompt
                samples from its own generator seeded by its seed (see ``seeds``).
            seeds: One seed per prompt (see :func:`~judgerl.backends.base.resolve_seeds`).
            on_result: Called ``f(index, completion)`` as soon as each row has finished.
            min_new_tokens: Suppress EOS before this many new tokens (benchmarks use it to
                make every row generate the same number of tokens).

        Returns:
            Completions with the generated text (EOS and stop strings cut off), prompt and
            completion token counts, and ``finish_reason`` "stop" (EOS or stop string),
            "length" or "prompt_too_long" (not generated; ``error`` names the numbers).

        Raises:
            ValueError: bad ``seeds``, or a message without role/content.
        """
        if not prompts:
            return []
        texts = [self.render(p) for p in prompts]
        ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        row_seeds = resolve_seeds(texts, params, seeds)
        out: list[Completion | None] = [None] * len(texts)
        fits = []
        for i, x in enumerate(ids):
            if self.context_length is not None and len(x) + params.max_new_tokens > self.context_length:
                msg = too_long_message(self.name, len(x), params.max_new_tokens, self.context_length)
                out[i] = Completion("", len(x), 0, "prompt_too_long", error=msg)
                if on_result is not None:
                    on_result(i, out[i])
            else:
                fits.append(i)
        if self.engine == "continuous":
            self._generate_continuous([ids[i] for i in fits], fits, params, row_seeds, min_new_tokens, out, on_result)
            return out  # type: ignore[return-value]
        batches = plan_batches([len(ids[i]) for i in fits], self.batch_size, self.max_batch_tokens,
                               params.max_new_tokens)
        with self._lock:
            for local in batches:
                idx = [fits[j] for j in local]
                rows = [ids[i] for i in idx]
                bseeds = [row_seeds[i] for i in idx] if row_seeds is not None else None

                def report(k: int, c: Completion, idx: list[int] = idx) -> None:
                    out[idx[k]] = c
                    if on_result is not None:
                        on_result(idx[k], c)

                self._generate_batch(rows, params, bseeds, min_new_tokens, report)
        return out  # type: ignore[return-value]

    def _generate_continuous(self, rows: list[list[int]], idx: list[int], params: SamplingParams,
                             row_seeds: list[int] | None, min_new_tokens: int, out: list[Completion | None],
                             on_result: OnResult | None) -> None:
        """Run the continuous engine on ``rows`` (prompt ``idx[k]`` of the call is ``rows[k]``)."""
        from judgerl.backends.hf_engine import generate_continuous

        if not rows:
            return

        def report(k: int, new_ids: list[int]) -> None:
            c = self._completion(new_ids, len(rows[k]), params.stop)
            out[idx[k]] = c
            if on_result is not None:
                on_result(idx[k], c)

        capacity = max(len(r) for r in rows) + params.max_new_tokens
        slots = min(self.batch_size, max(1, self.max_batch_tokens // capacity))
        seeds = [row_seeds[i] for i in idx] if row_seeds is not None else None
        with self._lock:
            self.prefix_cache.check_weights(self.model)
            self.last_stats = generate_continuous(self, rows, params, seeds, min_new_tokens, report, slots,
                                                  self.prefix_cache)

    def _generate_batch(
        self,
        rows: list[list[int]],
        params: SamplingParams,
        seeds: list[int] | None,
        min_new_tokens: int,
        report: Any,
    ) -> None:
        """Generate one batch; ``report(row, completion)`` once per row as soon as it is final."""
        import torch
        from transformers import GenerationConfig, LogitsProcessorList, StaticCache, StoppingCriteriaList

        tok = self.tokenizer
        tok.padding_side = "left"
        enc = tok.pad({"input_ids": rows}, padding=True, return_tensors="pt").to(self.device)
        width = enc["input_ids"].shape[1]
        # Greedy selection always; sampling happens in RowSeededSampler (see its docstring).
        config = GenerationConfig(
            max_new_tokens=params.max_new_tokens,
            min_new_tokens=min(min_new_tokens, params.max_new_tokens) or None,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
            eos_token_id=self.eos_token_ids,
            stop_strings=[s for s in params.stop if s] or None,  # "" would stop every row at once
            disable_compile=True,
        )
        kwargs: dict[str, Any] = {"generation_config": config}
        if config.stop_strings:
            kwargs["tokenizer"] = tok
        if seeds is not None:
            gens = [torch.Generator(device=self.device).manual_seed(s) for s in seeds]
            kwargs["logits_processor"] = LogitsProcessorList(
                [RowSeededSampler(gens, params.temperature, params.top_p)]
            )
        done: set[int] = set()

        def finish(k: int, new_ids: list[int]) -> None:
            if k not in done:
                done.add(k)
                report(k, self._completion(new_ids, len(rows[k]), params.stop))

        done_ids = sorted(set(self.eos_token_ids) | ({tok.pad_token_id} if tok.pad_token_id is not None else set()))
        kwargs["stopping_criteria"] = StoppingCriteriaList([RowWatcher(width, done_ids, finish)])
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
        for k, row in enumerate(seqs[:, width:].tolist()):
            finish(k, row)

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
        shared = shared_prefix_len(bodies)
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
        if self.tokenizer.pad_token_id is not None:
            eos.add(self.tokenizer.pad_token_id)  # rows finished by a stop string are padded
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
