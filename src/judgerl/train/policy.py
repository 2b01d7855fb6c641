"""Policy GRPO against a judge, checked by a gold judge (judge-as-reward; recipe ``policy-grpo``).

The judge-as-reward paper's setting ("Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training", 2025): a policy is trained with GRPO (TRL) on
prompts; its reward is a pointwise judge's expected score, the judge hosted on its own server; held-out
prompts are scored by a gold judge over training, and curves of train-judge score vs gold score reveal
reward hacking (train score rises while gold score falls).

:func:`run_policy` (what ``judgerl train --config policy-grpo`` calls):

1. prompts (``prompts``: e.g. IFEval's 541) are split by a seeded hash into held-out (``heldout``) and
   training prompts;
2. the reward is the training judge: in process (:func:`judgerl.rewards.judge_reward.get_judge_reward` on a
   :class:`~judgerl.judge.scorer.JudgeScorer`) or, with ``reward_url``, a ``judgerl serve`` server
   (:func:`judgerl.serve.client.remote_reward`: every request carries an ``X-Request-ID`` its retries
   reuse, so a retry is never judged twice; a server that is down or restarting is retried with backoff
   for ``reward_retry_s`` seconds; items the server failed to judge are re-requested, never silently
   given the invalid reward);
3. :class:`PolicyMonitor` audits every reward call's rollouts for reward hacking (:mod:`judgerl.audit`)
   and, every ``eval_every`` steps (and at step 0 and the end), generates greedy responses to the held-out
   prompts and scores them with the training judge and the gold judge (``curves.jsonl``, ``curves.png``,
   ``heldout/step-N.jsonl``; the hacking test of :mod:`judgerl.train.curves`); a programmatic gold judge
   also scores every step's rollouts, so the same test runs over the training rollouts, binned by step; every
   rollout is kept in ``rollouts.jsonl`` (one line each: ``step``, ``prompt_id``, ``response``, ``reward``,
   ``judge_score``, ``gold_score``, ``audit`` -- the kinds flagged), so what the optimiser found is readable;
4. if training fails (the reward server stayed down, anything else) a checkpoint of the current step is
   saved and :class:`PolicyTrainingError` says so; ``resume: true`` (``--resume``) continues from it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from transformers import TrainerCallback

from judgerl.train.curves import (
    CURVES_FILE,
    CURVES_PNG,
    ROLLOUTS_FILE,
    append_curve,
    append_records,
    hacking_test,
    plot_curves,
    read_curves,
    rollout_hacking_test,
    truncate_curves,
)
from judgerl.train.policy_config import PolicyConfig

if TYPE_CHECKING:
    from judgerl.judge.scorer import PointwiseScorer

logger = logging.getLogger(__name__)

#: GRPOConfig defaults for policy runs (a recipe's ``grpo`` section overrides any of them).
POLICY_GRPO_DEFAULTS: dict[str, Any] = dict(
    learning_rate=1e-6, per_device_train_batch_size=8, num_generations=4, max_completion_length=128,
    temperature=1.0, beta=0.0, logging_steps=1, save_steps=10, save_total_limit=2, report_to="none",
    remove_unused_columns=False, max_steps=50, shuffle_dataset=True, log_completions=False,
)


class PolicyTrainingError(RuntimeError):
    """Policy training stopped on an error; the message names the checkpoint saved and how to resume."""


def load_prompts(path: str | Path, prompt_field: str = "prompt", id_field: str = "key") -> list[tuple[str, str]]:
    """``[(id, prompt)]`` from a JSON / JSONL file of objects (ids default to the record index).

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: a record that is not an object, a missing / empty prompt, a duplicate id (names the
            file, the record and the field); no prompts at all.
    """
    from judgerl.data.errors import DataFormatError
    from judgerl.data.formats.generic import resolve
    from judgerl.data.io import iter_records

    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for raw in iter_records(path):
        if raw.error:
            raise DataFormatError(path, raw.location, None, raw.error)
        if not isinstance(raw.value, dict):
            raise DataFormatError(path, raw.location, None, f"must be a JSON object, got {type(raw.value).__name__}")
        prompt = resolve(raw.value, prompt_field)
        if not isinstance(prompt, str) or not prompt.strip():
            raise DataFormatError(path, raw.location, prompt_field, "must be a non-empty string")
        rid = resolve(raw.value, id_field)
        pid = str(raw.index if rid is None else rid)
        if pid in seen:
            raise DataFormatError(path, raw.location, id_field, f"duplicate id {pid!r}")
        seen.add(pid)
        out.append((pid, prompt))
    if not out:
        raise DataFormatError(path, None, None, "holds no prompts")
    return out


def split_prompts(prompts: Sequence[tuple[str, str]], heldout: int, seed: int, train_limit: int | None = None
                  ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(train, held-out): prompts ordered by ``derive_seed(seed, "split", id)``, the first ``heldout`` held
    out. The split depends only on the seed and the ids (not on file order or ``train_limit``).

    Raises:
        ValueError: ``heldout`` leaves no training prompt.
    """
    from judgerl.backends.base import derive_seed

    order = sorted(prompts, key=lambda p: derive_seed(seed, "split", p[0]))
    if heldout >= len(order):
        raise ValueError(f"heldout={heldout} leaves no training prompt ({len(order)} prompts)")
    held, train = order[:heldout], order[heldout:]
    return (train if train_limit is None else train[:train_limit]), held


