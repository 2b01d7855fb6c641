"""Arena scoring: five-level games -> win rates with Wilson CIs and Bradley-Terry scores.

**Games.** One judgment of (system, opponent) on one prompt, in one order, is a *game* with a
label seen from the system's side: ``S>>O`` (strong win), ``S>O`` (win), ``S=O`` (tie), ``O>S``
(loss), ``O>>S`` (strong loss). Arena-Hard-Auto's convention (github.com/lmarena/arena-hard-auto,
``show_result.py: load_judgments(weight=3)``) scores a game 1 (win), 0.5 (tie) or 0 (loss) and
counts a strong win or loss as **3** games (``strong_weight``). Each prompt is judged in both
orders; with N samples per order each sample is a game of weight 1/N. Following Arena-Hard-Auto,
a prompt is left out of the scores when any of its games is invalid (``n_dropped``), so every
prompt that counts was judged in both positions.

**Win rate** of a system against the baseline: sum(weight * score) / sum(weight) over its games
against the baseline. **95% CI of the win rate**: the Wilson score interval over prompts
(:func:`judgerl.eval.intervals.mean_ci`: a prompt's weighted score is in [0, 1], n is Kish's
effective number of prompts under the game weights), which never has zero width: Arena-Hard-Auto's
percentile bootstrap gives [1.0, 1.0] to a system that won every game of one prompt.
**95% CI of the BT score**: percentile bootstrap over prompts (Efron & Tibshirani 1993; all games
of a resampled prompt go together, and every system is resampled on the same prompts in one
round), given with a warning (``bt_elo_ci_warning``) below :data:`judgerl.eval.intervals.MIN_BOOTSTRAP_N`
prompts and left out (None) when every resample gives the same score. Arena-Hard-Auto bootstraps
100 rounds and reports 5%-95% quantiles (90%); judgerl defaults to 1000 rounds and 95%.

**Bradley-Terry** (Bradley & Terry, 1952, "Rank Analysis of Incomplete Block Designs: I. The
Method of Paired Comparisons", Biometrika 39(3/4)): P(i beats j) = sigma(theta_i - theta_j). The
thetas are fit by maximum likelihood on all games (ties as half a win, the weights above, as in
Arena-Hard-Auto's ``bt_loss``) with ``scipy.optimize.minimize`` (L-BFGS-B) and a weak Gaussian
prior (``ridge``, default 0.01) that keeps a perfect record finite; the baseline is anchored at
theta = 0. Reported on the Elo-like scale of Chatbot Arena / Arena-Hard-Auto v0.1: ``1000 + 400 *
theta / ln 10`` (baseline = 1000). When every game is against the baseline the fit reduces to
theta_i = logit(win rate_i) (up to the prior): BT then adds a scale, not information. Games between
systems (``round_robin``) make it a joint ranking.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from judgerl.eval.intervals import bootstrap_summary, mean_ci

#: Outcomes from the system's side, best first.
OUTCOMES = ("strong_win", "win", "tie", "loss", "strong_loss")
_SCORE = {"strong_win": 1.0, "win": 1.0, "tie": 0.5, "loss": 0.0, "strong_loss": 0.0}
#: Arena label -> outcome for the response shown as A.
_A_SIDE = {"A>>B": "strong_win", "A>B": "win", "A=B": "tie", "B>A": "loss", "B>>A": "strong_loss"}
_MIRROR = {"strong_win": "strong_loss", "win": "loss", "tie": "tie", "loss": "win", "strong_loss": "strong_win"}
ELO_BASE = 1000.0
ELO_SCALE = 400.0 / math.log(10.0)


@dataclass(frozen=True)
class Game:
    """One judged game.

    Attributes:
        question: Prompt id (the bootstrap resamples these).
        system: The player whose side ``outcome`` is told from.
        opponent: The other player (the baseline, or another system in a round robin).
        outcome: One of :data:`OUTCOMES`, or None for an invalid judgment.
        samples: Samples judged per order (each sample's weight is divided by it).
    """

    question: str
    system: str
    opponent: str
    outcome: str | None
    samples: int = 1


def outcome_of(label: str | None, system_position: int) -> str | None:
    """The system's outcome from an arena label (``"A>>B"``, ...) and the system's position (0 = A).

    Raises:
        ValueError: an unknown label or a position other than 0/1.
    """
    if label is None:
        return None
    if label not in _A_SIDE:
        raise ValueError(f"unknown arena label {label!r}")
    if system_position not in (0, 1):
        raise ValueError(f"system_position must be 0 or 1, got {system_position!r}")
    out = _A_SIDE[label]
    return out if system_position == 0 else _MIRROR[out]


def _weights(games: Sequence[Game], strong_weight: float) -> tuple[np.ndarray, np.ndarray]:
    w = np.array([(strong_weight if g.outcome in ("strong_win", "strong_loss") else 1.0) / g.samples for g in games])
    y = np.array([_SCORE[g.outcome] for g in games])  # type: ignore[index]
    return w, y


def valid_games(games: Sequence[Game]) -> tuple[list[Game], dict[tuple[str, str], int]]:
    """Games of the prompts whose games (per system/opponent) are all valid, and per matchup the
    number of prompts dropped for an invalid game."""
    bad: set[tuple[str, str, str]] = {(g.system, g.opponent, g.question) for g in games if g.outcome is None}
    dropped: dict[tuple[str, str], int] = defaultdict(int)
    for s, o, _ in bad:
        dropped[(s, o)] += 1
    return [g for g in games if (g.system, g.opponent, g.question) not in bad], dict(dropped)


def win_rate_ci(games: Sequence[Game], strong_weight: float = 3.0, confidence: float = 0.95
                ) -> list[float] | None:
    """Wilson interval of :func:`win_rate` over prompts (module docstring); None when empty.

    Each prompt (``question``) is one unit: its value is the weighted score of its games, its
    weight their total weight.
    """
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for g, w, y in zip(games, *_weights(games, strong_weight)):
        totals[g.question][0] += w * y
        totals[g.question][1] += w
    if not totals:
        return None
    weights = np.array([t[1] for t in totals.values()])
    values = np.clip(np.array([t[0] for t in totals.values()]) / weights, 0.0, 1.0)
    ci = mean_ci(values, confidence, weights=weights)
    return None if ci is None else list(ci)


def win_rate(games: Sequence[Game], strong_weight: float = 3.0) -> float | None:
    """Weighted score of ``games`` (all valid) from their systems' side; None when empty."""
    if not games:
        return None
    w, y = _weights(games, strong_weight)
    return float((w * y).sum() / w.sum())


def fit_bradley_terry(games: Sequence[Game], players: Sequence[str], anchor: str, strong_weight: float = 3.0,
                      ridge: float = 0.01, init: Mapping[str, float] | None = None) -> dict[str, float]:
    """Bradley-Terry strengths (theta, natural-log odds scale) by penalised maximum likelihood:
    :func:`fit_bradley_terry_covariates` without covariates.

    Minimises ``-sum_g w_g [y_g log s(t_i - t_j) + (1 - y_g) log s(t_j - t_i)] + ridge/2 sum t^2``
    over the non-anchor players (``s`` = logistic sigmoid, ``t_anchor = 0``).

    Args:
        games: Valid games (``outcome`` not None) between ``players``.
        players: Every player; those without games get 0.
        anchor: The player fixed at 0 (the baseline).
        strong_weight: Weight of a strong win / loss (Arena-Hard-Auto: 3).
        ridge: Strength of the Gaussian prior (> 0).
        init: Starting strengths (a warm start, e.g. the full-data fit for bootstrap rounds).

    Returns:
        ``{player: theta}``.

    Raises:
        ValueError: ``anchor`` not in ``players``, an unknown player in a game, ``ridge`` <= 0.
    """
    return fit_bradley_terry_covariates(games, players, anchor, None, strong_weight, ridge, init)[0]


def fit_bradley_terry_covariates(games: Sequence[Game], players: Sequence[str], anchor: str,
                                 covariates: np.ndarray | None, strong_weight: float = 3.0, ridge: float = 0.01,
                                 init: Mapping[str, float] | None = None) -> tuple[dict[str, float], np.ndarray]:
    """THE Bradley-Terry fit, with optional per-game covariates (the style control of
    :mod:`judgerl.arena.style`): ``P(system beats opponent) = s(t_system - t_opponent + beta . d_g)``.

    Minimises ``-sum_g w_g [y_g log s(z_g) + (1 - y_g) log s(-z_g)] + ridge/2 (sum t^2 + sum beta^2)``
    (``z_g`` the logit above, ``t_anchor = 0``; ties as half a win, strong results weighted) with
    ``scipy.optimize.minimize`` (L-BFGS-B, analytic gradient).

    Args:
        games, players, anchor, strong_weight, ridge, init: See :func:`fit_bradley_terry`.
        covariates: Shape (len(games), k), row g the covariates ``d_g`` of game g; None: k = 0.

    Returns:
        ``({player: theta}, beta)``, ``beta`` of shape (k,).

    Raises:
        ValueError: as :func:`fit_bradley_terry`, or ``covariates`` not of shape (len(games), k).
    """
    from scipy.optimize import minimize

    if anchor not in players:
        raise ValueError(f"anchor {anchor!r} is not a player")
    if ridge <= 0:
        raise ValueError(f"ridge must be > 0, got {ridge}")
    d = np.zeros((len(games), 0)) if covariates is None else np.asarray(covariates, dtype=float)
    if d.ndim != 2 or d.shape[0] != len(games):
        raise ValueError(f"covariates must have shape ({len(games)}, k), got {d.shape}")
    free = [p for p in players if p != anchor]
    idx = {p: i for i, p in enumerate(free)}
    if not games or not (free or d.shape[1]):
        return {p: 0.0 for p in players}, np.zeros(d.shape[1])
    # design: +1 for the system, -1 for the opponent (anchor columns dropped), then the covariates
    x = np.zeros((len(games), len(free)))
    for r, g in enumerate(games):
        for p, sign in ((g.system, 1.0), (g.opponent, -1.0)):
            if p not in players:
                raise ValueError(f"game player {p!r} is not in players")
            if p in idx:
                x[r, idx[p]] += sign
    x = np.hstack([x, d])
    w, y = _weights(games, strong_weight)

    def nll(params: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ params
        # log s(z) = -logaddexp(0, -z); log s(-z) = -logaddexp(0, z)
        loss = float((w * (y * np.logaddexp(0.0, -z) + (1 - y) * np.logaddexp(0.0, z))).sum())
        grad = x.T @ (w * (1.0 / (1.0 + np.exp(-z)) - y))
        return loss + 0.5 * ridge * float(params @ params), grad + ridge * params

    x0 = np.array([float((init or {}).get(p, 0.0)) for p in free] + [0.0] * d.shape[1])
    res = minimize(nll, x0, jac=True, method="L-BFGS-B", options={"maxiter": 1000, "gtol": 1e-10})
    theta = {p: float(res.x[idx[p]]) for p in free} | {anchor: 0.0}
    return {p: theta[p] for p in players}, np.asarray(res.x[len(free):], dtype=float)


def elo(theta: float) -> float:
    """Elo-like display of a BT strength: ``1000 + 400 theta / ln 10``."""
    return ELO_BASE + ELO_SCALE * theta


def _outcome_counts(games: Sequence[Game]) -> dict[str, float]:
    counts = {o: 0.0 for o in OUTCOMES}
    for g in games:
        counts[g.outcome] += 1.0 / g.samples  # type: ignore[index]
    return counts


def score_arena(games: Sequence[Game], baseline: str, systems: Sequence[str], *, strong_weight: float = 3.0,
                n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95, ridge: float = 0.01,
                ) -> dict[str, Any]:
    """Win rates against the baseline with Wilson CIs, and BT scores with bootstrap CIs over prompts.

    Args:
        games: Every game (invalid ones included: their prompts are dropped per matchup).
        baseline: The baseline's name.
        systems: The other players, in input order.
        strong_weight, ridge: See :func:`fit_bradley_terry`.
        n_bootstrap: Bootstrap rounds of the BT CIs (each resamples the prompts with replacement).
        seed: Seed of the bootstrap's numpy generator.
        confidence: CI mass.

    Returns:
        ``{"baseline", "strong_weight", "n_bootstrap", "confidence", "systems": {name: {"win_rate",
        "win_rate_ci", "bt_theta", "bt_elo", "bt_elo_ci", "bt_elo_ci_warning", "bt_win_rate",
        "n_prompts", "n_dropped", "n_games", "outcomes"}}}``; a system without a valid game has
        ``None`` rates and scores.

    Raises:
        ValueError: ``n_bootstrap`` < 1, ``confidence`` outside (0, 1), an unknown outcome.
    """
    if n_bootstrap < 1:
        raise ValueError(f"n_bootstrap must be >= 1, got {n_bootstrap}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    for g in games:
        if g.outcome is not None and g.outcome not in _SCORE:
            raise ValueError(f"unknown game outcome {g.outcome!r}")
    players = [baseline, *systems]
    good, dropped = valid_games(games)
    by_q: dict[str, list[Game]] = defaultdict(list)
    for g in good:
        by_q[g.question].append(g)
    questions = sorted(by_q)

    def rates(gs: Sequence[Game]) -> dict[str, float | None]:
        return {s: win_rate([g for g in gs if g.system == s and g.opponent == baseline], strong_weight) for s in systems}

    point_wr = rates(good)
    point_bt = fit_bradley_terry(good, players, baseline, strong_weight, ridge)
    rng = np.random.default_rng(seed)
    boot_bt: dict[str, list[float]] = {s: [] for s in systems}
    for _ in range(n_bootstrap if questions else 0):
        pick = rng.integers(0, len(questions), size=len(questions))
        gs = [g for i in pick for g in by_q[questions[i]]]
        for s, v in fit_bradley_terry(gs, players, baseline, strong_weight, ridge, init=point_bt).items():
            if s != baseline:
                boot_bt[s].append(elo(v))

    out: dict[str, Any] = {}
    for s in systems:
        mine = [g for g in good if g.system == s and g.opponent == baseline]
        played = any(s in (g.system, g.opponent) for g in good)  # else BT knows nothing about s
        n_played = len({g.question for g in good if s in (g.system, g.opponent)})
        bt_ci, bt_warning = bootstrap_summary(boot_bt[s], n_played, confidence) if played else (None, None)
        out[s] = {
            "win_rate": point_wr[s], "win_rate_ci": win_rate_ci(mine, strong_weight, confidence),
            "bt_theta": point_bt[s] if played else None, "bt_elo": elo(point_bt[s]) if played else None,
            "bt_elo_ci": bt_ci, "bt_elo_ci_warning": bt_warning,
            "bt_win_rate": 1.0 / (1.0 + math.exp(-point_bt[s])) if played else None,
            "n_prompts": len({g.question for g in mine}), "n_dropped": dropped.get((s, baseline), 0),
            "n_games": round(sum(1.0 / g.samples for g in mine), 6), "outcomes": _outcome_counts(mine),
        }
    return {"baseline": baseline, "strong_weight": strong_weight, "n_bootstrap": n_bootstrap,
            "confidence": confidence, "ridge": ridge, "bt_elo_baseline": ELO_BASE, "systems": out,
            "dropped_by_matchup": {f"{s} vs {o}": n for (s, o), n in sorted(dropped.items())}}
