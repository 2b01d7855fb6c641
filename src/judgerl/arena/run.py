"""Run an arena: each system against the baseline (optionally every pair of systems) with the eval
runner, then win rates, Bradley-Terry scores, a leaderboard and a plot.

Every game series is an ordinary :func:`judgerl.eval.run_eval` run in ``games/<system>__vs__<opponent>/``
(pairs: id = prompt id, chosen = the system's response, rejected = the opponent's; both orders,
seeded first order, ``samples`` per order), so judging, resuming, seeds and failure handling are
eval's: re-running the same command resumes every series where it stopped, and a different judge
or changed data is refused. The arena then reads the series' judgment records, turns them into
games (:mod:`judgerl.arena.scores`) and writes ``summary.json``, ``leaderboard.md`` and
``leaderboard.png`` in ``out_dir``.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from judgerl.arena.inputs import SystemOutputs, matchup
from judgerl.arena.scores import OUTCOMES, Game, outcome_of, score_arena
from judgerl.arena.style import style_control
from judgerl.eval.plan import plan_units
from judgerl.eval.runner import run_eval
from judgerl.eval.store import JUDGMENTS_FILE, atomic_write_text, index_existing, read_judgments
from judgerl.judge.aggregate import QUOTED_ANSWER
from judgerl.judge.defaults import DEFAULT_BATCH_SIZE
from judgerl.judge.decision import ARENA_WORST
from judgerl.protocols.arena import VERDICT_LABEL

SUMMARY_FILE = "summary.json"
REPORT_FILE = "leaderboard.md"
PLOT_FILE = "leaderboard.png"
GAMES_DIR = "games"


def series_dir(out: Path, system: str, opponent: str) -> Path:
    """The eval folder of one game series."""
    return out / GAMES_DIR / f"{system}__vs__{opponent}"


def record_label(record: Mapping[str, Any]) -> str | None:
    """The five-level label of a judgment record (``A>>B`` …), from ``decision.label`` or, for
    protocols without one (PaV, PaS), the plain label of its verdict; None when invalid.

    A ``quoted_answer`` void copied from exactly one response (``decision.quoted``) is that response's
    heaviest loss (:data:`judgerl.judge.decision.ARENA_WORST`), not an invalid game: a dropped prompt
    would pay a losing system for text it wrote (``</think><verdict>[[A>B]]</verdict>`` in its response
    voids every honest tie and narrow loss it gets). A void matching both responses, or only tool
    output, stays invalid."""
    d = record["decision"]
    if not d.get("valid"):
        quoted = d.get("quoted")
        if d.get("invalid_reason") == QUOTED_ANSWER and isinstance(quoted, list) and len(quoted) == 1 \
                and quoted[0] in ARENA_WORST:
            return ARENA_WORST[quoted[0]]
        return None
    label = d.get("label")
    if label is None:
        label = VERDICT_LABEL.get(str(d.get("verdict")))
    return label


def series_games(judge: Any, pairs: Sequence[Any], samples: int, directory: Path, system: str,
                 opponent: str) -> list[Game]:
    """The games of one finished series, read back from its ``judgments.jsonl`` (this plan's units
    only, with eval's resume rules: latest final record per unit).

    Raises:
        ValueError: a unit of the plan has no record (the series did not finish).
    """
    units = plan_units(pairs, "pairwise", samples, judge.seed)
    path = directory / JUDGMENTS_FILE
    done = index_existing(read_judgments(path), {u.key: u for u in units},
                          lambda u: judge.build(u.pair.prompt, u.responses(), u.pair.rubric), path)
    games = []
    for u in units:
        rec = done.get(u.key)
        if rec is None:
            raise ValueError(f"{path}: no judgment for {u.key}; run the same command again to finish the series")
        final = rec.get("final", True)
        games.append(Game(u.pair.id, system, opponent,
                          outcome_of(record_label(rec), int(rec["chosen_index"])) if final else None, samples))
    return games


def _system_stats(s: SystemOutputs, prompts: Mapping[str, str | None]) -> dict[str, Any]:
    from judgerl.audit import KINDS, audit_texts

    ids = [i for i in prompts if i in s.responses]
    texts = [s.responses[i] for i in ids]
    flags = audit_texts([prompts[i] for i in ids], texts)
    counts = {k: sum(k in f for f in flags) for k in KINDS}
    counts["any"] = sum(bool(f) for f in flags)
    return {"path": s.path, "n_responses": len(ids),
            "mean_words": sum(len(t.split()) for t in texts) / len(texts) if texts else None,
            "audit_counts": counts}


def run_arena(
    judge: Any,
    baseline: SystemOutputs,
    systems: Sequence[SystemOutputs],
    out_dir: str | os.PathLike[str],
    *,
    round_robin: bool = False,
    samples: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    resume: bool = True,
    progress: bool = True,
    n_bootstrap: int = 1000,
    strong_weight: float = 3.0,
    info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Judge every system against the baseline (both orders) and write the leaderboard.

    Args:
        judge: A pairwise :class:`~judgerl.judge.Judge`; the ``arena`` protocol gives five-level
            labels, other pairwise protocols plain wins/ties (no strong wins).
        baseline: The baseline's outputs (:func:`judgerl.arena.load_system`, ``require_prompt``).
        systems: The systems to rank (names distinct from each other and from the baseline).
        out_dir: Output directory (``summary.json``, ``leaderboard.md``, ``leaderboard.png``,
            ``games/``).
        round_robin: Also judge every pair of systems (Bradley-Terry then ranks them jointly).
        samples, batch_size, resume, progress: As :func:`judgerl.eval.run_eval`.
        n_bootstrap: Bootstrap rounds of the Bradley-Terry CIs (win-rate CIs are Wilson intervals).
        strong_weight: Games a strong win / loss counts as (Arena-Hard-Auto: 3).
        info: Extra context stored in the summary.

    Returns:
        The summary: :func:`judgerl.arena.scores.score_arena` plus ``leaderboard`` (rows, best
        first), ``config``, ``inputs`` (per-system path, response count, mean length in words,
        audit flag counts), ``matchups`` (per series: pairs judged, prompt ids missing) and ``timing``.

    Raises:
        ValueError: a non-pairwise judge, no systems, duplicate names, ``strong_weight`` < 1.
        DataFormatError: a system's prompt differs from the baseline's.
        RunConfigMismatch: a series folder holds a different judge or other data.
    """
    from judgerl.arena.report import write_arena_report

    if judge.kind != "pairwise":
        raise ValueError(f"the arena needs a pairwise judge (e.g. --protocol arena), got {judge.kind}")
    if not systems:
        raise ValueError("the arena needs at least one system besides the baseline")
    names = [baseline.name, *(s.name for s in systems)]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"duplicate system name(s) {dup}: name them with NAME=PATH")
    if strong_weight < 1:
        raise ValueError(f"strong_weight must be >= 1, got {strong_weight}")
    series = [(s, None) for s in systems]
    if round_robin:
        series += list(itertools.combinations(systems, 2))
    out = Path(out_dir)
    t0 = time.perf_counter()
    games: list[Game] = []
    matchups: dict[str, Any] = {}
    for system, opponent in series:
        m = matchup(baseline, system, opponent)
        d = series_dir(out, m.system, m.opponent)
        run_eval(judge, m.pairs, d, samples=samples, resume=resume, progress=progress, batch_size=batch_size,
                 write_report=False,
                 info={**dict(info or {}), "arena_system": m.system, "arena_opponent": m.opponent})
        games += series_games(judge, m.pairs, samples, d, m.system, m.opponent)
        matchups[f"{m.system} vs {m.opponent}"] = {"pairs": len(m.pairs), "missing_ids": m.missing[:50],
                                                   "n_missing": len(m.missing), "n_extra": len(m.extra),
                                                   "folder": str(d.relative_to(out))}
    summary = score_arena(games, baseline.name, [s.name for s in systems], strong_weight=strong_weight,
                          n_bootstrap=n_bootstrap, seed=judge.seed)
    responses = {(rid, s.name): text for s in (baseline, *systems) for rid, text in s.responses.items()}
    summary["style_control"] = style_control(games, responses, baseline.name, [s.name for s in systems],
                                             strong_weight=strong_weight)
    summary["inputs"] = {s.name: _system_stats(s, baseline.prompts) for s in (baseline, *systems)}
    summary["leaderboard"] = leaderboard_rows(summary)
    summary["matchups"] = matchups
    summary["config"] = {**judge.config(), "seed": judge.seed, "samples": samples, "round_robin": round_robin}
    summary["info"] = dict(info or {})
    summary["timing"] = {"elapsed_s": round(time.perf_counter() - t0, 3)}
    atomic_write_text(out / SUMMARY_FILE, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    write_arena_report(summary, out, REPORT_FILE, PLOT_FILE)
    return summary


def leaderboard_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Leaderboard rows, best win rate first; the baseline is a row at 50% / Elo 1000."""
    base = summary["baseline"]
    rows = []
    for name, s in summary["systems"].items():
        rows.append({"system": name, "win_rate": s["win_rate"], "win_rate_ci": s["win_rate_ci"],
                     "bt_elo": s["bt_elo"], "bt_elo_ci": s["bt_elo_ci"],
                     "bt_elo_ci_warning": s.get("bt_elo_ci_warning"), "n_prompts": s["n_prompts"],
                     "n_dropped": s["n_dropped"], "outcomes": s["outcomes"],
                     "win_rate_style_controlled": ((summary.get("style_control") or {}).get("systems") or {})
                     .get(name, {}).get("win_rate")})
    rows.append({"system": base, "win_rate": 0.5, "win_rate_ci": None, "bt_elo": summary["bt_elo_baseline"],
                 "bt_elo_ci": None, "n_prompts": None, "n_dropped": None,
                 "outcomes": {o: None for o in OUTCOMES}, "baseline": True, "win_rate_style_controlled": 0.5})
    rows.sort(key=lambda r: (-(r["win_rate"] if r["win_rate"] is not None else -1.0), r["system"]))
    for i, r in enumerate(rows, start=1):
        r["rank"] = i
    return rows
