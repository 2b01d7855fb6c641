"""TIR-Judge-Zero: iterative bootstrapping of a tool-using judge with no teacher.

TIR-Judge (Xu et al., 2025, Sec. 3.3) trains *Zero* from the base model alone:
RL -> rejection sampling -> SFT -> RL, repeated. Each round here is::

    rounds/round-r/rl/          GRPO (TIR rollouts) from init_r: round 0 starts from the base,
                                round r > 0 from round r-1's SFT model      -> rl/final
    rounds/round-r/selected.jsonl   k trajectories per training row sampled with rl/final through
                                the Judge (tool loop in the sandbox); kept per row: the correct one
                                that is shortest with the fewest tool calls (judgerl.train.distill)
    rounds/round-r/sft/         SFT from the ORIGINAL base on selected.jsonl (tool output masked)
    rounds/round-r/done.json    the round's record, written last

and after ``zero.rounds`` rounds a last RL phase (``rounds/round-R/rl``, R = ``zero.rounds``) gives
the final judge. Every phase writes a ``done.json`` marker; a killed run resumes (``--resume``) at
the first unfinished phase (a GRPO phase also from its own checkpoints). ``zero_rounds.jsonl``
holds one record per finished round (sampling statistics, SFT size, RL reward).

**Where the first RL round's learning signal comes from.** The 135M base never writes an answer
tag, so with plain rollouts every reward is 0 and GRPO learns nothing. The Zero recipe therefore
sets ``tools.force_answer``: the rollout Judge prefills ``</think><verdict>`` when a trajectory
ends without an answer and samples the verdict token; that prefill is masked out of the loss, the
verdict token is trained, and the reward scores a forced answer with Rf = 0 (R = 0.1 · Rc,
:func:`judgerl.train.rewards.forced_answer_reward`). The rejection-sampling step also forces answers
(``zero.force_answer``) and keeps the forced tag in the SFT target as ordinary text, so the SFT
model learns to write the tag itself; from round 1 on, correct judgments in the model's own format
earn the full reward. The base never writes a python block either (0 of 16 sampled trajectories on
arithmetic pairs), so the recipe's round 0 continues a prefill that opens one (``zero.prefill``;
9 of 16 then ran code, 7 of those 9 with errors): masked in RL, trained in the round's SFT as the
model's own text. No templated warm-up, no teacher and no label-dependent text are used.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Mapping

from judgerl.backends.base import SamplingParams
from judgerl.protocols.base import JudgeProtocol
from judgerl.tools import Executor
from judgerl.train.config import SAVED_CONFIG, RecipeError, TrainConfig
from judgerl.train.sections import ToolsConfig, ZeroConfig
from judgerl.train.setup import TrainSetup
from judgerl.train.stages import DONE, barrier, is_main_process, train_recipe

logger = logging.getLogger(__name__)

ROUNDS_LOG = "zero_rounds.jsonl"


def round_dir(output_dir: str | Path, r: int) -> Path:
    """``<output_dir>/rounds/round-<r>``."""
    return Path(output_dir) / "rounds" / f"round-{r}"


def _last_metrics(path: Path, phase: str) -> dict[str, Any]:
    from judgerl.train.callbacks import read_metrics

    recs = [r for r in read_metrics(path) if r.get("phase") == phase and "reward" in r]
    if not recs:
        return {}
    keys = ("step", "reward", "judge/forced_rate", "judge/tool_use_rate", "rewards/tir_reward/mean")
    return {k: recs[-1][k] for k in keys if k in recs[-1]}


def sample_round(policy_dir: str | Path, rows: list[dict[str, Any]], r: int, *, protocol: JudgeProtocol,
                 params: SamplingParams, samples: int, force_answer: bool, tools: ToolsConfig, seed: int,
                 sandbox: Executor | None = None) -> tuple[list[Any], dict[str, Any]]:
    """Rejection sampling of round ``r``: ``samples`` trajectories per row judged with ``protocol`` by the
    policy in ``policy_dir`` (sampling ``params``: ``zero.temperature``, the per-round token budget; answer
    forcing ``force_answer``; the tool loop of ``tools`` in ``sandbox``, default from ``tools``), the
    shortest correct one kept per row (:func:`judgerl.train.distill.select_examples`).

    Returns:
        ``(examples, stats)``.
    """
    from judgerl.backends.hf import HFBackend
    from judgerl.judge.core import Judge
    from judgerl.train.distill import judge_rows, select_examples

    if sandbox is None:
        from judgerl.tools import get_sandbox

        sandbox = get_sandbox(kind=tools.sandbox, timeout_s=float(tools.timeout_s), allow_unsafe=tools.allow_unsafe)
    backend = HFBackend(str(policy_dir), batch_size=32)
    judge = Judge(protocol, backend, params, sandbox=sandbox, max_tool_rounds=int(tools.max_rounds),
                  force_answer=bool(force_answer), seed=seed)
    judged = judge_rows({protocol.name: judge}, rows, int(samples), seed, tag=f"zero-round-{r}",
                        progress=lambda a, b: logger.info("zero round %d: %d/%d samples", r, a, b))
    return select_examples(rows, judged, {"round": r})


def sampling_params(zero: ZeroConfig, tools: ToolsConfig, grpo: Mapping[str, Any]) -> SamplingParams:
    """Zero's rejection-sampling parameters: ``zero.temperature``, and per round ``zero.max_new_tokens``
    (else ``tools.max_new_tokens``, else ``grpo.max_completion_length``, else 128) tokens."""
    per_round = zero.max_new_tokens or tools.max_new_tokens or int(grpo.get("max_completion_length", 128))
    return SamplingParams(max_new_tokens=int(per_round), temperature=float(zero.temperature))


def run_zero(config: TrainConfig) -> dict[str, Any]:
    """Run TIR-Judge-Zero (module docstring) in ``config.output_dir`` (``config``: a validated recipe,
    :func:`judgerl.train.run.load_run_recipe`). The recipe becomes the run's objects once
    (:class:`~judgerl.train.setup.TrainSetup`); every phase gets them with its own directory and steps.

    Returns:
        ``output_dir``, ``final_model`` (``rounds/round-R/rl/final``; None when a time limit
        stopped the run first), ``latest_model`` (the newest finished RL phase's model), ``rounds``
        (the finished rounds' records), ``stopped_early``, ``metrics`` (``zero_rounds.jsonl``).

    Raises:
        RecipeError: ``output_dir`` already holds Zero rounds and ``resume`` is false; a round
            whose sampling kept no trajectory.
    """
    from judgerl.train.datasets import with_prefill
    from judgerl.train.sft import read_examples, write_examples

    out = Path(config.output_dir)
    if (out / "rounds").is_dir() and any((out / "rounds").iterdir()) and not config.resume:
        raise RecipeError(f"{out} already holds TIR-Judge-Zero rounds: pass --resume to continue, or another --output-dir")
    barrier()  # every process checked before any writes
    deadline = time.time() + 60 * float(config.time_limit_min) if config.time_limit_min else None
    out.mkdir(parents=True, exist_ok=True)
    if is_main_process():
        (out / SAVED_CONFIG).write_text(json.dumps(config.to_dict(), indent=2))
    setup = TrainSetup.from_config(config)  # the recipe becomes objects here, once, for every phase
    base, rows = setup.base_model, list(setup.rows)
    z = config.zero
    rl_steps = z.rl_steps if z.rl_steps is not None else setup.grpo.get("max_steps")
    params = sampling_params(z, setup.tools, setup.grpo)
    sample_rows = rows if z.examples is None else rows[: int(z.examples)]
    init_path, init_adapter = base, None
    records: list[dict[str, Any]] = []
    result = {"output_dir": str(out), "final_model": None, "latest_model": None, "rounds": records,
              "stopped_early": False, "metrics": str(out / ROUNDS_LOG)}

    def out_of_time() -> bool:
        if deadline is not None and time.time() >= deadline:
            result["stopped_early"] = True
            return True
        return False

    for r in range(int(z.rounds) + 1):
        rd = round_dir(out, r)
        rl_dir = rd / "rl"
        prefill = z.prefill if r < int(z.prefill_rounds) else None
        if (rd / DONE).is_file():
            rec = json.loads((rd / DONE).read_text())
            records.append(rec)
            result["latest_model"] = str(rl_dir / "final")
            init_path, init_adapter = rec["next_init"], rec.get("next_adapter")
            continue
        if not (rl_dir / DONE).is_file():
            if out_of_time():
                return result
            res = train_recipe(setup, rl_dir, resume=True, init_path=init_path, init_adapter=init_adapter,
                               sft=False, grpo=True, max_steps=rl_steps, deadline=deadline, prefill=prefill)
            if res["stopped_early"]:
                result["stopped_early"] = True
                return result
            if is_main_process():
                (rl_dir / DONE).write_text(json.dumps({"global_step": res["global_step"]}) + "\n")
            barrier()
        result["latest_model"] = str(rl_dir / "final")
        if r == int(z.rounds):
            rec = {"round": r, "rl": _last_metrics(rl_dir / "metrics.jsonl", "grpo"), "final_model": str(rl_dir / "final"),
                   "next_init": init_path, "next_adapter": init_adapter}
        else:
            selected = rd / "selected.jsonl"
            if not selected.is_file():
                if out_of_time():
                    return result
                if is_main_process():
                    examples, stats = sample_round(
                        rl_dir / "final", with_prefill(sample_rows, prefill), r, protocol=setup.pairwise,
                        params=params, samples=int(z.samples), force_answer=bool(z.force_answer), tools=setup.tools,
                        seed=setup.seed)
                    if not examples:
                        raise RecipeError(f"zero round {r}: no sampled trajectory was correct ({stats}); "
                                          "raise zero.samples or the RL steps")
                    (rd / "sample_stats.json").write_text(json.dumps(stats, indent=2) + "\n")
                    write_examples(examples, selected)
                barrier()
            examples = read_examples(selected)
            if not (rd / "sft" / DONE).is_file():
                if out_of_time():
                    return result
                train_recipe(setup, rd, resume=True, init_path=base, examples=examples, sft=True, grpo=False)
            stats = json.loads((rd / "sample_stats.json").read_text()) if (rd / "sample_stats.json").is_file() else {}
            nxt = (base, str(rd / "sft" / "adapter")) if setup.lora.r else (str(rd / "sft"), None)
            rec = {"round": r, "rl": _last_metrics(rl_dir / "metrics.jsonl", "grpo"), "sampling": stats,
                   "sft_examples": len(examples), "sft_model": str(rd / "sft"),
                   "next_init": nxt[0], "next_adapter": nxt[1]}
        if is_main_process():
            (rd / DONE).write_text(json.dumps(rec, indent=2) + "\n")
            with (out / ROUNDS_LOG).open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
        barrier()
        records.append(rec)
        init_path, init_adapter = rec["next_init"], rec["next_adapter"]
    result["final_model"] = str(round_dir(out, int(z.rounds)) / "rl" / "final")
    return result