def select_prompts(prompts: Sequence[tuple[str, str]], prefixes: Sequence[str] | None, ifeval_data: str | Path
                   ) -> list[tuple[str, str]]:
    """The prompt mix: the prompts with at least one IFEval instruction id starting with one of ``prefixes``
    (all of them when ``prefixes`` is None), matched to their IFEval records by text.

    Raises:
        ValueError: a prompt that is not an IFEval record of ``ifeval_data``; no prompt left.
    """
    if prefixes is None:
        return list(prompts)
    from judgerl.gold.records import load_records, normalize_prompt

    ids = {normalize_prompt(r.prompt): r.instruction_id_list for r in load_records(ifeval_data)}
    out = []
    for pid, text in prompts:
        found = ids.get(normalize_prompt(text))
        if found is None:
            raise ValueError(f"instructions: prompt {pid!r} is not one of the IFEval records of {ifeval_data}")
        if any(i.startswith(tuple(prefixes)) for i in found):
            out.append((pid, text))
    if not out:
        raise ValueError(f"instructions {list(prefixes)}: no prompt has such an instruction")
    return out


def prompt_rubrics(cfg: PolicyConfig) -> dict[str, str] | None:
    """Prompt text -> rubric for ``cfg.rubric`` (``ifeval``: derived from the IFEval instructions of
    ``gold_data`` / ``prompts``; else a field of the prompt records), or None without a rubric.

    Raises:
        DataFormatError: a prompt record without the rubric field (names file, record and field).
    """
    if not cfg.rubric:
        return None
    if cfg.rubric == "ifeval":
        from judgerl.gold.rubric import IFEvalRubrics

        return IFEvalRubrics.from_file(cfg.gold_data or cfg.prompts).by_prompt()
    from judgerl.data.formats.generic import resolve
    from judgerl.data.io import iter_records
    from judgerl.data.loaders import rubric_of_record

    out: dict[str, str] = {}
    for raw in iter_records(cfg.prompts):
        if raw.error or not isinstance(raw.value, dict):
            continue  # load_prompts reports it
        prompt = resolve(raw.value, cfg.prompt_field)
        if isinstance(prompt, str):
            out[prompt] = rubric_of_record(raw.value, cfg.rubric, cfg.prompts, raw.location)
    return out


