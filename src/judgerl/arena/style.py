"""Style control: win rates adjusted for response length and markdown (Chatbot Arena / Arena-Hard v2).

Chatbot Arena's style control (Li et al., 2024, LMSYS blog "Does Style Matter? Disentangling style and
substance in Chatbot Arena") and Arena-Hard-Auto's ``--style-control`` fit a Bradley-Terry model with
style covariates:

    P(system beats opponent) = sigma(theta_system - theta_opponent + beta · d)

where ``d`` holds, per style feature, the *normalised difference* of the two responses,
``(f_system - f_opponent) / (f_system + f_opponent)`` (0 when both are 0), scaled over the games to
unit root mean square (a constant-zero feature stays 0). Chatbot Arena also centres the features,
where the two sides of a battle are random so the mean is about 0; here the system is always the first
side, so centring would move "equally styled" away from d = 0, and only the scale is kept. Features (:func:`style_features`): token length (whitespace
tokens: no tokenizer dependency), markdown header count (``#``…``######`` lines), list-item count
(``-``/``*``/``+`` and ``1.`` lines) and bold count (``**…**`` / ``__…__``), as in Arena-Hard-Auto
``utils/add_markdown_info.py`` (``count_markdown_elements``). ``beta`` absorbs how much the judge
rewards style; the *style-controlled win rate* against the baseline is sigma(theta_system −
theta_baseline), the predicted win rate of equally styled responses. Fit by penalised maximum
likelihood with ``scipy.optimize.minimize`` (L-BFGS-B; ties as half a win and strong results weighted
as in :mod:`judgerl.arena.scores`; the same weak Gaussian prior on theta and beta).
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence

import numpy as np

from judgerl.arena.scores import Game, fit_bradley_terry_covariates, valid_games

STYLE_FEATURES = ("length", "headers", "lists", "bold")
_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)
_LIST = re.compile(r"^\s*(?:[-*+]|\d+\.)\s", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def style_features(text: str) -> tuple[float, float, float, float]:
    """(tokens, headers, list items, bold spans) of a response; tokens = whitespace-separated words.

    Code blocks are removed before counting markdown (a ``# comment`` in code is no header).
    """
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return (float(len(text.split())), float(len(_HEADER.findall(prose))), float(len(_LIST.findall(prose))),
            float(len(_BOLD.findall(prose))))


def style_design(games: Sequence[Game], responses: Mapping[tuple[str, str], str]) -> np.ndarray:
    """Normalised style differences scaled to unit RMS, shape (n_games, 4), system minus opponent.

    Args:
        games: Valid games.
        responses: ``(question, player) -> response text``.

    Raises:
        KeyError: a game whose response is missing from ``responses`` (the message names it).
    """
    rows = []
    for g in games:
        try:
            fs, fo = style_features(responses[(g.question, g.system)]), style_features(responses[(g.question, g.opponent)])
        except KeyError as e:
            raise KeyError(f"no response of {e.args[0][1]!r} for prompt {e.args[0][0]!r}") from None
        rows.append([(a - b) / (a + b) if a + b > 0 else 0.0 for a, b in zip(fs, fo)])
    d = np.array(rows, dtype=float).reshape(len(games), len(STYLE_FEATURES))
    if len(games):
        rms = np.sqrt((d ** 2).mean(axis=0))
        d = np.where(rms > 0, d / np.where(rms > 0, rms, 1.0), 0.0)
    return d


def fit_style_controlled(games: Sequence[Game], responses: Mapping[tuple[str, str], str], players: Sequence[str],
                         anchor: str, strong_weight: float = 3.0, ridge: float = 0.01) -> dict[str, Any]:
    """Bradley-Terry with style covariates (module docstring): the one BT fit,
    :func:`judgerl.arena.scores.fit_bradley_terry_covariates`, on :func:`style_design`.

    Returns:
        ``{"theta": {player: theta} (anchor 0), "beta": {feature: coefficient}}``.

    Raises:
        ValueError: ``anchor`` not in ``players``, ``ridge`` <= 0, a game with an unknown player.
        KeyError: a game whose response is missing (see :func:`style_design`).
    """
    theta, beta = fit_bradley_terry_covariates(games, players, anchor, style_design(games, responses),
                                               strong_weight, ridge)
    return {"theta": theta, "beta": {f: float(b) for f, b in zip(STYLE_FEATURES, beta)}}


def style_control(games: Sequence[Game], responses: Mapping[tuple[str, str], str], baseline: str,
                  systems: Sequence[str], strong_weight: float = 3.0, ridge: float = 0.01) -> dict[str, Any]:
    """Style-controlled win rates against the baseline, to show beside the raw ones.

    Args:
        games: Every game (prompts with an invalid game are dropped, as for the raw scores).
        responses: ``(question, player) -> response text``.

    Returns:
        ``{"features": [...], "beta": {feature: coefficient}, "systems": {name: {"win_rate", "theta"}}}``
        (``win_rate`` = sigma(theta); None for a system without valid games).
    """
    good, _ = valid_games(games)
    fit = fit_style_controlled(good, responses, [baseline, *systems], baseline, strong_weight, ridge)
    out = {}
    for s in systems:
        played = any(s in (g.system, g.opponent) for g in good)
        t = fit["theta"][s]
        out[s] = {"theta": t if played else None, "win_rate": 1.0 / (1.0 + math.exp(-t)) if played else None}
    return {"features": list(STYLE_FEATURES), "beta": fit["beta"], "systems": out,
            "method": "Bradley-Terry with normalised style differences (Chatbot Arena / Arena-Hard v2 style control)"}
