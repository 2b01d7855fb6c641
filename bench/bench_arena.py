"""Arena leaderboard on real model outputs: GSM8K solutions of four systems, two judges.

The systems are the four model-solution sets of GSM8K's ``example_model_solutions.jsonl`` (Cobbe et
al., 2021: a 6B and a 175B GPT-3, each with finetuning or verification; the same test questions).
The first ``--n`` questions are written as arena inputs (``{id, prompt, response}``, calculator
annotations ``<<48/2=24>>`` removed), and every system is judged against ``--baseline`` by

* the **embedded judge** (``--model``, default smollm2-135m) through ``judgerl.arena.run_arena``
  (the ``judgerl arena`` path: both orders, greedy, answer forcing), once per ``--protocols`` entry:
  ``arena`` (five-level labels) and ``pav`` (plain A/B verdicts: wins only), because a small base
  model may not write the arena labels at all (every prompt with an invalid judgment is dropped);
* a **programmatic judge**: each solution's final answer is checked against the ground truth with
  math-verify (:func:`judgerl.verify.math.answers_match`); correct vs wrong is a strong preference
  (``A>>B``), both correct or both wrong a tie. Its games go through the same scoring
  (:func:`judgerl.arena.score_arena`).

Printed: the leaderboards (win rate vs the baseline with a 95% bootstrap CI, Bradley-Terry on the
Elo scale), each system's accuracy, Kendall's tau between each embedded run's win rates and the
programmatic ones, how often the embedded judge's games agree with correctness (over games where
exactly one response is correct; ties and invalid judgments count as disagreement), its invalid
rate and its position-A rate. ``--markdown`` prints the docs/results.md section.

Usage (run ALONE on an idle machine; about 15-25 minutes with the defaults on 2 cores)::

    python bench/bench_arena.py --out runs/bench_arena --markdown
    python bench/bench_arena.py --n 3 --max-new-tokens 16 --bootstrap 50 --out /tmp/ba   # smoke test

Re-running the same command resumes (the arena's eval runs are resumable).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data"))
SOLUTIONS = DATA / "gsm8k" / "example_model_solutions.jsonl"
SYSTEMS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


def write_inputs(path: Path, n: int, out: Path) -> tuple[dict[str, Path], list[dict]]:
    """Arena input files (one per system) for the first ``n`` questions; returns paths and records."""
    from judgerl.data.io import iter_records
    from judgerl.verify.answers import strip_calculator_annotations

    rows = []
    for raw in iter_records(path):
        if raw.error:
            raise ValueError(f"{path} {raw.location}: {raw.error}")
        rows.append(raw.value)
        if len(rows) >= n:
            break
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name in SYSTEMS:
        files[name] = out / f"{name}.jsonl"
        with files[name].open("w", encoding="utf-8") as fh:
            for i, r in enumerate(rows):
                fh.write(json.dumps({"id": f"gsm8k-{i}", "prompt": r["question"],
                                     "response": strip_calculator_annotations(r[name]["solution"])},
                                    ensure_ascii=False) + "\n")
    return files, rows


def correctness(rows: list[dict]) -> tuple[dict[str, list[bool | None]], float]:
    """Per system, each solution's math-verify verdict against the ground truth (None: undecided),
    and the agreement rate with the file's own ``is_correct`` labels."""
    from judgerl.verify.math import answers_match, default_verifier

    verifier = default_verifier()
    out: dict[str, list[bool | None]] = {s: [] for s in SYSTEMS}
    agree = total = 0
    for r in rows:
        for s in SYSTEMS:
            ok = answers_match(r["ground_truth"], r[s]["solution"], verifier)
            out[s].append(ok)
            if ok is not None:
                total += 1
                agree += ok == r[s]["is_correct"]
    return out, agree / total if total else float("nan")


