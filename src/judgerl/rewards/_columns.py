"""What every reward function shares: reading TRL's completions and dataset columns, and choosing
each row's protocol.

TRL calls a reward function as ``fn(completions, **columns)`` with one value per completion in each
column (``trl/rewards/accuracy_rewards.py``). This module is the one home of reading those: the
completion text, a column (required or optional, with a clear error), the protocol of each row,
the responses under judgment and the decision read from a completion (:func:`read_decisions`, the
:class:`~judgerl.judge.Judge`'s reading), partner rows (both orders of a pair), and logging through
TRL's ``log_metric`` hook.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping, Sequence

from judgerl.protocols.base import JudgeProtocol

RewardFn = Callable[..., list[float | None]]


def completion_text(completion: Any) -> str:
    """The judge's (or policy's) text of one TRL completion.

    Args:
        completion: A string, one chat message, or a list of chat messages; the contents of the
            assistant messages are concatenated (a tool-integrated rollout may hold several).

    Raises:
        TypeError: anything else, or a message without ``content``.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if isinstance(completion, Sequence):
        parts = []
        for m in completion:
            if not isinstance(m, Mapping) or "content" not in m:
                raise TypeError(f"a completion message must be a mapping with 'content', got {m!r}")
            if m.get("role", "assistant") == "assistant":
                parts.append(str(m["content"] or ""))
        return "".join(parts)
    raise TypeError(f"a completion must be a str or a list of chat messages, got {type(completion).__name__}")


def prompt_text(prompt: Any) -> str:
    """The instruction a judge should see, from a TRL prompt (a string or a list of chat messages).

    A conversation with one user turn gives that turn's content; longer conversations, and any with a
    system prompt (it is part of the instruction the policy followed), are rendered as ``"role: content"``
    blocks.

    Raises:
        TypeError: neither a string nor a list of ``{"role", "content"}`` mappings.
    """
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence) and all(isinstance(m, Mapping) and "content" in m for m in prompt):
        if len(prompt) == 1 and prompt[0].get("role", "user") == "user":
            return str(prompt[0]["content"])
        return "\n\n".join(f"{m.get('role', 'user')}: {m['content']}" for m in prompt)
    raise TypeError(f"prompt must be a string or a list of chat messages, got {type(prompt).__name__}")


def column(kwargs: Mapping[str, Any], name: str, n: int, reward: str, required: bool = True) -> list[Any]:
    """The dataset column ``name`` from a reward call's kwargs, checked to have ``n`` entries.

    Args:
        kwargs: The reward call's keyword arguments.
        name: Column name.
        n: Number of completions.
        reward: The reward's name (for messages).
        required: Missing column -> KeyError (True) or ``[None] * n`` (False).

    Raises:
        KeyError: a required column is missing (names the reward and the column to add).
        ValueError: not a list, or the wrong length.
    """
    value = kwargs.get(name)
    if value is None:
        if required:
            raise KeyError(f"{reward} needs the dataset column {name!r} (one value per completion)")
        return [None] * n
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{reward}: column {name!r} must be a list with one value per completion, got {value!r}")
    if len(value) != n:
        raise ValueError(f"{reward}: column {name!r} has {len(value)} values for {n} completions")
    return list(value)


def protocol_set(protocols: JudgeProtocol | str | Sequence[JudgeProtocol | str]) -> dict[str, JudgeProtocol]:
    """Protocol objects by name, from one protocol (object or name) or several.

    Names are built with :func:`judgerl.protocols.get_protocol` and their default options; pass
    objects to choose options (e.g. ``PoS(max_score=9)``).

    Raises:
        ValueError: two protocols with the same name, or an unknown name.
    """
    from judgerl.protocols import get_protocol

    items = [protocols] if isinstance(protocols, (str, JudgeProtocol)) else list(protocols)
    out: dict[str, JudgeProtocol] = {}
    for p in items:
        obj = get_protocol(p) if isinstance(p, str) else p
        if obj.name in out and out[obj.name] != obj:
            raise ValueError(f"two different {obj.name!r} protocols given: {out[obj.name]!r} and {obj!r}")
        out[obj.name] = obj
    return out


def row_protocols(kwargs: Mapping[str, Any], n: int, protocols: Mapping[str, JudgeProtocol], reward: str,
                  kind: str | None = None) -> list[JudgeProtocol | None]:
    """The protocol of each row: the one the ``protocol`` column names (None when that name is not
    among ``protocols``: the row is not this reward's), else the single protocol given; rows whose
    protocol is not of ``kind`` get None.

    Raises:
        KeyError: no ``protocol`` column and several protocols given.
    """
    names = kwargs.get("protocol")
    if names is None:
        if len(protocols) != 1:
            raise KeyError(f"{reward}: several protocols given ({sorted(protocols)}) but the batch has no "
                           "'protocol' column saying which row uses which")
        rows: list[JudgeProtocol | None] = [next(iter(protocols.values()))] * n
    else:
        rows = [protocols.get(str(p).lower()) if p is not None else None for p in column(kwargs, "protocol", n, reward)]
    return [p if p is not None and (kind is None or p.kind == kind) else None for p in rows]


