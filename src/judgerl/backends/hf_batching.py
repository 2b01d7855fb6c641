"""Pieces of the hf backend's batched generation: batch planning, per-row seeded sampling and
per-row completion reports (used by :class:`judgerl.backends.hf.HFBackend`)."""

from __future__ import annotations

from typing import Any, Sequence

from judgerl.backends.base import progress_listener


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

        chosen = sample_rows(scores, self.generators, self.temperature, self.top_p)
        out = torch.full_like(scores, float("-inf"))
        out.scatter_(1, chosen[:, None], 0.0)
        return out


def sample_rows(scores: Any, generators: Sequence[Any], temperature: float, top_p: float) -> Any:
    """One sampled token per row: temperature softmax, nucleus (top-p) cut, one draw of the row's
    own generator (see :class:`RowSeededSampler`; the continuous engine calls it directly).

    Args:
        scores: Float tensor (rows, vocab) of logits.
        generators: One seeded ``torch.Generator`` per row.
        temperature: > 0.
        top_p: Nucleus mass in (0, 1] (Holtzman et al. 2020, Sec. 3.1).

    Returns:
        Long tensor (rows,) of token ids.

    Raises:
        ValueError: the number of rows differs from the number of generators.
    """
    import torch

    if scores.shape[0] != len(generators):
        raise ValueError(f"batch has {scores.shape[0]} rows but {len(generators)} generators")
    probs = torch.softmax(scores.float() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, sorted_idx = torch.sort(probs, dim=-1, descending=True)
        # drop a token when the mass before it already reaches top_p (the top token is always kept)
        drop = (sorted_p.cumsum(dim=-1) - sorted_p) >= top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, sorted_idx, sorted_p)
    picks = [torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(generators)]
    return torch.cat(picks) if picks else torch.zeros(0, dtype=torch.long, device=scores.device)


def _stopping_criteria_base() -> type:
    from transformers import StoppingCriteria

    return StoppingCriteria


class RowWatcher(_stopping_criteria_base()):  # type: ignore[misc]
    """Reports each batch row as soon as it has finished, without stopping anything itself.

    Used as an extra stopping criterion of ``generate``: it always answers "not done" (the real
    criteria decide), but watches the newest token of every row; a row whose newest token is EOS
    or padding (which transformers emits for rows another criterion, e.g. a stop string, has
    finished) is final, and ``on_done(row, new_token_ids)`` is called once for it. It also reports
    progress to the caller's :func:`~judgerl.backends.base.progress_listener` (the batch started at
    its first step, then the tokens of the rows still running, once per step).

    Args:
        width: Padded prompt length of the batch (new tokens start at this column).
        done_ids: Token ids that end a row (EOS ids and the pad id).
        on_done: Callback ``f(row_index, generated_token_ids)``.
    """

    def __init__(self, width: int, done_ids: Sequence[int], on_done: Any) -> None:
        self.width = width
        self.done_ids = list(done_ids)
        self.on_done = on_done
        self.reported: set[int] = set()
        self.listener = progress_listener()

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        """``input_ids``: (batch, width + generated) token ids; returns (batch,) bools, all False."""
        import torch

        if self.listener is not None:
            if input_ids.shape[1] == self.width + 1:
                self.listener.on_started(input_ids.shape[0], 0)
            self.listener.on_tokens(input_ids.shape[0] - len(self.reported))
        last = input_ids[:, -1]
        finished = torch.isin(last, torch.tensor(self.done_ids, device=last.device))
        for i in torch.nonzero(finished).flatten().tolist():
            if i not in self.reported:
                self.reported.add(i)
                self.on_done(i, input_ids[i, self.width :].tolist())
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