def programmatic_games(correct: dict[str, list[bool | None]], baseline: str) -> list:
    """Two games (both orders) per question and system: correct vs wrong = strong win / loss; else a
    tie; an undecided check makes the game invalid (the question is dropped)."""
    from judgerl.arena import Game

    games = []
    for s in SYSTEMS:
        if s == baseline:
            continue
        for i, (mine, theirs) in enumerate(zip(correct[s], correct[baseline])):
            if mine is None or theirs is None:
                outcome = None
            elif mine == theirs:
                outcome = "tie"
            else:
                outcome = "strong_win" if mine else "strong_loss"
            games += [Game(f"gsm8k-{i}", s, baseline, outcome), Game(f"gsm8k-{i}", s, baseline, outcome)]
    return games


def judge_agreement(run_dir: Path, correct: dict[str, list[bool | None]], baseline: str) -> dict:
    """Over games where exactly one of the two solutions is correct: how often the embedded judge
    preferred the correct one (a tie or an invalid judgment counts as not agreeing); plus, over all
    judgments, the invalid rate and how often a valid non-tie verdict picked position A."""
    from judgerl.arena.run import record_label
    from judgerl.arena.scores import outcome_of
    from judgerl.eval import read_judgments

    agree = n = invalid = total = pos_a = decided = 0
    for s in SYSTEMS:
        if s == baseline:
            continue
        for rec in read_judgments(run_dir / "games" / f"{s}__vs__{baseline}" / "judgments.jsonl"):
            label = record_label(rec)
            total += 1
            invalid += label is None
            if label is not None and label != "A=B":
                decided += 1
                pos_a += label.startswith("A>")
            i = int(str(rec["pair_id"]).split("-")[1])
            mine, theirs = correct[s][i], correct[baseline][i]
            if mine is None or theirs is None or mine == theirs:
                continue
            n += 1
            outcome = outcome_of(label, int(rec["chosen_index"]))
            agree += outcome in (("win", "strong_win") if mine else ("loss", "strong_loss"))
    return {"games": n, "agree": agree, "rate": agree / n if n else None,
            "invalid_rate": invalid / total if total else None, "position_a_rate": pos_a / decided if decided else None}


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _row(name: str, s: dict, acc: float | None) -> str:
    ci, bci = s.get("win_rate_ci"), s.get("bt_elo_ci")
    ci_s = f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "–"
    bt_s = "–" if s.get("bt_elo") is None else f"{s['bt_elo']:.0f}"
    bci_s = f"[{bci[0]:.0f}, {bci[1]:.0f}]" if bci else "–"
    acc_s = "–" if acc is None else f"{100 * acc:.0f}%"
    return (f"| {name} | {acc_s} | {_pct(s.get('win_rate'))} | {ci_s} | {bt_s} | {bci_s} | "
            f"{s.get('n_prompts', '–')} | {s.get('n_dropped', '–')} |")


def _tau(a: list, b: list) -> float | None:
    from scipy.stats import kendalltau

    if any(x is None for x in a + b) or len(a) < 2:
        return None
    t = kendalltau(a, b).statistic
    return None if t != t else float(t)


def _order(systems: dict) -> list[str]:
    return sorted(systems, key=lambda n: -(systems[n]["win_rate"] if systems[n]["win_rate"] is not None else -1))


