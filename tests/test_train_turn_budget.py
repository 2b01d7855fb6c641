"""The SFT targets' turns are checked against the per-round token budget of the rollouts and evaluations
(stop 33: the mixture's IF check programs, median 132 tokens, were taught under a 64-token budget)."""

from __future__ import annotations

import re

from judgerl.train.sft import SFTExample
from judgerl.train.stages import check_turn_budget


def _words(text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
    return {"input_ids": list(range(len(text.split())))}


def _ex(key: str, *pieces: tuple[str, str]) -> SFTExample:
    return SFTExample(messages=({"role": "user", "content": "q"},), pieces=tuple(pieces), key=key)


def test_turns_are_split_at_tool_output_and_counted() -> None:
    ex = _ex("k", ("model", "let me check "), ("code", "a b c d\n"), ("tool", "out put"), ("model", "A wins"))
    assert check_turn_budget([ex], _words, budget=7) == {"turns": 2, "over": 0, "p50": 7, "max": 7, "warning": None}


def test_a_budget_that_cuts_the_teachers_code_is_named_with_the_size_that_fits(caplog) -> None:
    long = _ex("k", ("model", "x " * 100), ("tool", "ok"), ("model", "B"))
    with caplog.at_level("WARNING", logger="judgerl.train.stages"):
        stats = check_turn_budget([long], _words, budget=64)
    assert re.search(r"tools.max_new_tokens=64.*at least 100", stats["warning"])
    assert stats["warning"] in caplog.text


def test_a_few_long_turns_are_tolerated() -> None:
    exs = [_ex(str(i), ("model", "a b"), ("tool", "o"), ("model", "A")) for i in range(40)]
    exs.append(_ex("long", ("model", "w " * 90)))
    assert check_turn_budget(exs, _words, budget=64)["over"] == 1
    assert check_turn_budget(exs, _words, budget=64)["warning"] is None
    assert check_turn_budget([], _words, budget=8)["turns"] == 0
