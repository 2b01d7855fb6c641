"""``judgerl arena``: Arena-Hard-style pairwise evaluation of systems against a baseline.

Each system's responses are judged against the baseline's on the same prompts, in both orders,
with five-level labels (the ``arena`` protocol: A≫B, A>B, A=B, B>A, B≫A); the games give win rates
with bootstrap CIs (strong wins count 3, Arena-Hard-Auto's convention) and Bradley-Terry scores. The
judging is :func:`judgerl.eval.run_eval` (resumable, seeded). See docs/arena.md.

Example::

    from judgerl.arena import load_system, run_arena
    base = load_system("base.jsonl", require_prompt=True)
    summary = run_arena(judge, base, [load_system("sft.jsonl"), load_system("rl.jsonl")], "runs/arena")
    summary["leaderboard"][0]["system"]
"""

from judgerl.arena.inputs import ARENA_FIELDS, Matchup, SystemOutputs, load_system, matchup
from judgerl.arena.run import leaderboard_rows, record_label, run_arena, series_games
from judgerl.arena.scores import OUTCOMES, Game, elo, fit_bradley_terry, outcome_of, score_arena, win_rate

__all__ = [
    "ARENA_FIELDS", "Game", "Matchup", "OUTCOMES", "SystemOutputs", "elo", "fit_bradley_terry", "leaderboard_rows",
    "load_system", "matchup", "outcome_of", "record_label", "run_arena", "score_arena", "series_games", "win_rate",
]
