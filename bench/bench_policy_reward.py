"""Proof on CPU: a policy trained with GRPO against a *served* judge, watched by a programmatic gold judge.

The judge-as-reward study ("Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training" (2025)) on the embedded model:

* policy = the embedded SmolLM2-135M on IFEval prompts (``../shared/data/ifeval``), split by a seeded
  hash into training and held-out prompts;
* gold judge = the programmatic IFEval checker (0-9, ``judgerl.gold.IFEvalGoldJudge``);
* training judge = the embedded PoS judge on 0-9, (a) untrained and (b) trained against gold labels
  (``judgerl label --judge ifeval`` on base-policy responses, then SFT on the gold reasoning + score and
  score-regression GRPO: :func:`judgerl.train.gold_judge.train_gold_judge`);
* static agreement of each judge with the gold on held-out records (Krippendorff's alpha, Pearson,
  Spearman, invalid rate: ``judgerl agree``);
* for each training judge: ``--steps`` (>= 50) policy GRPO steps whose rewards come from ``judgerl serve``
  (a separate process, score mode ``expected``), held-out gold curves every ``--eval-every`` steps, audit
  rates over steps, the reward-hacking test;
* Arena win rate of the final policy vs the base policy on the held-out prompts, judged by the gold judge
  (pointwise scores compared per prompt) and by the training judge (``judgerl.arena``, its pairwise prompt).

One command, one wall-clock budget; every stage writes its result into ``--out`` and is skipped when
done, training stages resume from their checkpoints, so rerunning the same command continues::

    python bench/bench_policy_reward.py --out runs/bench-policy-reward --budget-min 300

Expected wall time on an idle 2-core CPU with the defaults: about 4 hours (two policy runs of 50 steps at
~1 minute per step including the served judge -- measured 3.3 min per step with the machine at load
average 6-7 -- plus labelling, judge training, evaluations, arena). The default budget is 300 minutes.
``--smoke`` runs every stage with tiny limits (minutes) to check the pipeline. Results: ``results.json``
and ``results.md`` (a section for docs/results.md), ``policy-*/curves.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data"))
SCALE = (0.0, 9.0)


sys.path.insert(0, str(Path(__file__).resolve().parent))
from study_stages import Stages, log  # noqa: E402  (one stage runner for both studies)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    os.replace(tmp, path)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


# -- stages --------------------------------------------------------------------------------------

def split(args, out: Path) -> dict:
    from judgerl.train.policy import load_prompts, split_prompts

    train, held = split_prompts(load_prompts(args.ifeval), args.heldout, args.seed)
    return {"train": [i for i, _ in train], "heldout": [i for i, _ in held]}


def base_responses(args, out: Path, ids: list[str], name: str) -> dict:
    """Two sampled base-policy responses per prompt (records to label), appended per chunk (resumable)."""
    from judgerl.backends import SamplingParams
    from judgerl.backends.base import derive_seed
    from judgerl.backends.models import load_backend
    from judgerl.train.policy import load_prompts

    prompts = dict(load_prompts(args.ifeval))
    path = out / f"records-{name}.jsonl"
    done = {r["id"] for r in read_jsonl(path)} if path.is_file() else set()
    todo = [(f"{pid}-{k}", pid) for pid in ids for k in range(2) if f"{pid}-{k}" not in done]
    backend = load_backend(args.policy)
    params = SamplingParams(max_new_tokens=args.policy_tokens, temperature=0.8)
    for start in range(0, len(todo), 16):
        chunk = todo[start : start + 16]
        outs = backend.generate([[{"role": "user", "content": prompts[p]}] for _, p in chunk], params,
                                seeds=[derive_seed(args.seed, rid) for rid, _ in chunk])
        with path.open("a", encoding="utf-8") as f:
            for (rid, pid), c in zip(chunk, outs):
                f.write(json.dumps({"id": rid, "prompt": prompts[pid], "response": c.text}, ensure_ascii=False) + "\n")
        log(f"  {name} responses {start + len(chunk)}/{len(todo)}")
    return {"records": str(path), "n": len(read_jsonl(path))}


#: Tokens per round of a tool judge at least: the IF teacher's check programs run to 287 tokens (median 89), and a
#: round cut short executes half a program (recipe ``tir-judge-if``'s ``tools.max_new_tokens``).
TOOL_ROUND_TOKENS = 320


def judge_tokens(args, tools: bool = False) -> int:
    """Tokens per judge generation: ``--judge-tokens``, and per round at least :data:`TOOL_ROUND_TOKENS` with tools
    (except in a ``--smoke`` run: tiny sizes everywhere, it checks the pipeline only)."""
    if tools and not getattr(args, "smoke", False):
        return max(int(args.judge_tokens), TOOL_ROUND_TOKENS)
    return int(args.judge_tokens)


def label(args, out: Path, judge: str, records: str, name: str, mode: str = "parsed", *, tools: bool = False,
          rubric: bool = False, measures: bool = False) -> dict:
    """Labels of ``records`` by ``judge`` (``ifeval``: the gold); ``parsed`` without answer forcing (the honest
    invalid rate), ``expected`` with forcing, as the reward server scores; ``tools``: the judge runs code, with the
    response namespace (``RESPONSE`` in its code, as the tool judges are trained: recipe ``tir-judge-if``);
    ``rubric``: each prompt's IFEval rubric in the judge prompt (also bench_judge_as_reward's labelling);
    ``measures``: with ``tools``, the prompt names the namespace's text measures (protocol option ``measures``)."""
    from judgerl.gold.label import ifeval_rubrics, load_label_records, run_label
    from judgerl.gold.scorer import load_scorer
    from judgerl.judge.options import JudgeOptions

    opts = JudgeOptions(judge, protocol="pos", max_new_tokens=judge_tokens(args, tools), seed=args.seed,
                        force_answer=mode == "expected", tools=tools,
                        protocol_args=({"namespace": True, **({"measures": True} if measures else {})} if tools else {}))
    scorer = load_scorer(judge, scale=SCALE, mode=mode, options=opts, ifeval_data=str(args.ifeval))
    recs = load_label_records(records)[0]
    if rubric:
        recs = ifeval_rubrics(recs, args.ifeval)
    summary = run_label(scorer, recs, out / "labels" / name, info={"data": records},
                        on_batch=lambda d, t: log(f"  label {name}: {d}/{t}"))
    return {"dir": str(out / "labels" / name), "summary": summary}


