"""Continuous batching for the hf backend: rows leave the decode batch when they finish and queued
prompts take their place.

Why our own loop and not transformers' continuous batching (``model.generate_batch`` /
``ContinuousBatchingManager``, transformers 5.24): on CPU it runs (fp32, sdpa) and its greedy
outputs matched ``generate`` on the prompts we tried, but it has no per-request sampling seeds
(one global ``torch.manual_seed`` for the whole manager, so a sample would depend on which other
requests share the batch), no stop strings, no per-request completion callback other than
polling, and on 2 CPU cores it was slower than a plain ``generate`` loop (8 PaV prompts x 24
tokens: 45 s vs 30 s, warm-up included; its paged cache and scheduler are built for GPUs).
``bench/bench_generation.py`` runs it as a peer engine.

How :func:`generate_continuous` works (one ``HFBackend.generate`` call):

1. prompts are admitted longest first into at most ``slots`` rows. Admitting a prompt runs its
   prefill alone and unpadded, starting from the longest prefix whose KV is in the backend's
   :class:`~judgerl.backends.hf_prefix.PrefixKVCache` (judge instructions, the question shared by
   both orders, the previous round of a tool loop), and picks its first token from the prefill
   logits;
2. every decode step runs the model once on the active rows (one new token each). Each row has
   its own length: the KV of row ``b`` sits in columns ``[0, length_b)`` of its slot in
   :class:`SlotKV` (preallocated: no cache re-concatenation per step), its position id is
   ``length_b``, and a boolean mask hides the columns past its length;
3. a row finishes at EOS, at a stop string or at ``max_new_tokens``: its completion is reported
   at once (``on_result``), its KV (prompt + generated tokens) goes to the prefix cache, and its
   slot takes the next queued prompt, or, when the queue is empty, the last active row moves into
   it so active rows stay contiguous;
4. sampling draws each row's tokens from its own generator seeded with the row's seed, one draw
   per generated token (the same stream as the static engine), so a row's tokens depend only on
   its prompt and seed, never on the other rows;
5. progress goes to the :class:`~judgerl.backends.base.ProgressListener` of the caller's
   :func:`~judgerl.backends.base.reporting_progress` block, if any: ``on_started`` per admitted
   prompt (with the tokens its prefill computed) and ``on_tokens`` once per decode step (one call
   per step, not per row).

Supported: decoder-only models whose layers all use full attention with the ``sdpa`` or
``eager`` attention implementation (Llama, Qwen2/3, SmolLM, Mistral without a sliding window...);
:func:`continuous_supported` says why not otherwise, and the backend falls back to the static
engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from judgerl.backends.base import SamplingParams, progress_listener
from judgerl.backends.hf_batching import sample_rows
from judgerl.backends.hf_decode import (MIN_SHARED, DecodePlan, chunked_lm_head, plan_chunks, same_prefix_kv,
                                        slot_attention_for)
from judgerl.backends.hf_prefix import LayerKV, PrefixKVCache, shared_prefix_len


def continuous_supported(model: Any) -> str | None:
    """None when :func:`generate_continuous` can run ``model``, else the reason it cannot."""
    cfg = model.config
    impl = getattr(cfg, "_attn_implementation", None) or "eager"
    if impl not in ("sdpa", "eager"):
        return f"attention implementation {impl!r} (continuous batching needs sdpa or eager)"
    if getattr(cfg, "is_encoder_decoder", False):
        return "encoder-decoder model"
    kinds = set(getattr(cfg, "layer_types", None) or ["full_attention"])
    if kinds != {"full_attention"}:
        return f"layer types {sorted(kinds)} (continuous batching needs full attention in every layer)"
    if getattr(cfg, "sliding_window", None) and getattr(cfg, "use_sliding_window", True):
        return "sliding-window attention"
    if not hasattr(cfg, "num_hidden_layers"):
        return "model config has no num_hidden_layers"
    return None


def kv_geometry(model: Any) -> tuple[int, int, int]:
    """(layers, kv_heads, head_dim) of a decoder config."""
    cfg = model.config
    heads = cfg.num_attention_heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return cfg.num_hidden_layers, kv_heads, head_dim


class SlotKV:
    """The decode batch's KV cache: per layer, keys and values of shape (slots, kv_heads,
    capacity, head_dim); row ``b`` holds ``lengths[b]`` positions starting at column 0.

    Passed to the model as its cache: the model calls :meth:`update` once per layer with the new
    token's keys/values (rows, kv_heads, 1, head_dim); they are written at each row's own length
    and the filled part ``[:rows, :, :width]`` is returned for attention (columns past a row's
    length are masked by the caller).

    ``shared`` > 0: every prompt of the call starts with the same ``shared`` tokens; a slot is
    ``verified`` when its first ``shared`` columns hold the same KV as the other verified active
    slots (checked by :meth:`put`), and a decode plan reads those columns once for all rows
    only when every active row is verified (:mod:`judgerl.backends.hf_decode`).
    """

    def __init__(self, model: Any, slots: int, capacity: int, shared: int = 0) -> None:
        import torch

        n_layers, kv_heads, head_dim = kv_geometry(model)
        p = next(model.parameters())
        dtype = p.dtype if p.dtype.is_floating_point else torch.float32
        shape = (slots, kv_heads, capacity, head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=p.device) for _ in range(n_layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=p.device) for _ in range(n_layers)]
        self.capacity = capacity
        self.lengths = [0] * slots
        self.shared = shared
        self.verified = [False] * slots
        self.column_bytes = 2 * kv_heads * head_dim * self.keys[0].element_size()
        self._rows: Any = None
        self._pos: Any = None
        self._width = 0

    @property
    def dtype(self) -> Any:
        return self.keys[0].dtype

    def put(self, slot: int, kv: LayerKV, length: int, active: int = 0) -> None:
        """Write one sequence's KV (tensors (1, kv_heads, length, head_dim)) into ``slot``;
        ``active``: slots ``[0, active)`` hold the other active rows (for the shared-prefix check)."""
        for layer, (k, v) in enumerate(kv):
            self.keys[layer][slot, :, :length] = k[0]
            self.values[layer][slot, :, :length] = v[0]
        self.lengths[slot] = length
        if self.shared:
            ref = next((j for j in range(active) if j != slot and self.verified[j]), None)
            self.verified[slot] = ref is None or same_prefix_kv(self.keys, self.values, ref, slot, self.shared)

    def move(self, src: int, dst: int) -> None:
        """Copy row ``src`` into slot ``dst`` (the first ``lengths[src]`` columns)."""
        n = self.lengths[src]
        for k, v in zip(self.keys, self.values):
            k[dst, :, :n] = k[src, :, :n]
            v[dst, :, :n] = v[src, :, :n]
        self.lengths[dst] = n
        self.verified[dst] = self.verified[src]

    def row_kv(self, slot: int) -> LayerKV:
        """A copy of row ``slot``'s KV as (1, kv_heads, length, head_dim) tensors."""
        n = self.lengths[slot]
        return [(k[slot : slot + 1, :, :n].clone(), v[slot : slot + 1, :, :n].clone())
                for k, v in zip(self.keys, self.values)]

    def prepare(self, rows: int, device: Any) -> tuple[Any, Any]:
        """Set up one decode step over slots ``[0, rows)``.

        Returns:
            ``(position_ids, mask)``: (rows, 1) long positions and a (rows, 1, 1, width) bool
            mask, True where a row may attend (its cached columns and the new token).
        """
        import torch

        pos = torch.tensor(self.lengths[:rows], dtype=torch.long, device=device)
        self._width = int(max(self.lengths[:rows])) + 1
        if self._width > self.capacity:
            raise RuntimeError(f"KV slot overflow: {self._width} > capacity {self.capacity}")
        self._rows = torch.arange(rows, device=device)
        self._pos = pos
        mask = torch.arange(self._width, device=device)[None, :] <= pos[:, None]
        return pos[:, None], mask[:, None, None, :]

    def plan(self, rows: int, mask: Any) -> DecodePlan:
        """The split attention plan of the step :meth:`prepare` set up (``mask`` its bool mask)."""
        import torch

        shared = self.shared if all(self.verified[:rows]) else 0
        additive = torch.zeros(mask.shape, dtype=self.dtype, device=mask.device).masked_fill(~mask, float("-inf"))
        return DecodePlan(plan_chunks(self.lengths[:rows], shared, self.column_bytes), shared, additive)

    def advance(self, rows: int) -> None:
        """Every active row gained one cached position."""
        for i in range(rows):
            self.lengths[i] += 1

    def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """Cache the new token of every active row; return the keys/values to attend over."""
        k, v = self.keys[layer_idx], self.values[layer_idx]
        n = key_states.shape[0]
        k[self._rows, :, self._pos] = key_states[:, :, 0].to(k.dtype)
        v[self._rows, :, self._pos] = value_states[:, :, 0].to(v.dtype)
        return k[:n, :, : self._width], v[:n, :, : self._width]


