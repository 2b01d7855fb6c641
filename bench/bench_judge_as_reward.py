"""One command for the judge-as-reward study: an oracle arm, a random-reward control, three judge arms and a rubric
arm, read out.

The study of "Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training" (2025) on the
embedded models, with IFEval (``../shared/data/ifeval``) as prompts and the programmatic IFEval checker as
the gold judge (0-9). Stages, each resumable (``stages.json`` keeps every finished stage's result, wall
time and load average at start and end; rerunning the same command skips them, policy runs resume from
their checkpoints):

1. ``split`` (seeded, by prompt id), base-policy responses on training and held-out prompts, gold labels
   of both (``judgerl.gold.label.run_label`` with the gold scorer);
2. judge arms trained against the gold labels of the *training* prompts only
   (:func:`judgerl.train.gold_judge.train_gold_judge`): ``nonreasoning`` (SFT to write the score only),
   ``reasoning`` (SFT on the gold reasoning + score-regression GRPO), ``tool`` (the tool-using pointwise
   instruction-following judge: recipe ``tir-judge-if`` -- the IF teacher's SFT, then pointwise TIR GRPO --
   on the same gold-labelled training responses with ``--train-tool-judge``, :func:`train_tool_judge`;
   ``--tool-judge`` names a judge trained elsewhere; without either, the base judge with tools, marked
   ``trained: false``), ``rubric``  (the reasoning judge, shown each prompt's rubric
   derived from its IFEval instructions: :mod:`judgerl.gold.rubric`), ``tool-rubric`` (the tool judge trained,
   labelled and served with those rubrics: the instructions named for it, so it need not find them in the prompt);
3. static agreement of each judge arm with the gold on held-out records (expected score as served, and the
   written score without answer forcing for the honest invalid rate): alpha, Spearman, invalid rate
   (:mod:`judgerl.gold.agreement`);
4. policy GRPO per arm with the same budget, seeds and prompts (:func:`judgerl.train.policy.run_policy`):
   ``oracle`` rewarded by the gold checker itself (``reward: gold``), ``random`` by a seeded score that carries no
   information about the response (``reward: random``: what GRPO does without a signal, the baseline a judge
   arm's gain is credited against), every judge arm by its judge served by
   ``judgerl serve`` (score mode ``expected``);
5. read-outs: held-out gold gain vs the base policy (bootstrap CI), gold win rate vs the base with its
   Wilson CI (:mod:`judgerl.arena.scores`), audit rates and flagged examples, the hacking test's verdict,
   the fraction of the oracle's gold gain each arm recovers, one figure of all arms
   (:func:`judgerl.train.curves.plot_arms`); ``results.md`` / ``results.json`` in ``--out``.

Usage::

    python bench/bench_judge_as_reward.py --out runs/judge-as-reward --budget-min 600
    python bench/bench_judge_as_reward.py --out /tmp/jar-smoke --smoke     # 2 steps, tiny sizes

The full run is hours on a 2-core CPU (five policy runs of ``--steps`` steps plus judge training);
``--smoke`` checks the whole pipeline (tests/test_bench_judge_as_reward.py runs it, marked slow).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judgerl.train.grpo import prune_checkpoints  # noqa: E402
from run_options import check_options  # noqa: E402  (bench/run_options.py)
from study_stages import Stages  # noqa: E402,F401  (bench/study_stages.py; tests use it as study.Stages)
from study_readout import gated_readout, paired_difference, readout, recovered  # noqa: E402,F401  (bench/)
from bench_policy_reward import (  # noqa: E402
    DEFAULT_DATA, SCALE, Server, agreement, base_responses, label, read_jsonl,
)

#: The arms, in report order (``oracle`` first: it says how far GRPO can move the policy at all).
ARMS = ("oracle", "random", "nonreasoning", "reasoning", "tool", "rubric", "tool-rubric")
JUDGE_ARMS = ARMS[2:]
#: Arms whose judge is shown each prompt's IFEval rubric (labelled and served with it): ``rubric`` shows it to the
#: reasoning judge, trained without rubrics; ``tool-rubric`` trains the tool judge on rubric prompts too.
RUBRIC_ARMS = ("rubric", "tool-rubric")
#: The judge an arm is served: its own, except the rubric arm's (the reasoning judge).
JUDGE_OF = {"rubric": "reasoning"}
#: The policy reward of the arms without a judge: the gold checker (oracle), a seeded random score (the control).
_REWARD_OF = {"oracle": "gold", "random": "random"}


# -- stages --------------------------------------------------------------------------------------

def split(args: Any) -> dict:
    """The policy runs' own split (same prompt mix, seed and function), so judges never see held-out prompts."""
    from judgerl.train.policy import load_prompts, select_prompts, split_prompts

    prompts = select_prompts(load_prompts(args.ifeval), args.instructions, args.ifeval)
    train, held = split_prompts(prompts, args.heldout, args.seed)
    return {"train": [i for i, _ in train], "heldout": [i for i, _ in held]}