def train_judge(args, out: Path, gold_dir: str) -> dict:
    from judgerl.train.gold_judge import train_gold_judge

    return train_gold_judge(gold_dir, out / "judge", base_model=args.judge, scale=SCALE, sft_steps=args.sft_steps,
                            grpo_steps=args.judge_grpo_steps, seed=args.seed, grpo_overrides=[
                                f"grpo.max_completion_length={args.judge_tokens}",
                                f"time_limit_min={max(1.0, args.judge_grpo_minutes)}"])


def agreement(out: Path, gold_dir: str, judges: dict[str, str]) -> dict:
    from judgerl.gold.agreement import agreement_report, format_agreement

    report = agreement_report(gold_dir, judges)
    (out / "agreement.md").write_text(format_agreement(report) + "\n")
    return report


class Server:
    """``judgerl serve`` in its own process (the judge on its own server, as the paper runs it)."""

    def __init__(self, args, judge: str, log_path: Path, extra: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "judgerl.cli.main", "serve", "--model", judge, "--protocol", "pos",
               "--protocol-arg", f"min_score={SCALE[0]:g}", "--protocol-arg", f"max_score={SCALE[1]:g}",
               "--port", str(self.port), "--max-new-tokens", str(judge_tokens(args, "--tools" in extra)), "--force-answer",
               "--score-mode", "expected", "--log-level", "warning", "--seed", str(args.seed), *extra]
        self.log = log_path.open("a")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 600
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"judgerl serve exited with {self.proc.returncode}; see {log_path}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(1)
        self.stop()
        raise RuntimeError(f"judgerl serve did not come up in 600 s; see {log_path}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def policy(args, run: Stages, out: Path, name: str, judge: str) -> dict | None:
    from judgerl.train.policy import run_policy
    from judgerl.train.run import load_run_recipe

    run_dir = out / f"policy-{name}"
    resume = (run_dir / "config.json").is_file()
    budget = run.left_min() - args.reserve_min
    if budget <= 1:
        return None
    cfg = load_run_recipe("policy-grpo", [
        f"prompts={args.ifeval}", f"model={args.policy}", f"output_dir={run_dir}", f"heldout={args.heldout}",
        f"seed={args.seed}", f"eval_every={args.eval_every}", f"grpo.max_steps={args.steps}",
        f"grpo.max_completion_length={args.policy_tokens}", f"grpo.save_steps={args.eval_every}",
        f"time_limit_min={budget}", f"resume={str(resume).lower()}", "reward_retry_s=900",
        f"judge.max_new_tokens={args.judge_tokens}"] + (["train_limit=16", "grpo.per_device_train_batch_size=4",
                                                         "grpo.num_generations=2"] if args.smoke else []))
    server = Server(args, judge, out / f"serve-{name}.log")
    try:
        cfg.reward_url = server.url
        result = run_policy(cfg)
    finally:
        server.stop()
    if result["global_step"] < args.steps:
        return None
    return result


def arena(args, out: Path, name: str, judge: str) -> dict:
    """Final vs base policy on the held-out prompts: gold win rate from gold scores, and the training judge's
    Arena win rate (judgerl.arena) when that package is present."""
    run_dir = out / f"policy-{name}"
    steps = sorted(int(p.stem.split("-")[1]) for p in (run_dir / "heldout").glob("step-*.jsonl"))
    base, final = read_jsonl(run_dir / "heldout" / "step-0.jsonl"), read_jsonl(run_dir / "heldout" / f"step-{steps[-1]}.jsonl")
    result: dict = {"final_step": steps[-1]}
    try:
        from judgerl.arena import Game, win_rate
        from judgerl.arena.scores import valid_games
    except ImportError:
        result["arena"] = "judgerl.arena not available"
        return result
    b = {r["id"]: r for r in base}
    games = []
    for r in final:
        g0, g1 = b[r["id"]]["gold_score"], r["gold_score"]
        outcome = None if g0 is None or g1 is None else ("win" if g1 > g0 else "loss" if g1 < g0 else "tie")
        games.append(Game(str(r["id"]), "final", "base", outcome))
    ok, dropped = valid_games(games)
    result["gold_win_rate"] = win_rate(ok)
    result["gold_games"] = {"n": len(ok), "dropped": sum(dropped.values())}
    from judgerl.arena import load_system, run_arena
    from judgerl.backends import SamplingParams
    from judgerl.backends.models import load_backend
    from judgerl.judge import Judge
    from judgerl.protocols import get_protocol

    write_jsonl(out / "arena" / name / "base.jsonl", [{"id": r["id"], "prompt": r["prompt"], "response": r["response"]}
                                                      for r in base])
    write_jsonl(out / "arena" / name / "final.jsonl", [{"id": r["id"], "prompt": r["prompt"], "response": r["response"]}
                                                       for r in final])
    judge_obj = Judge(get_protocol("arena"), load_backend(judge), SamplingParams(max_new_tokens=args.judge_tokens),
                      force_answer=True, seed=args.seed)
    summary = run_arena(judge_obj, load_system(str(out / "arena" / name / "base.jsonl"), require_prompt=True),
                        [load_system(str(out / "arena" / name / "final.jsonl"))], out / "arena" / name / "games",
                        progress=False)
    row = next(r for r in summary["leaderboard"] if r.get("system") == "final")
    result["judge_arena"] = {k: row.get(k) for k in ("win_rate", "win_rate_ci", "n_prompts", "n_dropped") if k in row}
    return result


def summarize_policy(out: Path, name: str) -> dict:
    from judgerl.train.curves import read_curves

    recs = read_curves(out / f"policy-{name}" / "curves.jsonl")
    held = [r for r in recs if r["kind"] == "heldout"]
    roll = [r for r in recs if r["kind"] == "rollout"]
    tail = roll[-10:]
    return {
        "heldout": [{k: r.get(k) for k in ("step", "judge_score_mean", "judge_valid_rate", "gold_score_mean",
                                          "gold_valid_rate")} | {"hacking": r["hacking"].get("suspected"),
                                                                 "audit_any": r["audit"].get("any")} for r in held],
        "rollout_judge_valid_rate_last10": sum(r["judge_valid_rate"] for r in tail) / max(1, len(tail)),
        "rollout_audit_last10": {k: sum(r["audit"].get(k, 0) for r in tail) / max(1, len(tail))
                                 for k in (tail[0]["audit"] if tail else {})},
        "hacking_suspected_at": [r["step"] for r in held if r["hacking"].get("suspected")],
        "curves_png": str(out / f"policy-{name}" / "curves.png"),
    }


def report(args, out: Path, run: Stages) -> None:
    from judgerl.gold.agreement import format_agreement

    st = {k: v["result"] for k, v in run.stages.items()}
    lines = ["## Judge-as-reward on CPU: policy GRPO against a served judge (bench/bench_policy_reward.py)", "",
             f"Policy {args.policy}, IFEval prompts ({len(st['split']['train'])} train / {args.heldout} held-out), "
             f"gold = programmatic IFEval checker (0-9), training judge served by `judgerl serve` (score mode "
             f"expected), {args.steps} GRPO steps per run. Stage times: " +
             ", ".join(f"{k} {v['seconds'] / 60:.1f} min" for k, v in run.stages.items()) + ".", "",
             "### Static agreement with the gold judge (held-out records)", "",
             "Written scores (parsed, no answer forcing: the invalid rate before/after GRPO) and expected "
             "scores (`-expected`: the reward the policy runs use).", "",
             format_agreement(st["agreement"]) if "agreement" in st else "(not run)", ""]
    for name in ("untrained", "trained"):
        key = f"policy-{name}"
        if key not in st:
            continue
        s = summarize_policy(out, name)
        lines += [f"### Policy trained against the {name} judge", "",
                  "| step | train judge | judge valid | gold | gold valid | audit any | hacking |", "|---:|---:|---:|---:|---:|---:|---|"]
        for h in s["heldout"]:
            f = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
            lines.append(f"| {h['step']} | {f(h['judge_score_mean'])} | {f(h['judge_valid_rate'])} | "
                         f"{f(h['gold_score_mean'])} | {f(h['gold_valid_rate'])} | {f(h['audit_any'])} | "
                         f"{'SUSPECTED' if h['hacking'] else ''} |")
        a = st.get(f"arena-{name}", {})
        lines += ["", f"Rollout audit rates (mean of the last 10 steps): {json.dumps(s['rollout_audit_last10'])}; "
                  f"judge valid rate {s['rollout_judge_valid_rate_last10']:.2f}. Curves: `{s['curves_png']}`.",
                  f"Final vs base policy (held-out): gold win rate {a.get('gold_win_rate')}, training-judge arena "
                  f"{a.get('judge_arena', a.get('arena'))}.", ""]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps(st, indent=2, default=str))
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/bench-policy-reward"))
    ap.add_argument("--budget-min", type=float, default=300.0, help="Wall-clock budget of this invocation (minutes).")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--policy", default="smollm2-135m")
    ap.add_argument("--judge", default="smollm2-135m", help="Base of the training judge.")
    ap.add_argument("--heldout", type=int, default=24)
    ap.add_argument("--label-prompts", type=int, default=96, help="Training prompts whose responses get gold labels.")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--policy-tokens", type=int, default=128)
    ap.add_argument("--judge-tokens", type=int, default=192)
    ap.add_argument("--sft-steps", type=int, default=60)
    ap.add_argument("--judge-grpo-steps", type=int, default=30)
    ap.add_argument("--judge-grpo-minutes", type=float, default=30.0)
    ap.add_argument("--reserve-min", type=float, default=15.0, help="Budget kept for the stages after a policy run.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="Tiny limits everywhere: checks the pipeline in minutes.")
    args = ap.parse_args()
    args.ifeval = args.data / "ifeval" / "input_data.jsonl"
    if args.smoke:
        args.heldout, args.label_prompts, args.steps, args.eval_every = 2, 2, 2, 1
        args.policy_tokens, args.judge_tokens, args.sft_steps, args.judge_grpo_steps = 16, 24, 2, 1
        args.reserve_min = 0.0
    elif args.steps < 50:
        log(f"note: --steps {args.steps} < 50: not the proof run")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "args.json").write_text(json.dumps({k: str(v) for k, v in vars(args).items()}, indent=2))
    run = Stages(args.out, args.budget_min)
    out = args.out
    sp = run.run("split", split, args, out)
    run.run("responses-train", base_responses, args, out, sp["train"][: args.label_prompts], "train")
    run.run("responses-heldout", base_responses, args, out, sp["heldout"], "heldout")
    gold_train = run.run("label-gold-train", label, args, out, "ifeval", str(out / "records-train.jsonl"), "gold-train")
    gold_held = run.run("label-gold-heldout", label, args, out, "ifeval", str(out / "records-heldout.jsonl"),
                          "gold-heldout")
    run.run("label-untrained", label, args, out, args.judge, str(out / "records-heldout.jsonl"), "untrained")
    judge = run.run("judge-train", train_judge, args, out, gold_train["dir"])
    run.run("label-sft", label, args, out, judge["sft_model"], str(out / "records-heldout.jsonl"), "sft")
    run.run("label-grpo", label, args, out, judge["grpo_model"], str(out / "records-heldout.jsonl"), "grpo")
    run.run("label-untrained-expected", label, args, out, args.judge, str(out / "records-heldout.jsonl"),
              "untrained-expected", "expected")
    run.run("label-grpo-expected", label, args, out, judge["grpo_model"], str(out / "records-heldout.jsonl"),
              "grpo-expected", "expected")
    run.run("agreement", agreement, out, gold_held["dir"], {n: str(out / "labels" / n) for n in (
        "untrained", "sft", "grpo", "untrained-expected", "grpo-expected")})
    for name, model in (("untrained", args.judge), ("trained", judge["grpo_model"])):
        run.run(f"policy-{name}", policy, args, run, out, name, model)
        run.run(f"arena-{name}", arena, args, out, name, model)
    report(args, out, run)


if __name__ == "__main__":
    main()