@dataclass
class _Row:
    index: int
    prompt: list[int]
    generator: Any = None
    gen: list[int] = field(default_factory=list)


@dataclass
class EngineStats:
    """Counters of one :func:`generate_continuous` call: decode steps and row-tokens, prompt
    tokens prefilled and reused from the prefix cache, seconds spent in prefill and in decode,
    the prompt prefix every row shares (tokens) and the decode steps whose attention read it once
    for all rows (:mod:`judgerl.backends.hf_decode`)."""

    decode_steps: int = 0
    shared_prefix: int = 0
    shared_steps: int = 0
    decode_row_tokens: int = 0
    prefill_tokens: int = 0
    reused_tokens: int = 0
    prefill_s: float = 0.0
    decode_s: float = 0.0


def generate_continuous(
    backend: Any,
    rows: Sequence[list[int]],
    params: SamplingParams,
    seeds: Sequence[int] | None,
    min_new_tokens: int,
    report: Callable[[int, list[int]], None],
    slots: int,
    prefix: PrefixKVCache,
) -> EngineStats:
    """Generate for ``rows`` (token ids of prompts that fit the context) with continuous batching.

    Args:
        backend: The :class:`~judgerl.backends.hf.HFBackend` (model, tokenizer, eos ids, device).
        rows: Prompt token ids; every row must leave room for ``max_new_tokens``.
        params: Sampling parameters (greedy when ``temperature == 0``).
        seeds: One seed per row when sampling, else None.
        min_new_tokens: EOS is suppressed before this many new tokens.
        report: Called ``f(row, generated_ids)`` once per row as soon as it finished (ids up to
            and including the EOS / the token that completed a stop string).
        slots: Most rows decoded together.
        prefix: The prefix KV cache to read and fill.

    Returns:
        Counters of the call.
    """
    import time

    import torch

    model, tok, device = backend.model, backend.tokenizer, backend.device
    stats = EngineStats()
    if not rows:
        return stats
    max_new = params.max_new_tokens
    min_new = min(min_new_tokens, max_new)
    eos = sorted(set(backend.eos_token_ids))
    eos_set = set(eos)
    if tok.pad_token_id is not None:
        eos_set.add(tok.pad_token_id)  # _completion cuts there too; decoding past it is wasted
    stops = [s for s in params.stop if s]
    window = max((4 * len(s) + 8 for s in stops), default=0)  # tokens covering any stop string
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
    capacity = len(rows[order[0]]) + max_new
    slots = max(1, min(slots, len(rows)))
    shared = shared_prefix_len(rows)
    cache = SlotKV(model, slots, capacity, shared=shared if shared >= MIN_SHARED else 0)
    stats.shared_prefix = cache.shared
    active: list[_Row] = []
    queue = list(reversed(order))  # pop() gives the longest remaining
    sampled = seeds is not None and params.temperature > 0
    listener = progress_listener()

    def choose(scores: Any, batch: list[_Row]) -> list[int]:
        if min_new and eos:
            early = [j for j, r in enumerate(batch) if len(r.gen) < min_new]
            if early:
                scores[torch.tensor(early, device=scores.device)[:, None], torch.tensor(eos, device=scores.device)] = -float("inf")
        if sampled:
            return sample_rows(scores, [r.generator for r in batch], params.temperature, params.top_p).tolist()
        return scores.argmax(dim=-1).tolist()

    def finished(r: _Row) -> bool:
        if r.gen[-1] in eos_set or len(r.gen) >= max_new:
            return True
        if stops:
            tail = tok.decode(r.gen[-window:], skip_special_tokens=True)
            return any(s in tail for s in stops)
        return False

    def admit() -> _Row | None:
        """Prefill the next queued prompt; None when it finished at its first token."""
        i = queue.pop()
        r = _Row(i, list(rows[i]))
        if sampled:
            r.generator = torch.Generator(device=device).manual_seed(int(seeds[i]))  # type: ignore[index]
        computed = stats.prefill_tokens
        kv, logits = prefill(backend, r.prompt, prefix, stats)
        r.gen.append(choose(logits[None, :].clone(), [r])[0])
        if listener is not None:
            listener.on_started(1, stats.prefill_tokens - computed)
            listener.on_tokens(1)
        if finished(r):
            report(r.index, r.gen)
            return None
        cache.put(len(active), kv, len(r.prompt), active=len(active))
        return r

    def fill() -> None:
        while queue and len(active) < slots:
            r = admit()
            if r is not None:
                active.append(r)

    kw = _cache_kwarg(model)
    eager = getattr(model.config, "_attn_implementation", "sdpa") == "eager"
    with torch.inference_mode(), slot_attention_for(model) as split, chunked_lm_head(model):
        fill()
        while active:
            t0 = time.perf_counter()
            n = len(active)
            pos, mask = cache.prepare(n, device)
            extra: dict[str, Any] = {kw: cache}
            if split:
                plan = extra["judgerl_plan"] = cache.plan(n, mask)
                stats.shared_steps += plan.shared > 0
            elif eager:
                mask = torch.zeros(mask.shape, dtype=cache.dtype, device=device).masked_fill(~mask, torch.finfo(cache.dtype).min)
            ids = torch.tensor([[r.gen[-1]] for r in active], dtype=torch.long, device=device)
            out = model(input_ids=ids, position_ids=pos, attention_mask=mask, use_cache=True, logits_to_keep=1,
                        **extra)
            cache.advance(n)
            stats.decode_steps += 1
            stats.decode_row_tokens += n
            picks = choose(out.logits[:, -1, :].float(), active)
            stats.decode_s += time.perf_counter() - t0
            if listener is not None:
                listener.on_tokens(n)
            done = []
            for j, (r, t) in enumerate(zip(active, picks)):
                r.gen.append(t)
                if finished(r):
                    done.append(j)
            for j in sorted(done, reverse=True):
                r = active[j]
                prefix.insert(r.prompt + r.gen[:-1], cache.row_kv(j))
                report(r.index, r.gen)
                last = len(active) - 1
                if j != last:
                    cache.move(last, j)
                    active[j] = active[last]
                active.pop()
            if done:
                # refill freed slots; rows admitted now start at the end of the active list
                fill()
    return stats