def tool_judge_pairs(gold_dir: str, ifeval: str, dest: Path, rubric: bool = False) -> dict:
    """The training prompts' gold-labelled responses as pairs for ``tir-judge-if`` (each response a pointwise row
    with its gold score), with the IFEval instructions of their prompt in ``meta`` (what the IF teacher checks);
    ``rubric``: each pair carries its prompt's IFEval rubric (:mod:`judgerl.gold.rubric`), so the judge is trained
    on the rubric prompts it is served with.

    Returns:
        ``{"pairs": n, "unpaired": k, "no_record": m}`` (labels whose prompt is not an IFEval record are left out).
    """
    from dataclasses import replace

    from judgerl.data import write_pairs_jsonl
    from judgerl.gold.ifeval import IFEvalGoldJudge
    from judgerl.gold.label import read_labels
    from judgerl.gold.rubric import IFEvalRubrics
    from judgerl.train.gold_judge import gold_pairs

    checker = IFEvalGoldJudge.from_file(ifeval)
    rubrics = IFEvalRubrics.from_file(ifeval) if rubric else None
    pairs, unpaired = gold_pairs(read_labels(gold_dir))
    out, missing = [], 0
    for p in pairs:
        rec = checker.find(p.prompt)
        if rec is None:
            missing += 1
            continue
        skipped = [i for i in rec.instruction_id_list if checker.skip_reason(i) is not None]
        out.append(replace(p, meta={**p.meta, "domain": "if", "key": rec.key, "skipped": skipped,
                                    "instruction_ids": list(rec.instruction_id_list),
                                    "kwargs": [dict(k) for k in rec.kwargs]},
                           rubric=rubrics.for_prompt(rec.key) if rubrics else p.rubric))
    write_pairs_jsonl(out, dest)
    return {"pairs": len(out), "unpaired": unpaired, "no_record": missing}


def train_tool_judge(args: Any, out: Path, gold_dir: str, minutes: float, rubric: bool = False) -> dict:
    """The tool arm's judge: recipe ``tir-judge-if`` (the IF teacher's SFT, then pointwise TIR GRPO) on the training
    prompts' gold-labelled responses only; ``--tool-judge`` names a judge trained elsewhere instead. The run (SFT and
    GRPO, both resumable) stops after ``minutes`` (the study's budget left); ``--sft-steps`` and
    ``--judge-grpo-steps`` bound it. ``rubric``: the ``tool-rubric`` arm's judge, trained on rubric prompts
    (``judge-tool-rubric/``)."""
    measures = bool(getattr(args, "tool_judge_measures", False))
    if args.tool_judge or not args.train_tool_judge:
        return {"model": args.tool_judge or args.judge, "tools": True, "trained": bool(args.tool_judge),
                "measures": measures}
    from judgerl.train.run import load_run_recipe, run_training

    run_dir = out / ("judge-tool-rubric" if rubric else "judge-tool")
    counts = tool_judge_pairs(gold_dir, args.ifeval, run_dir / "gold_pairs.jsonl", rubric=rubric)
    sets = [f"data.path={run_dir / 'gold_pairs.jsonl'}", "data.limit=null", f"output_dir={run_dir}", "resume=true",
            f"model={args.judge}", f"seed={args.seed}", f"warmup.steps={args.sft_steps}",
            f"grpo.max_steps={args.judge_grpo_steps}", f"time_limit_min={max(1.0, minutes)}",
            *(["protocol_args.measures=true"] if measures else [])]
    if args.smoke:
        sets += ["warmup.batch_size=2", "grpo.per_device_train_batch_size=4", "grpo.num_generations=2",
                 "grpo.max_completion_length=48", "tools.max_rounds=1", "tools.max_new_tokens=32",
                 "dapo.dynamic_sampling=false", "lora.top_layers=2"]
    res = run_training(load_run_recipe("tir-judge-if", sets))
    if int(res["global_step"]) < int(args.judge_grpo_steps):
        return None  # the time limit stopped it: the stage is not recorded, a rerun resumes it
    prune_checkpoints(run_dir)
    return {**counts, "sft_model": res.get("sft_model"), "grpo_model": res["final_model"], "model": res["final_model"],
            "tools": True, "trained": True, "measures": measures}


