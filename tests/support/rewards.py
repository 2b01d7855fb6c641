"""Reward functions called the way a hand-written unit test calls them: prompts that show no response texts.

The J1 / TIR / regression rewards require the ``responses`` column (the quoted-answer check reads it);
these unit tests judge hand-written completions with no responses behind them, so they pass ``[]`` per row,
the explicit opt-out. Tests of the check itself call the rewards directly.
"""

from __future__ import annotations

import functools
from typing import Any, Callable


def no_responses(fn: Callable[..., list]) -> Callable[..., list]:
    """``fn`` with ``responses=[[]] * len(completions)`` added when the call gives no such column."""
    @functools.wraps(fn)
    def call(completions: list[Any], **cols: Any) -> list:
        cols.setdefault("responses", [[] for _ in completions])
        return fn(completions, **cols)
    return call


def shown_none(factory: Callable[..., Callable[..., list]]) -> Callable[..., Callable[..., list]]:
    """A ``get_*_reward`` factory whose rewards get :func:`no_responses`."""
    def make(*args: Any, **kwargs: Any) -> Callable[..., list]:
        return no_responses(factory(*args, **kwargs))
    return make