HEAD = ("| system | accuracy | win rate vs baseline | 95% CI | Bradley-Terry (Elo) | 95% CI | prompts | dropped |\n"
        "|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m", help="judge model (any load_backend name)")
    ap.add_argument("--protocols", default="arena,pav", help="comma-separated pairwise protocols for the model")
    ap.add_argument("--n", type=int, default=50, help="questions (the first N of the file)")
    ap.add_argument("--baseline", default="6b_finetuning", choices=SYSTEMS)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--no-force-answer", action="store_true")
    ap.add_argument("--anti-hacking", action="store_true")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--data", default=str(SOLUTIONS))
    ap.add_argument("--out", default="runs/bench_arena")
    ap.add_argument("--markdown", action="store_true", help="print the docs/results.md section")
    args = ap.parse_args(argv)

    from judgerl.arena import load_system, run_arena, score_arena
    from judgerl.backends import SamplingParams, load_backend
    from judgerl.judge import Judge
    from judgerl.protocols import get_protocol

    out = Path(args.out)
    load0 = os.getloadavg()
    files, rows = write_inputs(Path(args.data), args.n, out / "inputs")
    correct, is_correct_agreement = correctness(rows)
    acc = {s: sum(bool(c) for c in correct[s]) / len(rows) for s in SYSTEMS}
    others = [s for s in SYSTEMS if s != args.baseline]
    prog = score_arena(programmatic_games(correct, args.baseline), args.baseline, others, n_bootstrap=args.bootstrap)
    result: dict = {"model": args.model, "n_questions": len(rows), "baseline": args.baseline,
                    "max_new_tokens": args.max_new_tokens, "force_answer": not args.no_force_answer,
                    "anti_hacking": args.anti_hacking, "accuracy": acc,
                    "math_verify_vs_is_correct": is_correct_agreement, "programmatic": prog["systems"], "embedded": {}}
    lines = [f"Arena on GSM8K model solutions: {len(rows)} questions, baseline `{args.baseline}` "
             f"(accuracy {100 * acc[args.baseline]:.0f}%), strong win = 3 games, {args.bootstrap} bootstrap rounds.",
             "", "**Programmatic judge** (math-verify correctness vs the ground truth; correct vs wrong = strong win):",
             "", HEAD]
    lines += [_row(s, prog["systems"][s], acc[s]) for s in _order(prog["systems"])]
    backend = None
    n_judgments = 2 * len(others) * len(rows)
    for proto in [p.strip() for p in args.protocols.split(",") if p.strip()]:
        backend = backend or load_backend(args.model)
        judge = Judge(get_protocol(proto, anti_hacking=args.anti_hacking), backend,
                      SamplingParams(max_new_tokens=args.max_new_tokens), force_answer=not args.no_force_answer)
        t0 = time.perf_counter()
        emb = run_arena(judge, load_system(files[args.baseline], require_prompt=True),
                        [load_system(files[s]) for s in others], out / f"embedded-{proto}", n_bootstrap=args.bootstrap,
                        batch_size=args.batch_size, progress=True)
        elapsed = time.perf_counter() - t0
        agreement = judge_agreement(out / f"embedded-{proto}", correct, args.baseline)
        tau = _tau([emb["systems"][s]["win_rate"] for s in others], [prog["systems"][s]["win_rate"] for s in others])
        result["embedded"][proto] = {"systems": emb["systems"], "kendall_tau_vs_programmatic": tau,
                                     "agreement": agreement, "elapsed_s": round(elapsed, 1), "judgments": n_judgments}
        lines += ["", f"**Embedded judge** `{args.model}`, protocol `{proto}` (greedy, {args.max_new_tokens} new "
                  f"tokens{', answer forcing' if not args.no_force_answer else ''}"
                  f"{', anti-hacking instruction' if args.anti_hacking else ''}): invalid judgments "
                  f"{_pct(agreement['invalid_rate'])}, position A picked in {_pct(agreement['position_a_rate'])} of "
                  f"decided judgments; prefers the correct solution in {agreement['agree']}/{agreement['games']} "
                  f"games where exactly one is correct ({_pct(agreement['rate'])}); Kendall's tau with the "
                  f"programmatic win rates: {'–' if tau is None else f'{tau:.2f}'}; {n_judgments} judgments in "
                  f"{elapsed:.0f} s.", "", HEAD]
        lines += [_row(s, emb["systems"][s], acc[s]) for s in _order(emb["systems"])]
    load1 = os.getloadavg()
    result["load_average"] = {"before": load0, "after": load1}
    lines += ["", f"math-verify agrees with the file's `is_correct` labels on {100 * is_correct_agreement:.1f}% of "
              f"the solutions. Load average before {load0[0]:.2f}, after {load1[0]:.2f}.", ""]
    (out / "bench_arena.json").write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(lines) if args.markdown else json.dumps(result, indent=2))
    print(f"wrote {out / 'bench_arena.json'} and the leaderboards in {out}/embedded-*/", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