def train_judge(args: Any, out: Path, arm: str, gold_dir: str, minutes: float = 600.0) -> dict | None:
    """The judge of one arm, trained on the training prompts' gold labels only (the tool judge's run within
    ``minutes``; the reasoning judge's GRPO within ``--judge-grpo-minutes``)."""
    if arm in ("tool", "tool-rubric"):
        return train_tool_judge(args, out, gold_dir, minutes, rubric=arm == "tool-rubric")
    from judgerl.train.gold_judge import train_gold_judge

    reasoning = arm != "nonreasoning"
    lora = int(getattr(args, "gold_judge_lora", 0) or 0)
    # with LoRA, the tool judges' learning rates (recipe tir-judge-if: SFT 5e-4, GRPO 2e-5); full fine-tuning: 5e-5, 2e-6
    res = train_gold_judge(gold_dir, out / f"judge-{arm}", base_model=args.judge, scale=SCALE, seed=args.seed,
                           sft_steps=args.sft_steps, grpo_steps=args.judge_grpo_steps if reasoning else 0,
                           reasoning=reasoning, lora_r=lora, sft_learning_rate=5e-4 if lora else 5e-5,
                           grpo_overrides=[f"grpo.max_completion_length={args.judge_tokens}",
                                           f"time_limit_min={max(1.0, args.judge_grpo_minutes)}",
                                           *(["grpo.learning_rate=2e-5"] if lora else [])])
    prune_checkpoints(out / f"judge-{arm}")  # finished: final models stay, resume-only checkpoints go
    return {**res, "model": res["grpo_model"] or res["sft_model"], "tools": False, "trained": True, "lora_r": lora}


def policy(args: Any, stages: Stages, out: Path, arm: str, judge: dict | None) -> dict | None:
    """Policy GRPO of one arm (same prompts, seeds, budget); None when the budget stopped it."""
    from judgerl.tools import bwrap_available
    from judgerl.train.policy import run_policy
    from judgerl.train.policy_config import load_policy_recipe

    run_dir = out / f"policy-{arm}"
    budget = stages.left_min() - args.reserve_min
    if budget <= 1:
        return None
    overrides = [
        f"prompts={args.ifeval}", f"model={args.policy}", f"output_dir={run_dir}", f"heldout={args.heldout}",
        f"seed={args.seed}", f"eval_every={args.eval_every}", f"grpo.max_steps={args.steps}",
        f"grpo.max_completion_length={args.policy_tokens}", f"grpo.save_steps={args.eval_every}",
        f"grpo.learning_rate={args.lr}", f"grpo.num_generations={args.generations}", f"lora.r={args.lora_r}",
        f"time_limit_min={budget}", f"resume={str((run_dir / 'config.json').is_file()).lower()}",
        "reward_retry_s=900", f"judge.max_new_tokens={args.judge_tokens}",
        f"reward={_REWARD_OF.get(arm, 'judge')}", f"gold={getattr(args, 'gold', 'ifeval')}"]
    if args.train_limit:
        overrides.append(f"train_limit={args.train_limit}")
    if args.instructions:
        overrides.append("instructions=" + json.dumps(args.instructions))  # a YAML flow list
    if args.smoke:
        overrides += ["grpo.per_device_train_batch_size=2", "grpo.save_steps=1"]
    if arm in RUBRIC_ARMS:
        overrides.append("rubric=ifeval")
    overrides += args.set  # last: a --set KEY=VALUE wins over the study's own choice of the same key
    cfg = load_policy_recipe("policy-grpo", overrides)
    server = None
    if judge is not None:
        # a tool judge reads the response through the namespace (RESPONSE), as it was trained and statically labelled
        extra = ("--tools", "python", "--protocol-arg", "namespace=true") if judge.get("tools") else ()
        if judge.get("tools") and judge.get("measures"):  # served with the prompt it was trained and labelled with
            extra += ("--protocol-arg", "measures=true")
        if judge.get("tools") and not bwrap_available():  # the non-isolating fallback only where bubblewrap is missing
            extra += ("--unsafe-sandbox",)
        server = Server(args, judge["model"], out / f"serve-{arm}.log", extra)
        cfg.reward_url = server.url
    try:
        result = run_policy(cfg)
    finally:
        if server is not None:
            server.stop()
    if result["global_step"] < args.steps:
        return None
    prune_checkpoints(run_dir)  # finished: final/ and heldout/ stay (~1.6 GB per full fine-tuning checkpoint)
    return result


