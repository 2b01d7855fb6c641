"""Decode-step kernels of the continuous engine (:mod:`judgerl.backends.hf_engine`) on CPU: split
attention (length buckets and a shared-prefix cascade, so a decode step reads each row's KV once
and the judge instructions every row starts with once for all rows) and a column-chunked LM head.

Why: a decode step over 32 judge rows is memory-bound. With one ``sdpa`` call per layer every row
reads ``width`` = the longest row's length + 1 columns of KV (the rest masked), and every row reads
its own copy of the shared prompt prefix (system prompt + protocol instructions, 139 tokens of a
~500-token PaV prompt). Measured on the fixed workload of ``bench/bench_generation.py`` (32 rows,
2 shared cores): attention was 38% of a decode step.

What :func:`slot_attention` computes for one layer (the same attention, split exactly):

* **prefix part** (``plan.shared`` = P > 0): the queries of all ``n`` rows attend the P shared
  columns in one call: queries (1, kv_heads, n x groups, head_dim) against row 0's first P
  columns. Only used when the first P columns of every active row hold equal KV (the engine
  checks it when a row is admitted, see :func:`same_prefix_kv`), so each row still attends
  exactly its own keys and values;
* **suffix part**: rows split into contiguous chunks (:func:`plan_chunks`); each chunk attends
  its columns ``[P, w)``, ``w`` = its longest row + 1, with an additive mask (0 / -inf) hiding
  columns past each row's length;
* the two softmax parts are merged with their log-sum-exps (the standard split-softmax identity,
  as in FlashAttention's block merge: Dao et al. 2022, "FlashAttention", Algorithm 1, the update of the
  running max and normaliser;
  cascade inference: Ye et al. 2024, "Cascade Inference"):
  ``out = (e^{l1 - m} o1 + e^{l2 - m} o2) / (e^{l1 - m} + e^{l2 - m})``, ``m = max(l1, l2)``.

The split changes only rounding (fp32: within ~1e-6 of one ``sdpa`` call); greedy outputs are
checked equal to plain ``generate`` by the tests and the bench, like the rest of the engine.

It is registered with transformers' ``AttentionInterface`` as ``"judgerl_slots"`` (mask function:
sdpa's) and selected for the duration of one engine call; without a plan (prefill, other callers)
it is exactly transformers' ``sdpa_attention_forward``.

**LM head** (:func:`chunked_lm_head`): the vocabulary projection of a decode step, (rows x
hidden) @ (vocab x hidden)^T, is one GEMM with a tall, thin weight (SmolLM2: 49,152 x 576, 113 MB
fp32) that MKL runs at 17-57 GFLOP/s for 8-32 rows; the same product in blocks of
:data:`LM_HEAD_BLOCK` vocabulary rows ran 25-33% faster, bitwise equal (2 cores, AVX2, measured
for 8, 32 and 64 rows). Each block is the same dot products, so no output changes.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

SLOT_ATTENTION = "judgerl_slots"
MIN_SHARED = 32  # shorter shared prefixes are not worth a separate attention call (tokens)
CHUNK_OVERHEAD_BYTES = 256 * 1024  # cost of one more attention call, in bytes of KV read (planner)
LM_HEAD_BLOCK = 1024  # vocabulary rows per block of the chunked LM head

_registered = False
_patch_lock = threading.Lock()  # guards the per-model use counts of the two context managers


@dataclass
class DecodePlan:
    """How one decode step's attention is split (the same for every layer).

    Attributes:
        chunks: Contiguous row ranges ``(start, end, width)``: rows ``[start, end)`` attend
            columns ``[shared, width)`` of their slots.
        shared: Leading columns every active row holds with equal KV (0: no prefix part).
        mask: Additive float mask (rows, 1, 1, max width): 0 where a row may attend, -inf after.
    """

    chunks: list[tuple[int, int, int]]
    shared: int
    mask: Any


def plan_chunks(lengths: Sequence[int], shared: int, column_bytes: int) -> list[tuple[int, int, int]]:
    """Split rows into contiguous chunks minimising the KV bytes a decode step reads.

    Args:
        lengths: Cached positions of each active row (its new token goes at that position).
        shared: Leading columns read once for all rows (not counted per chunk).
        column_bytes: Bytes of K and V of one position of one row (all kv heads, one layer).

    Returns:
        ``(start, end, width)`` per chunk, covering ``range(len(lengths))`` in order; ``width``
        = the chunk's longest row + 1. Cost minimised (dynamic programme, O(rows^2)): per chunk
        ``(end - start) * (width - shared)`` columns plus :data:`CHUNK_OVERHEAD_BYTES` /
        ``column_bytes`` for the call.
    """
    n = len(lengths)
    if n == 0:
        return []
    overhead = CHUNK_OVERHEAD_BYTES / max(1, column_bytes)
    best = [0.0] + [float("inf")] * n
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        top = 0
        for start in range(end - 1, -1, -1):
            top = max(top, lengths[start])
            cost = best[start] + overhead + (end - start) * (top + 1 - shared)
            if cost < best[end]:
                best[end], cut[end] = cost, start
    chunks, end = [], n
    while end:
        start = cut[end]
        chunks.append((start, end, max(lengths[start:end]) + 1))
        end = start
    return chunks[::-1]


def same_prefix_kv(keys: Sequence[Any], values: Sequence[Any], a: int, b: int, n: int) -> bool:
    """True when slots ``a`` and ``b`` hold bitwise-equal K and V in their first ``n`` columns
    (every layer). ``keys``/``values``: per-layer (slots, kv_heads, capacity, head_dim) tensors."""
    import torch

    return all(torch.equal(k[a, :, :n], k[b, :, :n]) and torch.equal(v[a, :, :n], v[b, :, :n])
               for k, v in zip(keys, values))


def register() -> None:
    """Register :func:`slot_attention` with transformers (idempotent)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(SLOT_ATTENTION, slot_attention)
    AttentionMaskInterface.register(SLOT_ATTENTION, sdpa_mask)
    _registered = True


