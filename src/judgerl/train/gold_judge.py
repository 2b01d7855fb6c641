"""Judges trained against a gold judge's labels (judge-as-reward study, "Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training", 2025).

"Reasoning judge: SFT on the gold judge's reasoning + score, then GRPO with reward r = -1 if the output
is invalid, else (M_max - (ŝ - s)²) / M_max" (:mod:`judgerl.rewards.regression`, recipe
``score-regression``). From a label directory of ``judgerl label`` (the gold judge's scores and
reasoning):

1. :func:`gold_sft_examples`: one SFT target per valid label -- the PoS prompt of (instruction, response)
   and, as the judgment, the gold reasoning inside ``<think>`` followed by the gold score
   (``protocol.render_judgment``); when the gold judge is itself an LLM judge whose text already parses to
   its score, that text is the target as written;
2. :func:`gold_pairs`: the labels as preference pairs with ``chosen_score`` / ``rejected_score`` (two
   labelled responses to the same prompt; the higher gold score is ``chosen``; equal scores are kept --
   ``meta.equal_gold_scores`` -- because the regression reward reads each response's own gold score), the
   input of the ``score-regression`` recipe;
3. :func:`train_gold_judge`: SFT (TRL, :func:`judgerl.train.sft.run_sft`) from the base model, then GRPO
   with ``judgerl train --config score-regression`` on those pairs starting from the SFT model. Each stage
   is skipped when its output exists (resumable); GRPO resumes from its newest checkpoint.

Agreement with the gold on held-out records: ``judgerl label`` with each judge, then ``judgerl agree``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from judgerl.types import Decision, PreferencePair


def gold_sft_examples(labels: Mapping[str, Mapping[str, Any]], protocol: Any, ids: Sequence[str] | None = None,
                      *, reasoning: bool = True) -> tuple[list[Any], dict[str, int]]:
    """SFT targets from gold labels (module docstring, step 1). A label's ``rubric`` (``judgerl label
    --rubric``) goes into its prompt, so a rubric-conditioned judge is trained on rubric prompts.

    Args:
        labels: Label records by id (:func:`judgerl.gold.label.read_labels`).
        protocol: The PoS protocol of the judge being trained (its scale must hold the gold scores).
        ids: Use only these ids (e.g. the training split); default all, in id order.
        reasoning: False: the target is the score tag alone (``protocol.render_answer``), the
            non-reasoning judge of the judge-as-reward study.

    Returns:
        ``(examples, counts)``: :class:`judgerl.train.sft.SFTExample` list and ``{"used", "invalid_gold",
        "off_scale", "as_written"}``.

    Raises:
        ValueError: a label whose rubric is not a string (names the label id).
    """
    from judgerl.train.sft import SFTExample
    from judgerl.text.untrusted import escape_fences, neutralise_tags

    counts = {"used": 0, "invalid_gold": 0, "off_scale": 0, "as_written": 0}
    out = []
    for rid in (ids if ids is not None else sorted(labels)):
        lab = labels[rid]
        if not lab.get("valid") or lab.get("score") is None:
            counts["invalid_gold"] += 1
            continue
        score = float(lab["score"])
        lo, hi = protocol.score_scale
        if not lo <= score <= hi:
            counts["off_scale"] += 1
            continue
        text = str(lab.get("reasoning") or "")
        written = protocol.parse(text, 1) if text and reasoning else None
        if not reasoning:
            target = protocol.render_answer(Decision(valid=True, scores=(score,)))
        elif written is not None and written.valid and written.scores and float(written.scores[0]) == score:
            target = text
            counts["as_written"] += 1
        else:
            thought = escape_fences(neutralise_tags(text.strip())) or "The gold judge gave this score."
            target = protocol.render_judgment(thought, Decision(valid=True, scores=(score,)))
        parsed = protocol.parse(target, 1)
        if not (parsed.valid and parsed.scores and float(parsed.scores[0]) == score):  # pragma: no cover - guard
            raise ValueError(f"label {rid!r}: SFT target does not parse back to score {score:g}")
        rubric = lab.get("rubric")
        if rubric is not None and not isinstance(rubric, str):
            raise ValueError(f"label {rid!r}: rubric must be a str, got {type(rubric).__name__}")
        messages = tuple(protocol.build(str(lab["prompt"]), [str(lab["response"])], rubric=rubric)
                         if rubric else protocol.build(str(lab["prompt"]), [str(lab["response"])]))
        out.append(SFTExample(messages, (("model", target),), key=str(rid), meta={"gold_score": score}))
        counts["used"] += 1
    return out, counts


def gold_pairs(labels: Mapping[str, Mapping[str, Any]], ids: Sequence[str] | None = None
               ) -> tuple[list[PreferencePair], int]:
    """Preference pairs with gold scores from labels (module docstring, step 2).

    Valid labels are grouped by prompt (in id order) and paired two by two. Returns ``(pairs, unpaired)``:
    ``unpaired`` counts valid labels left alone (an odd count for their prompt).
    """
    by_prompt: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for rid in (ids if ids is not None else sorted(labels)):
        lab = labels[rid]
        if lab.get("valid") and lab.get("score") is not None:
            by_prompt[str(lab["prompt"])].append(lab)
    pairs, unpaired = [], 0
    for prompt, labs in by_prompt.items():
        for a, b in zip(labs[0::2], labs[1::2]):
            hi, lo = (a, b) if float(a["score"]) >= float(b["score"]) else (b, a)
            pairs.append(PreferencePair(
                id=f"{hi['id']}|{lo['id']}", prompt=prompt, chosen=str(hi["response"]), rejected=str(lo["response"]),
                source="gold-labels", chosen_score=float(hi["score"]), rejected_score=float(lo["score"]),
                meta={"equal_gold_scores": float(hi["score"]) == float(lo["score"])},
                rubric=hi.get("rubric") or lo.get("rubric") or None,  # one prompt: one rubric
            ))
        unpaired += len(labs) % 2
    return pairs, unpaired


def train_gold_judge(labels_dir: str | Path, out_dir: str | Path, *, base_model: str = "smollm2-135m",
                     scale: tuple[float, float] = (0.0, 9.0), ids: Sequence[str] | None = None,
                     sft_steps: int = 60, sft_learning_rate: float = 5e-5, sft_batch_size: int = 8,
                     sft_max_length: int = 1024, grpo_steps: int = 30, grpo_overrides: Sequence[str] = (),
                     seed: int = 0, reasoning: bool = True, lora_r: int = 0) -> dict[str, Any]:
    """SFT on gold reasoning + score, then score-regression GRPO (module docstring, step 3).

    Args:
        labels_dir: Gold labels (``judgerl label`` output).
        out_dir: Writes ``sft_examples.jsonl``, ``sft/`` (the SFT judge + ``done.json``), ``gold_pairs.jsonl``
            and ``grpo/`` (a ``judgerl train`` run; the judge in ``grpo/final``).
        base_model: The judge's base model.
        scale: The PoS scale (the gold's: 0-9).
        ids: Training label ids (keep held-out records out); default all.
        sft_steps, sft_learning_rate, sft_batch_size, sft_max_length: The SFT stage (0 steps: skipped).
        grpo_steps: Score-regression GRPO steps (0: skipped).
        grpo_overrides: Extra ``--set`` overrides of the ``score-regression`` recipe.
        seed: Seed of both stages.
        reasoning: False: SFT targets are the score alone (the non-reasoning judge; see
            :func:`gold_sft_examples`).
        lora_r: 0: full fine-tuning (SFT, then GRPO from the SFT model). > 0: one LoRA adapter of this rank
            (alpha 2r, every block, as the tool judges) trained by both stages in one
            :func:`judgerl.train.stages.train_recipe` run: ``sft/`` and ``final/`` hold the merged models and
            their ``adapter/`` (relative to ``base_model``), a few MB a snapshot can keep
            (``bench/run_snapshot.py``). The GRPO time limit (``time_limit_min`` in ``grpo_overrides``)
            bounds the GRPO stage only.

    Returns:
        ``{"sft_model", "grpo_model", "sft_counts", "n_pairs", "unpaired"}`` (paths None for skipped stages).

    Raises:
        ValueError: no usable label. RecipeError: bad overrides.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from judgerl.backends.models import resolve_hf_path
    from judgerl.data.io import write_pairs_jsonl
    from judgerl.gold.label import read_labels
    from judgerl.protocols import get_protocol
    from judgerl.train.sft import run_sft, write_examples

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels = read_labels(labels_dir)
    proto = get_protocol("pos", min_score=scale[0], max_score=scale[1])
    examples, counts = gold_sft_examples(labels, proto, ids, reasoning=reasoning)
    if not examples:
        raise ValueError(f"{labels_dir}: no valid gold label to train on ({counts})")
    write_examples(examples, out / "sft_examples.jsonl")
    result: dict[str, Any] = {"sft_model": None, "grpo_model": None, "sft_counts": counts}
    if lora_r:
        return _train_lora(labels, ids, examples, out, result, base_model=base_model, scale=scale, lora_r=lora_r,
                           sft=(sft_steps, sft_learning_rate, sft_batch_size, sft_max_length), grpo_steps=grpo_steps,
                           grpo_overrides=grpo_overrides, seed=seed)
    model_for_grpo = base_model
    sft_dir = out / "sft"
    if sft_steps > 0:
        if not (sft_dir / "done.json").is_file():
            path = resolve_hf_path(base_model)
            tokenizer = AutoTokenizer.from_pretrained(path)
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
            torch.manual_seed(seed)
            kw = dict(max_steps=sft_steps, learning_rate=sft_learning_rate, per_device_train_batch_size=sft_batch_size,
                      seed=seed, max_length=sft_max_length, gradient_checkpointing=False)  # 135M fits: no recompute
            model = run_sft(model, tokenizer, examples, out / "sft-logs", kw)
            model.save_pretrained(sft_dir)
            tokenizer.save_pretrained(sft_dir)
            (sft_dir / "done.json").write_text(json.dumps({"examples": len(examples), "steps": sft_steps}) + "\n")
        result["sft_model"] = str(sft_dir)
        model_for_grpo = str(sft_dir)
    pairs, unpaired = gold_pairs(labels, ids)
    result.update(n_pairs=len(pairs), unpaired=unpaired)
    if grpo_steps > 0:
        if not pairs:
            raise ValueError(f"{labels_dir}: no pair of labelled responses to one prompt for GRPO")
        write_pairs_jsonl(pairs, out / "gold_pairs.jsonl")
        grpo_dir = out / "grpo"
        if not (grpo_dir / "final" / "config.json").is_file():
            from judgerl.train.config import load_recipe
            from judgerl.train.run import run_training

            overrides = [f"model={model_for_grpo}", f"data.path={out / 'gold_pairs.jsonl'}", f"output_dir={grpo_dir}",
                         "warmup.steps=0", "data.limit=null", f"grpo.max_steps={grpo_steps}", f"seed={seed}",
                         f"score_min={scale[0]:g}", f"score_max={scale[1]:g}", "resume=true", *grpo_overrides]
            cfg = load_recipe("score-regression", overrides)
            cfg.validate(where="score-regression (gold judge)")
            run_training(cfg)
        result["grpo_model"] = str(grpo_dir / "final")
    return result


def _train_lora(labels: Mapping[str, Mapping[str, Any]], ids: Sequence[str] | None, examples: Sequence[Any], out: Path,
                result: dict[str, Any], *, base_model: str, scale: tuple[float, float], lora_r: int,
                sft: tuple[int, float, int, int], grpo_steps: int, grpo_overrides: Sequence[str], seed: int
                ) -> dict[str, Any]:
    """:func:`train_gold_judge` with one LoRA adapter through both stages (its ``lora_r`` argument)."""
    import time

    from judgerl.data.io import write_pairs_jsonl
    from judgerl.train.config import load_recipe
    from judgerl.train.setup import TrainSetup
    from judgerl.train.stages import train_recipe

    pairs, unpaired = gold_pairs(labels, ids)
    result.update(n_pairs=len(pairs), unpaired=unpaired)
    if grpo_steps > 0 and not pairs:
        raise ValueError(f"{out}: no pair of labelled responses to one prompt for GRPO")
    write_pairs_jsonl(pairs, out / "gold_pairs.jsonl")  # the recipe reads its pairs even when only SFT runs
    steps, lr, batch, max_len = sft
    cfg = load_recipe("score-regression", [
        f"model={base_model}", f"data.path={out / 'gold_pairs.jsonl'}", f"output_dir={out}", "data.limit=null",
        f"warmup.steps={steps}", f"warmup.learning_rate={lr}", f"warmup.batch_size={batch}", f"lora.r={lora_r}",
        f"lora.alpha={2 * lora_r}", f"sft.max_length={max_len}", "sft.gradient_checkpointing=false",
        f"grpo.max_steps={max(1, grpo_steps)}", f"seed={seed}", f"score_min={scale[0]:g}", f"score_max={scale[1]:g}",
        *grpo_overrides])
    cfg.validate(where="score-regression (gold judge, LoRA)")
    setup = TrainSetup.from_config(cfg)
    if steps > 0:
        done = train_recipe(setup, out, resume=True, examples=examples, sft=True, grpo=False)
        result["sft_model"] = done["sft_model"]
    if grpo_steps > 0:
        if not (out / "final" / "config.json").is_file():
            limit = float(cfg.time_limit_min or 0)
            train_recipe(setup, out, resume=True, examples=examples, sft=steps > 0, grpo=True,
                         max_steps=grpo_steps, deadline=time.time() + 60 * limit if limit else None)
        result["grpo_model"] = str(out / "final")
    return result


__all__ = ["gold_pairs", "gold_sft_examples", "train_gold_judge"]