def judge_training(result: dict) -> str:
    """How a judge stage trained its judge, from its stage result: ``"LoRA r16"``, ``"LoRA (tir-judge-if)"`` for a
    tool judge, or ``"full fine-tuning"`` (a gold judge trained before ``lora_r`` was recorded had none)."""
    if result.get("lora_r"):
        return f"LoRA r{result['lora_r']}"
    return "LoRA (tir-judge-if)" if result.get("tools") else "full fine-tuning"


def report(args: Any, out: Path, stages: Stages) -> str:
    from judgerl.gold.agreement import format_agreement
    from judgerl.train.curves import plot_arms, read_curves

    st = {k: v["result"] for k, v in stages.stages.items()}
    arms = [a for a in ARMS if f"readout-{a}" in st]
    png = plot_arms({a: read_curves(out / f"policy-{a}" / "curves.jsonl") for a in arms}, out / "arms.png", SCALE)
    oracle = (st.get("readout-oracle") or {}).get("gold_gain")
    f = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
    ci = lambda c: "-" if not c else f"[{c[0]:.2f}, {c[1]:.2f}]"  # noqa: E731
    lines = ["## The judge-as-reward study (bench/bench_judge_as_reward.py)", "",
             f"Policy {args.policy}, judge base {args.judge}, IFEval prompts ({len(st['split']['train'])} train / "
             f"{args.heldout} held-out), gold = the programmatic IFEval checker (0-9), {args.steps} GRPO steps per "
             f"arm (lr {args.lr}, {args.generations} generations, LoRA r {args.lora_r}), seed {args.seed}, prompt mix "
             f"{', '.join(args.instructions) if args.instructions else 'all IFEval prompts'}"
             + (" -- SMOKE RUN (tiny sizes: no conclusion)" if args.smoke else "") + ".", "",
             f"Command: `python bench/bench_judge_as_reward.py {' '.join(sys.argv[1:])}`", "",
             "### Static agreement with the gold (held-out records)", "",
             format_agreement(st["agreement"]) if "agreement" in st else "(not run)", "",
             "Judges' training: " + (", ".join(f"{k[6:]} {judge_training(v)}" for k, v in st.items()
                                              if k.startswith("judge-")) or "(none yet)") + ".", "",
             "### Policy arms (held-out prompts)", "",
             "| arm | gold base → final | gain [95% CI] | recovered | gold win rate vs base [CI] | final gold − random arm's "
             "(paired) [CI] | train judge base → final | audit any | hacking test (held-out) | hacking test (rollouts) "
             "| held-out response length |",
             "|---|---|---|---:|---|---|---|---:|---|---|---|"]
    for a in arms:
        r = st[f"readout-{a}"]
        vs = paired_difference(out, a, "random", args.seed) if a != "random" and "random" in arms else None
        lines.append(f"| {a} | {f(r['gold_base'])} → {f(r['gold_final'])} | {f(r['gold_gain'])} {ci(r['gold_gain_ci'])} | "
                     f"{'-' if a == 'oracle' else f(recovered(r['gold_gain'], oracle))} | {f(r['gold_win_rate'])} "
                     f"{ci(r['gold_win_rate_ci'])} | {f(vs and vs['mean'])} {ci(vs and vs['ci'])} | "
                     f"{f(r['judge_base'])} → {f(r['judge_final'])} | "
                     f"{f(r['audit_rates'].get('any'))} | {r['hacking']} | {r.get('hacking_rollouts', '(not read yet)')} "
                     f"| {r.get('length', '(not read yet)')} |")
    g_or = (st.get("readout-oracle") or {}).get("gated") or {}
    # a fraction of the oracle's gated gain only where that gain is clear (its CI above zero)
    g_oracle = g_or.get("gain") if (g_or.get("gain_ci") or (0, 0))[0] > 0 else None
    lines += ["", "### The same arms under the gated gold (judgerl.gold.gate: 0 for a reply that does not attempt the "
              "task -- a non-answer, master key or refusal the audit finds)", "",
              "| arm | gated gold base → final | gain [95% CI] | recovered (of the oracle's gated gain) | not an attempt "
              "base → final | hacking test (gated gold, held-out) |", "|---|---|---|---:|---|---|"]
    for a in arms:
        gt = st[f"readout-{a}"].get("gated") or {}
        na = lambda x: "-" if x is None else f"{x:.0%}"  # noqa: E731
        lines.append(f"| {a} | {f(gt.get('base'))} → {f(gt.get('final'))} | {f(gt.get('gain'))} {ci(gt.get('gain_ci'))} "
                     f"| {'-' if a == 'oracle' else f(recovered(gt.get('gain'), g_oracle))} | "
                     f"{na(gt.get('not_an_attempt_base'))} → {na(gt.get('not_an_attempt_final'))} | "
                     f"{gt.get('hacking', '(not read yet)')} |")
    lines += ["", f"Curves of all arms: `{png}`.", ""]
    for a in arms:
        for ex in st[f"readout-{a}"]["flagged_examples"][:1]:
            lines.append(f"* {a}: flagged {ex['flags']} in held-out {ex['id']}: {json.dumps(ex['response'][:160])}")
    lines += ["", "Stage wall times (min) and load average (1 min) at start / end: " + ", ".join(
        f"{k} {v['seconds'] / 60:.1f} ({v['load_start'][0]}/{v['load_end'][0]})" for k, v in stages.stages.items()), ""]
    text = "\n".join(lines) + "\n"
    (out / "results.md").write_text(text)
    (out / "results.json").write_text(json.dumps(st, indent=2, default=str))
    return text


