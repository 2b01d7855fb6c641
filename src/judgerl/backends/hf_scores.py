"""Score probabilities from a transformers model's logits, for the expected score (judgerl.judge.expected).

For one prompt that ends right after the judge's answer tag (an assistant prefill), p(s) of each valid
score string s is the probability of the tokens of s following that prefix, by the chain rule:

    p(s) = Π_t p(tok_t(s) | prefix, tok_<t(s))

One forward pass over the prefix gives the next-token distribution (all that a scale of single
tokens, such as SmolLM2's digits 0-9, needs: the judge-as-reward paper's 0-9 scale). When one score's
tokens are a prefix of another's (``"1"`` and ``"10"``: SmolLM2 writes every digit as its own token),
the first token of the terminator (the protocol's closing tag) is appended to every score, so the
events "1 then </" and "1 0 then </" are disjoint; the continuations then run as one small batch on a
copy of the prefix's KV cache (right-padded: a causal model's earlier positions never see the padding).
"""

from __future__ import annotations

import math
import threading
import warnings
import weakref
from typing import Any, Sequence

from judgerl.backends.chat import render_chat
from judgerl.backends.scores import ExpectedScoreUnavailable
from judgerl.types import Messages


#: One reader per backend object, dropped with the backend.
_READERS: "weakref.WeakKeyDictionary[Any, HFScoreReader]" = weakref.WeakKeyDictionary()


def _is_prefix(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) < len(b) and list(b[: len(a)]) == list(a)


def prefix_free(seqs: Sequence[Sequence[int]]) -> bool:
    """True when no sequence is a proper prefix of another and none is repeated."""
    seen = [tuple(s) for s in seqs]
    if len(set(seen)) != len(seen):
        return False
    return not any(_is_prefix(a, b) for a in seqs for b in seqs)


class HFScoreReader:
    """:class:`judgerl.backends.scores.ScoreReader` over a transformers causal LM.

    Args:
        model: The causal LM (its device is used; evaluated under ``torch.inference_mode``).
        tokenizer: Its tokenizer (chat template used through :func:`render_chat`).

    Calls are serialised by a lock (one reader per model; see :meth:`for_backend`).
    """

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self._lock = threading.Lock()
        self._cache: dict[tuple[tuple[str, ...], str], list[list[int]]] = {}

    @classmethod
    def for_backend(cls, backend: Any) -> "HFScoreReader":
        """The reader of an :class:`~judgerl.backends.hf.HFBackend` (one per backend, reused)."""
        reader = _READERS.get(backend)
        if reader is None or reader.model is not backend.model:
            reader = cls(backend.model, backend.tokenizer)
            _READERS[backend] = reader
        return reader

    def check(self, candidates: Sequence[str], terminator: str) -> None:
        """See :meth:`judgerl.backends.scores.ScoreReader.check` (any tokenisation that is not ambiguous)."""
        self.candidate_tokens(candidates, terminator)

    def candidate_tokens(self, candidates: Sequence[str], terminator: str) -> list[list[int]]:
        """Token ids to score per candidate: its own tokens, plus the terminator's first token when the
        candidates' tokens are not prefix-free (see the module docstring).

        Raises:
            ExpectedScoreUnavailable: an empty candidate, or sequences that stay ambiguous.
        """
        key = (tuple(candidates), terminator)
        if key in self._cache:
            return self._cache[key]
        tok = self.tokenizer
        seqs = [list(tok(c, add_special_tokens=False)["input_ids"]) for c in candidates]
        if any(not s for s in seqs):
            raise ExpectedScoreUnavailable(f"a score string tokenises to nothing: {list(candidates)}")
        if not prefix_free(seqs):
            term = list(tok(terminator, add_special_tokens=False)["input_ids"])[:1]
            if not term:
                raise ExpectedScoreUnavailable(f"terminator {terminator!r} tokenises to nothing")
            out = []
            for c, s in zip(candidates, seqs):
                joint = list(tok(c + terminator, add_special_tokens=False)["input_ids"])
                # the tokens of c, then the first token that follows c when written with the terminator
                out.append(joint[: len(s) + 1] if joint[: len(s)] == s else s + term)
            seqs = out
            if not prefix_free(seqs):
                raise ExpectedScoreUnavailable(
                    f"scores {list(candidates)} are ambiguous token sequences even followed by {terminator!r}")
        self._cache[key] = seqs
        return seqs

    def score_probs(self, prompts: Sequence[Messages], candidates: Sequence[str],
                    terminator: str) -> list[dict[str, float]]:
        """p(candidate) at the end of each prompt (see :class:`judgerl.backends.scores.ScoreReader`).

        Cost: one forward pass over each prompt's tokens, plus (multi-token scales only) one batch of
        the score continuations on the cached prefix.

        Raises:
            ExpectedScoreUnavailable: from :meth:`candidate_tokens`.
            ValueError: a message without role/content.
        """
        seqs = self.candidate_tokens(candidates, terminator)
        out = []
        with self._lock:
            for messages in prompts:
                text = render_chat(self.tokenizer, messages)
                ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
                logps = self.sequence_logprobs(ids, seqs)
                out.append({c: math.exp(lp) for c, lp in zip(candidates, logps)})
        return out

    def sequence_logprobs(self, prefix_ids: Sequence[int], seqs: Sequence[Sequence[int]]) -> list[float]:
        """log p(seq | prefix) for each token sequence (chain rule; natural log).

        Raises:
            ValueError: an empty prefix or an empty sequence.
        """
        import torch

        if not prefix_ids:
            raise ValueError("sequence_logprobs needs a non-empty prefix")
        if any(len(s) == 0 for s in seqs):
            raise ValueError("sequence_logprobs: empty token sequence")
        device = next(self.model.parameters()).device
        with torch.inference_mode(), warnings.catch_warnings():
            # transformers 5 renamed past_key_values= to cache=; the old name works in every supported
            # version (as in judgerl.backends.hf), so only its deprecation notice is silenced.
            warnings.filterwarnings("ignore", message=".*past_key_values.*", category=FutureWarning)
            out = self.model(input_ids=torch.tensor([list(prefix_ids)], device=device), use_cache=True)
            first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
            result = [float(first[s[0]]) for s in seqs]
            longer = [i for i, s in enumerate(seqs) if len(s) > 1]
            if longer:
                cache = out.past_key_values
                width = max(len(seqs[i]) - 1 for i in longer)
                pad = seqs[longer[0]][0]  # any id: right padding is never attended by the real positions
                batch = [list(seqs[i][:-1]) + [pad] * (width - len(seqs[i]) + 1) for i in longer]
                cache.batch_repeat_interleave(len(longer))
                cont = self.model(input_ids=torch.tensor(batch, device=device), past_key_values=cache,
                                  use_cache=True)
                lp = torch.log_softmax(cont.logits.float(), dim=-1)
                for b, i in enumerate(longer):
                    s = seqs[i]
                    for t in range(1, len(s)):
                        result[i] += float(lp[b, t - 1, s[t]])
        return result


__all__ = ["HFScoreReader", "prefix_free"]
