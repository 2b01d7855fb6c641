"""Prefill reuse for the hf backend: an LRU of per-sequence KV caches, looked up by token prefix.

The key/value vectors a causal decoder computes for token ``i`` depend only on tokens ``0..i``, so
the KV of any sequence already computed serves every later sequence that starts with the same
tokens. :class:`PrefixKVCache` keeps the KV of recent sequences (prompts after their prefill, and
prompt + generated tokens when a row finishes) and answers "the longest prefix of these tokens
whose KV is known". Typical hits while judging:

* the judge instructions (system prompt + protocol instructions: ~140 tokens of a ~500-token PaV
  prompt) shared by every prompt of a protocol, across batches and ``generate`` calls (eval
  chunks, reward-server batches);
* the user question shared by the two orders (AB, BA) of a pair and by the N samples of an input;
* a tool-loop round, answer forcing: the next prompt is the previous prompt + the generated text
  (+ the tool output), so only the new tokens are prefilled.

Memory is bounded by a byte budget (``max_bytes``): the least recently used sequences are dropped
first, and a sequence that is a prefix of a newly stored one is dropped at once (the longer one
serves it). Every lookup compares the query with each stored sequence (a vectorised
longest-common-prefix), which is cheap for the tens of sequences a budget holds.

The cache belongs to one model: :meth:`PrefixKVCache.check_weights` empties it when any parameter
of the model was modified in place since the last call (torch's per-tensor version counter), so a
policy being trained never reuses KV computed with older weights.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Sequence

#: Default byte budget of an hf backend's prefix cache (1 GiB; the embedded 135M model needs
#: 46 KiB of fp32 KV per token, so ~23k tokens: ~40 judge prompts).
DEFAULT_PREFIX_CACHE_BYTES = 1 << 30

#: Reuse a cached prefix only when it covers at least this many tokens.
MIN_REUSE_TOKENS = 16

#: Per-layer key/value tensors of one sequence, each (1, kv_heads, tokens, head_dim).
LayerKV = list[tuple[Any, Any]]


def kv_bytes(kv: LayerKV) -> int:
    """Bytes held by the tensors of ``kv``."""
    return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)


def common_prefix_len(a: Any, b: Any) -> int:
    """Length of the longest common prefix of two 1-D int64 numpy arrays."""
    import numpy as np

    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else n


def shared_prefix_len(seqs: Sequence[Sequence[int]]) -> int:
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


class PrefixKVCache:
    """LRU of (token ids -> per-layer KV) with a byte budget and longest-prefix lookup.

    Args:
        max_bytes: Most bytes of KV tensors kept (0 disables the cache: lookups miss, inserts
            are dropped).
        min_tokens: Shortest prefix worth reusing (:data:`MIN_REUSE_TOKENS`).

    Not thread-safe by itself; the hf backend serialises generation with its lock.
    """

    def __init__(self, max_bytes: int = DEFAULT_PREFIX_CACHE_BYTES, min_tokens: int = MIN_REUSE_TOKENS) -> None:
        if max_bytes < 0:
            raise ValueError(f"prefix cache max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self.min_tokens = max(1, min_tokens)
        self._entries: OrderedDict[int, tuple[Any, LayerKV, int]] = OrderedDict()
        self._next = 0
        self.bytes = 0
        self._fingerprint: tuple[int, ...] | None = None
        self.hits = 0
        self.reused_tokens = 0
        self.lookups = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every stored sequence (the statistics are kept)."""
        self._entries.clear()
        self.bytes = 0

    def check_weights(self, model: Any) -> None:
        """Empty the cache when ``model``'s parameters changed in place since the last check.

        Uses the version counter torch bumps on every in-place write (optimizer steps,
        ``load_state_dict``), plus the identity and dtype of every parameter; a parameter whose
        version cannot be read (inference tensors) clears the cache on every call.
        """
        try:
            fp = tuple(x for p in model.parameters() for x in (id(p), p._version, hash(p.dtype)))
        except (RuntimeError, AttributeError):
            fp = None
        if fp is None or fp != self._fingerprint:
            self.clear()
        self._fingerprint = fp

    def lookup(self, tokens: Sequence[int], limit: int | None = None) -> tuple[int, LayerKV]:
        """The longest stored prefix of ``tokens`` (at most ``limit`` tokens).

        Returns:
            ``(n, kv)``: ``n`` reusable tokens (0 when none reaches ``min_tokens``) and the
            per-layer KV of those ``n`` tokens (views into the stored tensors: do not write).
        """
        import numpy as np

        self.lookups += 1
        if not self._entries:
            return 0, []
        query = np.asarray(tokens, dtype=np.int64)
        cap = len(query) if limit is None else min(limit, len(query))
        best, best_key = 0, None
        for key, (stored, _, _) in self._entries.items():
            n = min(common_prefix_len(stored, query), cap)
            if n > best:
                best, best_key = n, key
        if best < self.min_tokens or best_key is None:
            return 0, []
        self._entries.move_to_end(best_key)
        self.hits += 1
        self.reused_tokens += best
        _, kv, _ = self._entries[best_key]
        return best, [(k[:, :, :best], v[:, :, :best]) for k, v in kv]

    def insert(self, tokens: Sequence[int], kv: LayerKV) -> bool:
        """Store the KV of ``tokens`` (``kv`` tensors cover exactly ``len(tokens)`` positions).

        Sequences that are prefixes of ``tokens`` are dropped (the new one serves them); if
        ``tokens`` is itself a prefix of a stored sequence nothing is stored. The least recently
        used sequences are evicted until the budget holds.

        Returns:
            Whether the sequence was stored (False: shorter than ``min_tokens``, already
            covered, or larger than the whole budget).
        """
        import numpy as np

        if self.max_bytes == 0 or len(tokens) < self.min_tokens:
            return False
        size = kv_bytes(kv)
        if size > self.max_bytes:
            return False
        arr = np.asarray(tokens, dtype=np.int64)
        for key, (stored, _, nbytes) in list(self._entries.items()):
            n = common_prefix_len(stored, arr)
            if n == len(arr):  # already covered by a longer (or equal) stored sequence
                self._entries.move_to_end(key)
                return False
            if n == len(stored):
                del self._entries[key]
                self.bytes -= nbytes
        while self._entries and self.bytes + size > self.max_bytes:
            _, (_, _, nbytes) = self._entries.popitem(last=False)
            self.bytes -= nbytes
        self._entries[self._next] = (arr, kv, size)
        self._next += 1
        self.bytes += size
        return True