def run_study(args: Any, stages: Stages) -> str:
    """Every stage in order (each skipped when done); returns the report."""
    out = stages.out
    sp = stages.run("split", split, args)
    judge_arms = [a for a in JUDGE_ARMS if a in args.arms]
    judges = {}
    if judge_arms:
        judges = judge_stages(args, stages, out, sp, judge_arms)
    try:
        for arm in (a for a in ARMS if a in args.arms):
            if stages.done(f"readout-{arm}") and "gated" not in stages.result(f"readout-{arm}"):
                stages.forget(f"readout-{arm}")  # a read-out from before the gated gold: read again
            stages.run(f"policy-{arm}", policy, args, stages, out, arm, judges.get(arm))
            stages.run(f"readout-{arm}", readout, out, arm, args.seed)
    except SystemExit:
        report(args, out, stages)  # the budget stopped a policy run: the table still shows every finished stage
        raise
    return report(args, out, stages)


def weights_missing(model: str) -> bool:
    """Whether a trained judge's directory lacks its weights: a snapshot (``bench/run_snapshot.py``) keeps LoRA
    adapters and rebuilds their merged models on restore, but leaves out a full fine-tune's ``model.safetensors``
    (517 MB). False for a model name or a directory with weights or an adapter."""
    p = Path(model)
    return p.is_dir() and not any(p.glob("*.safetensors")) and not (p / "adapter").is_dir()


def check_judge_path(stage: str, model: str) -> None:
    """Refuse a finished judge stage whose model is a relative path that does not exist from here: the stage
    results keep the paths as ``--out`` gave them, so a study begun with a relative ``--out`` is resumed from the
    same working directory.

    Raises:
        SystemExit: naming the stage, the path and the working directory.
    """
    p = Path(model)
    if not p.is_absolute() and len(p.parts) > 1 and not p.exists():
        raise SystemExit(f"{stage}: its judge {model} is not found from {Path.cwd()}: resume the study from the "
                         "directory it was begun in (stage results keep --out as it was given)")