def _cache_kwarg(model: Any) -> str:
    """The name of the cache argument of ``model.forward`` (transformers 5.x: ``cache``)."""
    import inspect

    try:
        names = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in names else "past_key_values"


def prefill(backend: Any, tokens: list[int], prefix: PrefixKVCache, stats: EngineStats | None = None) -> tuple[LayerKV, Any]:
    """Prefill ``tokens`` alone, starting from the longest cached prefix; store the result.

    Returns:
        ``(kv, logits)``: per-layer KV of all ``len(tokens)`` positions, each (1, kv_heads,
        len(tokens), head_dim), and the float logits (vocab,) of the last position.
    """
    import time

    import torch
    from transformers import DynamicCache

    t0 = time.perf_counter()
    model = backend.model
    hit, kv = prefix.lookup(tokens, limit=len(tokens) - 1)
    dyn = DynamicCache()
    for layer, (k, v) in enumerate(kv):
        dyn.update(k, v, layer)  # copies: later updates concatenate, the stored tensors stay intact
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([tokens[hit:]], device=backend.device), use_cache=True,
                    logits_to_keep=1, **{_cache_kwarg(model): dyn})
    full = [(layer.keys, layer.values) for layer in dyn.layers]
    prefix.insert(tokens, full)
    if stats is not None:
        stats.prefill_tokens += len(tokens) - hit
        stats.reused_tokens += hit
        stats.prefill_s += time.perf_counter() - t0
    return full, out.logits[0, -1].float()