#: The dataset column with the responses a row's prompt shows, in prompt order (written by
#: :func:`judgerl.train.datasets.build_rows`): the texts of the quoted-answer check.
RESPONSES_COLUMN = "responses"


def row_responses(kwargs: Mapping[str, Any], n: int, reward: str) -> list[tuple[str, ...]]:
    """The responses under judgment of each row (the :data:`RESPONSES_COLUMN` column), as tuples.

    The column is required: without it a completion that copies a response's
    ``</think><verdict>B</verdict>`` would be read as the judge's own answer and paid. The GRPO datasets
    judgerl builds (:func:`judgerl.train.datasets.build_rows`) always carry it. A row whose value is an
    empty list opts out of the quoted-answer check explicitly (a prompt that shows no response).

    Raises:
        KeyError: the batch has no ``responses`` column (names the reward and how to add it).
        ValueError: the column has the wrong length, or a row's value is not a list of strings (names the row).
    """
    if kwargs.get(RESPONSES_COLUMN) is None:
        raise KeyError(f"{reward} needs the dataset column {RESPONSES_COLUMN!r}: per row, the list of response "
                       "texts its prompt shows, in prompt order (judgerl.train.datasets.build_rows writes it; "
                       "[] for a row that shows none). Without it a verdict copied from a response is paid.")
    out = []
    for i, value in enumerate(column(kwargs, RESPONSES_COLUMN, n, reward)):
        if value is None:
            raise ValueError(f"{reward}: column {RESPONSES_COLUMN!r} row {i} is None; give the row's response "
                             "texts (or [] when its prompt shows none)")
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) \
                or not all(isinstance(r, str) for r in value):
            raise ValueError(f"{reward}: column {RESPONSES_COLUMN!r} row {i} must be a list of response texts, "
                             f"got {value!r}")
        out.append(tuple(value))
    return out


def check_response_count(protocol: JudgeProtocol, responses: Sequence[str], row: int, reward: str,
                         n_responses: int | None = None) -> None:
    """Raise when a row's non-empty ``responses`` cannot be the texts its prompt shows: a pairwise row needs
    2, a pointwise row 1, a listwise row ``n_responses`` (when given). A short list would leave a response
    unchecked, so a verdict copied from it would be paid.

    Raises:
        ValueError: the count does not fit the row's protocol (names the reward and the row).
    """
    want = {"pairwise": 2, "pointwise": 1}.get(protocol.kind, n_responses)
    if responses and want is not None and len(responses) != want:
        raise ValueError(f"{reward}: column {RESPONSES_COLUMN!r} row {row} has {len(responses)} response texts; "
                         f"a {protocol.name} prompt shows {want} (a response left out goes unchecked)")


def read_decisions(completions: Sequence[Any], protocols: Sequence[JudgeProtocol | None],
                   responses: Sequence[Sequence[str]], n_responses: Sequence[int | None] | None = None,
                   reward: str = "reward") -> list[Any]:
    """The :class:`~judgerl.types.Decision` of each completion as the Judge reads it
    (:func:`judgerl.judge.decision.read_decision`: the row's protocol, then the quoted-answer check against
    the row's ``responses``), or None for a row without a protocol (not this reward's).

    Raises:
        ValueError: a row's responses do not fit its protocol (:func:`check_response_count`).
    """
    from judgerl.judge.decision import read_decision

    counts = n_responses if n_responses is not None else [None] * len(completions)
    for i, (p, r, k) in enumerate(zip(protocols, responses, counts)):
        if p is not None:
            check_response_count(p, r, i, reward, k)
    return [None if p is None else read_decision(p, completion_text(c), r, k)
            for c, p, r, k in zip(completions, protocols, responses, counts)]


def partner_index(keys: Sequence[Hashable], partner_key: Callable[[Hashable], Hashable]) -> list[int | None]:
    """For each row, the index of its partner row in the same batch.

    The k-th occurrence of key ``x`` is partnered with the k-th occurrence of ``partner_key(x)``
    (with ``num_generations`` samples per prompt, sample k of order AB is paired with sample k of
    order BA). Rows whose key is None, or whose partner is absent, get None.
    """
    seen: dict[Hashable, int] = {}
    occurrence: list[int] = []
    positions: dict[tuple[Hashable, int], int] = {}
    for i, k in enumerate(keys):
        j = seen.get(k, 0)
        seen[k] = j + 1
        occurrence.append(j)
        positions[(k, j)] = i
    out: list[int | None] = []
    for i, k in enumerate(keys):
        if k is None:
            out.append(None)
            continue
        out.append(positions.get((partner_key(k), occurrence[i])))
    return out


def log(kwargs: Mapping[str, Any], name: str, values: Sequence[float]) -> None:
    """Log the mean of ``values`` as metric ``name`` through TRL's ``log_metric`` hook, if given."""
    fn = kwargs.get("log_metric")
    if fn is not None and len(values) > 0:
        fn(name, float(sum(values)) / len(values))