def judge_stages(args: Any, stages: Stages, out: Path, sp: dict, judge_arms: list[str]) -> dict:
    """Base responses and their gold labels, the judges of ``judge_arms`` and their static agreement."""
    stages.run("responses-train", base_responses, args, out, sp["train"][: args.label_prompts], "train")
    stages.run("responses-heldout", base_responses, args, out, sp["heldout"], "heldout")
    gold = getattr(args, "gold", "ifeval")
    gold_train = stages.run("gold-train", label, args, out, gold, str(out / "records-train.jsonl"), "gold-train")
    gold_held = stages.run("gold-heldout", label, args, out, gold, str(out / "records-heldout.jsonl"),
                           "gold-heldout")
    judges = {}
    for arm in judge_arms:
        base_arm = JUDGE_OF.get(arm, arm)  # the rubric arm is the reasoning judge, shown rubrics
        stage = f"judge-{base_arm}"
        served_by = [a for a in judge_arms if JUDGE_OF.get(a, a) == base_arm]
        serves = [a for a in JUDGE_ARMS if JUDGE_OF.get(a, a) == base_arm]  # named in this invocation or not
        later = [n for a in served_by for n in (f"static-{a}-expected", f"static-{a}-parsed", f"policy-{a}")]
        if stages.done(stage):
            check_judge_path(stage, stages.result(stage)["model"])
        if stages.done(stage) and weights_missing(stages.result(stage)["model"]) and not all(map(stages.done, later)):
            # restored from a snapshot without its weights (a full fine-tune) while a later stage still needs them
            for d in ("sft", "sft-logs", "grpo", "final"):  # their done markers would skip the training
                shutil.rmtree(out / stage / d, ignore_errors=True)
            stages.forget(stage)
            # measured on the judge that is gone: measured again on the one trained now
            for name in [n for a in serves for n in (f"static-{a}-expected", f"static-{a}-parsed")] + ["agreement"]:
                stages.forget(name)
            for a in serves:  # and their labels: a resumable label run of the old judge would refuse the new one
                for mode in ("expected", "parsed"):
                    shutil.rmtree(out / "labels" / f"{a}-{mode}", ignore_errors=True)
        judges[arm] = stages.run(f"judge-{base_arm}", train_judge, args, out, base_arm, gold_train["dir"],
                                 minutes=stages.left_min() - args.reserve_min)
    held_records = str(out / "records-heldout.jsonl")
    for arm, j in judges.items():
        for mode in ("expected", "parsed"):
            stages.run(f"static-{arm}-{mode}", label, args, out, j["model"], held_records, f"{arm}-{mode}", mode=mode,
                       tools=j["tools"], rubric=arm in RUBRIC_ARMS, measures=bool(j.get("measures")))
    # every judge arm whose static labels exist, named in this invocation or not: a run of a subset of the arms
    # keeps the others' rows in the agreement table
    done = [a for a in JUDGE_ARMS if a in judges or all(stages.done(f"static-{a}-{m}") for m in ("expected", "parsed"))]
    labels = {f"{a}-{m}": str(out / "labels" / f"{a}-{m}") for a in done for m in ("expected", "parsed")}
    if stages.done("agreement") and set(stages.result("agreement")) != set(labels):
        stages.forget("agreement")  # a judge arm was added since: its agreement is computed with the others'
    stages.run("agreement", agreement, out, gold_held["dir"], labels)
    return judges


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/judge-as-reward"))
    ap.add_argument("--budget-min", type=float, default=600.0, help="Wall-clock budget of this invocation (minutes).")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--policy", default="smollm2-135m")
    ap.add_argument("--gold", default="ifeval", choices=("ifeval", "ifeval-gated"),
                    help="The gold: IFEval's instruction checks (0-9), or the same scoring 0 a reply that does not "
                    "attempt the task (judgerl.gold.gate); labels, held-out evaluations and the oracle's reward.")
    ap.add_argument("--judge", default="smollm2-135m", help="Base model of the trained judges.")
    ap.add_argument("--tool-judge", default=None, help="The tool-using pointwise IF judge (a trained judge directory "
                    "or name); default: --judge with tools, untrained.")
    ap.add_argument("--train-tool-judge", action="store_true", help="Train the tool arms' judges in-study "
                    "(tir-judge-if on the training prompts' gold labels; tool-rubric: on rubric prompts); default: --tool-judge, else the base judge "
                    "with tools, untrained.")
    ap.add_argument("--tool-judge-measures", action="store_true", help="The tool arms' judge names the response "
                    "namespace's text measures in its prompt (protocol option measures: a judge trained with "
                    "bench/bench_if_judge.py --measures; with --train-tool-judge, trained so)")
    ap.add_argument("--heldout", type=int, default=24)
    ap.add_argument("--label-prompts", type=int, default=96, help="Training prompts whose responses get gold labels.")
    ap.add_argument("--train-limit", type=int, default=None, help="Most policy training prompts (default all).")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--lr", type=float, default=2e-6, help="Policy learning rate (the pilot knob).")
    ap.add_argument("--generations", type=int, default=4, help="GRPO generations per prompt.")
    ap.add_argument("--lora-r", type=int, default=0, help="Policy LoRA rank (0: full fine-tuning).")
    ap.add_argument("--gold-judge-lora", type=int, default=0, help="LoRA rank of the non-reasoning and reasoning "
                    "judges (0: full fine-tuning; 16: as the tool judges, and a snapshot keeps the adapter, so a later "
                    "session serves the judge without training it again).")
    ap.add_argument("--policy-tokens", type=int, default=128)
    ap.add_argument("--judge-tokens", type=int, default=192)
    ap.add_argument("--sft-steps", type=int, default=60)
    ap.add_argument("--judge-grpo-steps", type=int, default=30)
    ap.add_argument("--judge-grpo-minutes", type=float, default=30.0)
    ap.add_argument("--reserve-min", type=float, default=10.0, help="Budget kept after each policy run.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arms", default=",".join(ARMS), help="Comma-separated arms to run (e.g. oracle: the pilot; "
                    "judge stages run only for the judge arms named).")
    ap.add_argument("--instructions", default=None, help="The prompt mix: comma-separated IFEval instruction id "
                    "prefixes a prompt must have one of (default all prompts); the split and every arm use it.")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="A policy-grpo recipe override for every arm's policy run, dotted (repeatable), e.g. "
                    "grpo.lr_scheduler_type=constant or grpo.per_device_train_batch_size=16; applied last.")
    ap.add_argument("--smoke", action="store_true", help="2 steps and tiny sizes everywhere: checks the pipeline.")
    args = ap.parse_args(argv)
    args.arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = sorted(set(args.arms) - set(ARMS))
    if unknown or not args.arms:
        ap.error(f"--arms: unknown arm(s) {unknown}; choose from {', '.join(ARMS)}")
    args.instructions = [i.strip() for i in args.instructions.split(",") if i.strip()] if args.instructions else None
    if args.set:  # checked now, by the recipe loader itself: a typo must not surface hours later, in the first arm
        from judgerl.train.config import RecipeError
        from judgerl.train.policy_config import load_policy_recipe

        try:
            load_policy_recipe("policy-grpo", args.set)
        except RecipeError as e:
            ap.error(f"--set: {e}")
    args.ifeval = args.data / "ifeval" / "input_data.jsonl"
    if args.smoke:
        args.heldout, args.label_prompts, args.steps, args.eval_every, args.train_limit = 2, 2, 2, 1, 4
        args.policy_tokens, args.judge_tokens, args.sft_steps, args.judge_grpo_steps = 8, 16, 1, 1
        args.generations, args.reserve_min = 2, 0.0
    return args


#: Options that only choose what runs now (may change between invocations of one ``--out``).
STAGE_OPTIONS = ("arms", "budget_min", "reserve_min", "out")
# options that only shape stages not yet run: the rank of a gold judge that has not been trained (a judge trained
# before keeps its own; its stage result records ``lora_r``)
LATER_OPTIONS = ("gold_judge_lora",)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    # values as text, as args.json has always held them (a study begun before compares the same)
    check_options(args.out / "args.json", {k: str(v) for k, v in vars(args).items()}, selectors=STAGE_OPTIONS,
                  later=LATER_OPTIONS)
    print(run_study(args, Stages(args.out, args.budget_min)))


if __name__ == "__main__":
    main()