def usable(model: Any) -> bool:
    """True when the model runs sdpa attention on CPU (what :func:`slot_attention` replaces)."""
    impl = getattr(model.config, "_attn_implementation", None)
    device = next(model.parameters()).device
    return impl in ("sdpa", SLOT_ATTENTION) and device.type == "cpu"


@contextmanager
def slot_attention_for(model: Any) -> Iterator[bool]:
    """Select ``"judgerl_slots"`` attention on ``model`` for the block; yields whether it is in use
    (False: the model is not sdpa-on-CPU and is left as it is).

    Reentrant and thread-safe per model (backends sharing one model, e.g. ``from_loaded``, may
    nest or overlap calls): the first entrant switches, the last one to leave restores what was
    there; in between, a call without a plan still gets exactly sdpa.
    """
    if not usable(model):
        yield False
        return
    register()
    with _patch_lock:
        users = getattr(model, "_judgerl_slot_users", 0)
        if users == 0:
            model._judgerl_slot_before = model.config._attn_implementation
            if model._judgerl_slot_before != SLOT_ATTENTION:
                model.set_attn_implementation(SLOT_ATTENTION)
        model._judgerl_slot_users = users + 1
    try:
        yield True
    finally:
        with _patch_lock:
            model._judgerl_slot_users -= 1
            if model._judgerl_slot_users == 0 and model.config._attn_implementation != model._judgerl_slot_before:
                model.set_attn_implementation(model._judgerl_slot_before)