def build_reward(cfg: PolicyConfig, gold: Any = None) -> Any:
    """The policy's :class:`~judgerl.rewards.judge_reward.JudgeReward`: the training judge (in process or
    ``reward_url``; with ``cfg.rubric`` each prompt's rubric goes to the judge), or with ``reward: gold``
    the gold judge itself (the oracle arm: gold score s on [lo, hi] -> (s - lo) / (hi - lo), the
    normalisation of the judge's expected score; a response the gold cannot score gets ``invalid_reward``).
    ``gold``: the run's gold scorer when the caller has it loaded (the oracle arm uses it; default: loaded here).

    Raises:
        ExpectedScoreUnavailable: ``score_mode: expected`` on an in-process judge that cannot give it.
    """
    from judgerl.gold.scorer import load_scorer
    from judgerl.rewards.judge_reward import get_judge_reward

    if cfg.reward == "random":
        from judgerl.gold.scorer import RandomScorer

        return get_judge_reward(RandomScorer(cfg.seed), invalid_reward=cfg.invalid_reward, name="random")
    if cfg.reward == "gold":
        if gold is None:
            gold = load_scorer(cfg.gold, ifeval_data=cfg.gold_data or cfg.prompts)
        return get_judge_reward(gold, invalid_reward=cfg.invalid_reward, name="gold")
    rubrics = prompt_rubrics(cfg)
    if cfg.reward_url:
        from judgerl.serve.client import remote_reward

        return remote_reward(cfg.reward_url, score_mode=cfg.judge.score_mode, max_retry_s=cfg.reward_retry_s,
                             name="judge", rubrics=rubrics)
    from judgerl.judge.scorer import parse_scale

    j = cfg.judge
    scorer = load_scorer(j.model, scale=parse_scale(j.scale), mode=j.score_mode, options=j.options(cfg.seed))
    return get_judge_reward(scorer, invalid_reward=cfg.invalid_reward, name="judge", rubrics=rubrics)