def slot_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, dropout: float = 0.0,
                   scaling: float | None = None, judgerl_plan: DecodePlan | None = None, **kwargs: Any) -> tuple[Any, None]:
    """transformers attention interface: ``sdpa_attention_forward`` unless a decode plan is given.

    Args:
        query: (rows, heads, 1, head_dim) with a plan.
        key, value: (rows, kv_heads, width, head_dim): the slots' cached KV (new token included).
        judgerl_plan: The step's :class:`DecodePlan` (passed by the engine as a model kwarg).

    Returns:
        ``(output, None)``, output (rows, 1, heads, head_dim).
    """
    if judgerl_plan is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    import torch

    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    rows, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    groups = heads // kv_heads
    q = query.reshape(rows, kv_heads, groups, dim)  # head h = kv head h // groups (repeat_kv's order)
    plan, p = judgerl_plan, judgerl_plan.shared
    outs, lses = [], []
    for start, end, width in plan.chunks:
        o, lse = flash(q[start:end], key[start:end, :, p:width], value[start:end, :, p:width], 0.0, False,
                       attn_mask=plan.mask[start:end, :, :, p:width], scale=scaling)
        outs.append(o)
        lses.append(lse)
    out = torch.cat(outs) if len(outs) > 1 else outs[0]
    if p:
        lse2 = torch.cat(lses) if len(lses) > 1 else lses[0]
        qp = q.permute(1, 0, 2, 3).reshape(1, kv_heads, rows * groups, dim)
        o1, lse1 = flash(qp, key[:1, :, :p], value[:1, :, :p], 0.0, False, scale=scaling)
        o1 = o1.reshape(kv_heads, rows, groups, dim).permute(1, 0, 2, 3)
        lse1 = lse1.reshape(kv_heads, rows, groups).permute(1, 0, 2)
        m = torch.maximum(lse1, lse2)
        w1, w2 = torch.exp(lse1 - m)[..., None], torch.exp(lse2 - m)[..., None]
        out = ((w1 * o1 + w2 * out) / (w1 + w2)).to(query.dtype)  # the log-sum-exps are fp32
    return out.reshape(rows, 1, heads, dim), None


class _BlockedLinear:
    """Callable standing in for an ``nn.Linear`` LM head: the same product, computed in blocks of
    :data:`LM_HEAD_BLOCK` output features when there is more than one row."""

    def __init__(self, linear: Any) -> None:
        self.linear = linear

    def __call__(self, x: Any) -> Any:
        import torch

        w, b = self.linear.weight, self.linear.bias
        flat = x.reshape(-1, x.shape[-1])
        if flat.shape[0] < 2 or (torch.is_grad_enabled() and (w.requires_grad or x.requires_grad)):
            return torch.nn.functional.linear(x, w, b)  # out= has no autograd: training keeps F.linear
        out = torch.empty(flat.shape[0], w.shape[0], dtype=torch.result_type(flat, w), device=flat.device)
        for s in range(0, w.shape[0], LM_HEAD_BLOCK):
            part = out[:, s : s + LM_HEAD_BLOCK]
            if b is None:
                torch.mm(flat, w[s : s + LM_HEAD_BLOCK].t(), out=part)
            else:
                torch.addmm(b[s : s + LM_HEAD_BLOCK], flat, w[s : s + LM_HEAD_BLOCK].t(), out=part)
        return out.reshape(*x.shape[:-1], w.shape[0])


@contextmanager
def chunked_lm_head(model: Any) -> Iterator[bool]:
    """Run ``model``'s LM head in vocabulary blocks for the block (restored after); yields whether
    it does (only a plain float ``nn.Linear`` head on CPU with no instance ``forward`` of someone
    else's, e.g. an accelerate hook: int8, adapter-wrapped or hooked heads are left as they are).

    Reentrant and thread-safe per head, like :func:`slot_attention_for`.
    """
    import torch

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if (type(head) is not torch.nn.Linear or not head.weight.dtype.is_floating_point
            or head.weight.device.type != "cpu"):
        yield False
        return
    with _patch_lock:
        users = getattr(head, "_judgerl_block_users", 0)
        if users == 0 and "forward" in vars(head):  # a forward someone else installed: keep it
            mine = False
        else:
            mine = True
            if users == 0:
                head.forward = _BlockedLinear(head)  # instance attribute: nn.Module.__call__ finds it
            head._judgerl_block_users = users + 1
    if not mine:
        yield False
        return
    try:
        yield True
    finally:
        with _patch_lock:
            head._judgerl_block_users -= 1
            if head._judgerl_block_users == 0:
                del head.forward