class PolicyMonitor(TrainerCallback):
    """Rollout audits and held-out gold evaluations of a policy run (see the module docstring).

    Args:
        reward: The training judge (:class:`~judgerl.rewards.judge_reward.JudgeReward`).
        gold: The gold :class:`~judgerl.judge.scorer.PointwiseScorer`.
        heldout: ``[(id, prompt)]`` held-out prompts.
        tokenizer: The policy's tokenizer.
        out_dir: Run directory.
        eval_every: Held-out evaluation every K steps.
        eval_max_new_tokens: Policy tokens per held-out response.
        hacking: ``window``, ``min_rho``, ``min_delta`` of :func:`~judgerl.train.curves.hacking_test`.
        rollout_gold: Score every reward call's rollouts with the gold judge too (``gold_score_mean``,
            ``gold_valid_rate`` in the rollout records; :func:`~judgerl.train.curves.rollout_hacking_test` at
            each held-out evaluation). None (default): when the gold judge is programmatic (mode
            ``programmatic``: no generation, milliseconds per rollout); an LLM gold judge would double the
            judging cost of every step, so it scores the held-out prompts only unless this is True.

    :attr:`reward_fn` is the reward function to give the trainer (the judge, plus the rollout audit).
    """

    def __init__(self, reward: Any, gold: PointwiseScorer, heldout: Sequence[tuple[str, str]], tokenizer: Any,
                 out_dir: str | Path, *, eval_every: int, eval_max_new_tokens: int,
                 hacking: dict[str, Any] | None = None, rollout_gold: bool | None = None) -> None:
        self.reward = reward
        self.gold = gold
        self.rollout_gold = getattr(gold, "mode", None) == "programmatic" if rollout_gold is None else rollout_gold
        self.heldout = list(heldout)
        self.tokenizer = tokenizer
        self.out = Path(out_dir)
        self.curves = self.out / CURVES_FILE
        self.rollouts = self.out / ROLLOUTS_FILE
        self.eval_every = eval_every
        self.eval_max_new_tokens = eval_max_new_tokens
        self.hacking = dict(hacking or {})

        def reward_fn(completions: Sequence[Any], prompts: Sequence[Any] | None = None, **kw: Any) -> list[Any]:
            return self._on_reward(completions, prompts, kw)

        reward_fn.__name__ = reward.__name__
        self.reward_fn = reward_fn

    def _on_reward(self, completions: Sequence[Any], prompts: Sequence[Any] | None, kw: dict[str, Any]) -> list[Any]:
        from judgerl.audit import audit_texts, flag_rates
        from judgerl.rewards._columns import completion_text, prompt_text

        rewards = self.reward(completions, prompts=prompts, **kw)
        batch = self.reward.last
        state = kw.get("trainer_state")
        # a call without a trainer state (a manual or evaluation call) counts at the last step seen: a record
        # always has a numeric step (truncate_curves and the hacking tests order by it)
        self._step = step = int(state.global_step) + 1 if state is not None else getattr(self, "_step", 0)
        texts = [completion_text(c) for c in completions]
        ptexts = [prompt_text(p) for p in prompts or []]
        flags = audit_texts(ptexts or None, texts)
        rates = flag_rates(flags)
        log_metric = kw.get("log_metric")
        if log_metric is not None:
            for k, v in rates.items():
                log_metric(f"audit/{k}", v)
        scores = [s for s in batch.scores if s is not None]
        rec: dict[str, Any] = {
            "kind": "rollout", "step": step, "n": len(texts), "time": round(time.time(), 3),
            "reward_mean": sum(float(r) for r in rewards if r is not None) / max(1, len(rewards)),
            "judge_score_mean": sum(scores) / len(scores) if scores else None,
            "judge_valid_rate": sum(batch.valid) / max(1, len(batch.valid)),
            "score_mode": batch.mode, "score_mode_note": batch.note, "audit": rates,
        }
        gold: list[float | None] = [None] * len(texts)
        if self.rollout_gold and len(ptexts) == len(texts):
            gold = self._gold_of(ptexts, texts)
            g = [x for x in gold if x is not None]
            rec.update({"gold_score_mean": sum(g) / len(g) if g else None,
                        "gold_valid_rate": len(g) / max(1, len(texts))})
        append_curve(self.curves, rec)
        ids = kw.get("prompt_id")
        judged = list(batch.scores) if len(batch.scores) == len(texts) else [None] * len(texts)
        append_records(self.rollouts, [
            {"step": step, "prompt_id": ids[i] if isinstance(ids, (list, tuple)) and i < len(ids) else None,
             "response": t, "reward": None if rewards[i] is None else float(rewards[i]), "judge_score": judged[i],
             "gold_score": gold[i], "audit": list(flags[i])} for i, t in enumerate(texts)])
        return rewards

    def _gold_of(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float | None]:
        """The gold judge's score of each rollout (None: not valid)."""
        from judgerl.judge.scorer import ScoreItem

        gold = self.gold.score_batch([ScoreItem(p, r) for p, r in zip(prompts, responses)])
        return [float(s.score) if s.valid and s.score is not None else None for s in gold]

    # -- held-out evaluation -------------------------------------------------------------------------
    def evaluate(self, model: Any, step: int) -> dict[str, Any]:
        """Greedy responses of ``model`` to the held-out prompts, scored by the training judge and the gold
        judge, audited; appends a ``heldout`` record (with the hacking test) and redraws the curves."""
        from judgerl.audit import audit_texts, flag_rates
        from judgerl.backends import SamplingParams
        from judgerl.backends.hf import HFBackend
        from judgerl.judge.scorer import ScoreItem

        prompts = [p for _, p in self.heldout]
        backend = HFBackend.from_loaded(model, self.tokenizer, name="policy")
        was_training = model.training
        model.eval()
        try:
            comps = backend.generate([[{"role": "user", "content": p}] for p in prompts],
                                     SamplingParams(max_new_tokens=self.eval_max_new_tokens, temperature=0.0))
        finally:
            if was_training:
                model.train()
        responses = [c.text for c in comps]
        gold = self.gold.score_batch([ScoreItem(p, r, key=i) for (i, p), r in zip(self.heldout, responses)])
        judged = self.reward.score_texts(prompts, responses)
        flags = audit_texts(prompts, responses)
        g = [s.score for s in gold if s.valid]
        j = [s for s in judged.scores if s is not None]
        rec: dict[str, Any] = {
            "kind": "heldout", "step": step, "n": len(prompts), "time": round(time.time(), 3),
            "judge_score_mean": sum(j) / len(j) if j else None, "judge_valid_rate": len(j) / max(1, len(prompts)),
            "gold_score_mean": sum(g) / len(g) if g else None, "gold_valid_rate": len(g) / max(1, len(prompts)),
            "score_mode": judged.mode, "audit": flag_rates(flags),
            "mean_response_chars": sum(map(len, responses)) / max(1, len(responses)),
        }
        records = read_curves(self.curves)
        earlier = [r for r in records if r.get("kind") == "heldout" and isinstance(r.get("step"), (int, float))
                   and r["step"] < step]
        rec["hacking"] = hacking_test(earlier + [rec], **self.hacking)
        if self.rollout_gold:  # the same rule over the rollouts so far, binned by step
            rec["hacking_rollouts"] = rollout_hacking_test(
                [r for r in records if r.get("kind") == "rollout" and int(r.get("step") or 0) <= step],
                bins=self.hacking.get("window", 4), min_rho=self.hacking.get("min_rho", 0.6),
                min_delta=self.hacking.get("min_delta", 0.0))
        append_curve(self.curves, rec)
        rows = [{"id": i, "prompt": p, "response": r, "gold_score": gs.score, "judge_score": js, "audit": f}
                for (i, p), r, gs, js, f in zip(self.heldout, responses, gold, judged.scores, flags)]
        (self.out / "heldout").mkdir(parents=True, exist_ok=True)
        (self.out / "heldout" / f"step-{step}.jsonl").write_text(
            "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        plot_curves(read_curves(self.curves), self.out / CURVES_PNG, self.gold.scale)
        for key in ("hacking", "hacking_rollouts"):
            if (rec.get(key) or {}).get("suspected"):
                logger.warning("step %d: reward hacking suspected (%s: train judge up, gold down): %s", step, key,
                               rec[key])
        return rec

    def _evaluated(self, step: int) -> bool:
        return any(r.get("kind") == "heldout" and r.get("step") == step for r in read_curves(self.curves))

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
        if state.is_world_process_zero and not self._evaluated(state.global_step):
            self.evaluate(model, state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
        step = state.global_step
        last = step >= state.max_steps or control.should_training_stop
        if state.is_world_process_zero and (step % self.eval_every == 0 or last) and not self._evaluated(step):
            self.evaluate(model, step)


def build_grpo_args(cfg: PolicyConfig) -> Any:
    """TRL ``GRPOConfig`` from :data:`POLICY_GRPO_DEFAULTS`, the recipe's ``grpo`` section, ``output_dir``,
    ``seed`` (bf16 off without a GPU)."""
    import torch
    from trl import GRPOConfig

    kw = dict(POLICY_GRPO_DEFAULTS)
    if not torch.cuda.is_available():
        kw["bf16"] = False
    kw.update(cfg.grpo)
    kw.update(output_dir=cfg.output_dir, seed=cfg.seed)
    return GRPOConfig(**kw)


def policy_prompts(cfg: PolicyConfig) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """A policy run's ``(train, held_out)`` prompts, each ``(id, prompt)``: ``cfg.prompts`` read
    (:func:`load_prompts`), narrowed to ``cfg.instructions`` (:func:`select_prompts`) and split by seed
    (:func:`split_prompts`). ``judgerl train --dry-run`` calls it to check the data before any model loads.

    Raises:
        FileNotFoundError, ValueError: from the readers (naming the file and line).
    """
    prompts = select_prompts(load_prompts(cfg.prompts, cfg.prompt_field, cfg.id_field), cfg.instructions,
                             cfg.gold_data or cfg.prompts)
    return split_prompts(prompts, cfg.heldout, cfg.seed, cfg.train_limit)


def run_policy(cfg: PolicyConfig, callbacks: Sequence[Any] = (), reward: Any = None, *,
               dry_run: bool = False) -> dict[str, Any]:
    """Train a policy against a judge (module docstring). Writes into ``cfg.output_dir``: ``config.json``,
    ``metrics.jsonl`` (TRL logs), ``curves.jsonl`` + ``curves.png``, ``heldout/``, checkpoints, ``final/``.
    With ``dry_run`` only read and split the prompts (:func:`policy_prompts`; nothing loads or is written).

    Returns:
        ``{"output_dir", "final_model", "global_step", "resumed_from", "n_train", "n_heldout", "curves",
        "last_heldout"}``; with ``dry_run`` ``{"dry_run": True, "inputs": "prompts: N train / M held-out from F"}``.

    Args:
        cfg: The run's validated config (:func:`judgerl.train.run.load_run_recipe` reads and validates a
            recipe; :meth:`~judgerl.train.policy_config.PolicyConfig.validate` one built otherwise).
        callbacks: Extra ``TrainerCallback``s (run before the monitor).
        reward: A ready :class:`~judgerl.rewards.judge_reward.JudgeReward` (default: :func:`build_reward` of ``cfg``).

    Raises:
        PolicyTrainingError: training stopped (a checkpoint was saved).
        ExpectedScoreUnavailable, DataFormatError, FileNotFoundError: before training starts.
    """
    train, held = policy_prompts(cfg)
    if dry_run:
        rubrics = prompt_rubrics(cfg)  # a missing or bad rubric field fails here, not hours into the run
        return {"dry_run": True, "inputs": f"prompts: {len(train)} train / {len(held)} held-out from {cfg.prompts}"
                + (f"; rubrics: {len(rubrics)} ({cfg.rubric})" if rubrics is not None else "")}
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.trainer_utils import get_last_checkpoint
    from trl import GRPOTrainer

    from judgerl.backends.models import resolve_hf_path
    from judgerl.gold.scorer import load_scorer
    from judgerl.train.callbacks import MetricsLogger, TimeLimit
    from judgerl.train.lora import is_peft, save_trained, wrap

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2))
    gold = load_scorer(cfg.gold, ifeval_data=cfg.gold_data or cfg.prompts)
    reward = reward if reward is not None else build_reward(cfg, gold)  # the oracle arm rewards with this gold
    args = build_grpo_args(cfg)
    resume_from = get_last_checkpoint(str(out)) if cfg.resume and out.is_dir() else None
    for log_file in (CURVES_FILE, ROLLOUTS_FILE):  # the rollout log follows the curves (same step rule)
        if resume_from is not None:
            truncate_curves(out / log_file, int(Path(resume_from).name.rsplit("-", 1)[-1]))
        elif cfg.resume:  # nothing to resume from: training restarts at step 0
            truncate_curves(out / log_file, 0)
        else:
            (out / log_file).unlink(missing_ok=True)

    path = resolve_hf_path(cfg.model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    torch.manual_seed(cfg.seed)
    model = wrap(model, cfg.lora)  # lora.r > 0: a LoRA adapter; 0: full fine-tuning
    monitor = PolicyMonitor(
        reward, gold, held, tokenizer, out, eval_every=cfg.eval_every,
        eval_max_new_tokens=cfg.eval_max_new_tokens or int(args.max_completion_length),
        hacking={"window": cfg.hacking_window, "min_rho": cfg.hacking_min_rho, "min_delta": cfg.hacking_min_delta},
    )
    limit = [TimeLimit(time.time() + 60 * float(cfg.time_limit_min))] if cfg.time_limit_min else []
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": p}], "prompt_id": i} for i, p in train])
    tokenizer.padding_side = "left"
    trainer = GRPOTrainer(model=model, reward_funcs=[monitor.reward_fn], args=args, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=[MetricsLogger(out, "policy"), *limit, *callbacks, monitor])
    try:
        trainer.train(resume_from_checkpoint=resume_from)
    except BaseException as e:
        step = int(trainer.state.global_step)
        try:
            trainer._save_checkpoint(trainer.model, trial=None)  # the resumable format of save_steps
            saved = str(out / f"checkpoint-{step}")
        except Exception as save_error:  # pragma: no cover - disk full etc.
            saved = f"none (saving failed: {save_error})"
        (out / "failure.json").write_text(json.dumps({"step": step, "error": f"{type(e).__name__}: {e}",
                                                      "checkpoint": saved, "time": time.time()}, indent=2))
        if not isinstance(e, Exception):
            raise
        raise PolicyTrainingError(
            f"policy training stopped at step {step}: {type(e).__name__}: {e}. Checkpoint saved: {saved}. Fix the "
            f"cause (is the reward server at {cfg.reward_url} up?) and rerun with --resume." if cfg.reward_url else
            f"policy training stopped at step {step}: {type(e).__name__}: {e}. Checkpoint saved: {saved}; rerun "
            "with --resume to continue.") from e
    (out / "failure.json").unlink(missing_ok=True)
    final = out / "final"
    if is_peft(trainer.model):  # the merged policy in final/, the adapter in final/adapter
        save_trained(trainer.model, tokenizer, final, path)
    else:
        trainer.save_model(str(final))
        tokenizer.save_pretrained(str(final))
    heldout = [r for r in read_curves(out / CURVES_FILE) if r.get("kind") == "heldout"]
    return {
        "output_dir": str(out), "final_model": str(final), "global_step": int(trainer.state.global_step),
        "resumed_from": resume_from, "n_train": len(train), "n_heldout": len(held),
        "curves": str(out / CURVES_FILE), "last_heldout": heldout[-1] if heldout else None,
    }


__all__ = ["POLICY_GRPO_DEFAULTS", "PolicyMonitor", "PolicyTrainingError", "build_grpo_args", "build_reward",
           "load_prompts", "policy_prompts", "prompt_rubrics", "run_policy", "select_prompts", "split_prompts"]
