"""Teacher trajectories and rejection sampling: the data of distillation and of TIR-Judge-Zero.

* :func:`judge_rows` judges GRPO rows (``judgerl.train.datasets``) ``samples`` times each with any
  :class:`~judgerl.judge.Judge` -- a teacher model, the programmatic teacher
  (:mod:`judgerl.train.teachers`), or the policy being bootstrapped -- through the one judging path
  (tool loop in the sandbox, answer forcing, parsing).
* :func:`select_examples` is the rejection sampling: a judgment is kept only if its decision is
  correct, and per row the shortest correct one with the fewest tool calls is kept (TIR-Judge,
  Xu et al., 2025, Sec. 3.3: "the correct trajectory that is shortest with the fewest tool calls").
  Pairwise rows: verdict == the row's gold ``label``. Pointwise rows (J1 PoS from pairwise
  supervision, no pointwise labels): sample k of the chosen row and sample k of the rejected row are
  kept together iff both are valid and score(chosen) > score(rejected).
* :func:`distill_examples` is the cold start of a recipe with ``distill.teacher`` set
  (TIR-Judge-Distill; the reasoning-judge SFT of the judge-as-reward study).

Seeds: sample ``k`` of row ``r`` uses ``derive_seed(seed, tag, row_key(r), k)``, so the
trajectories do not depend on batch sizes.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any, Callable, Mapping, Sequence

from judgerl.backends.base import SamplingParams, derive_seed
from judgerl.protocols.base import JudgeProtocol
from judgerl.rewards.tir import rc_component
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.tools import Executor
from judgerl.train.config import RecipeError
from judgerl.train.sections import DistillConfig, ToolsConfig
from judgerl.train.sft import SFTExample, example_from_judgment, row_key
from judgerl.types import PreferencePair

logger = logging.getLogger(__name__)

PROGRAMMATIC = "programmatic"


def judge_rows(
    judges: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    samples: int,
    seed: int,
    tag: str = "distill",
    chunk: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> list[list[Any]]:
    """Judge every row ``samples`` times.

    Args:
        judges: A :class:`~judgerl.judge.Judge` per protocol name (the rows' ``protocol`` column).
        rows: GRPO rows (``prompt`` messages, ``protocol``, ``pair_id``, ``order``/``role``).
        samples: Judgments per row (>= 1).
        seed: Base of the per-sample seeds (ignored by greedy judges).
        tag: Seed namespace (``distill``, ``zero-round-3``).
        chunk: Requests per ``judge.run`` call (changes speed, never results).
        progress: Called ``f(done, total)`` after each chunk.

    Returns:
        ``judged[i][k]``: the :class:`~judgerl.judge.Judgment` of sample k of row i.

    Raises:
        KeyError: a row's protocol has no judge. ValueError: ``samples`` < 1.
    """
    from judgerl.judge.core import JudgeRequest

    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    work = [(i, k) for i in range(len(rows)) for k in range(samples)]
    out: list[list[Any]] = [[None] * samples for _ in rows]
    by_proto: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for i, k in work:
        if rows[i]["protocol"] not in judges:
            raise KeyError(f"row {row_key(rows[i])!r}: no judge for protocol {rows[i]['protocol']!r}")
        by_proto[rows[i]["protocol"]].append((i, k))
    done = 0
    for name, items in by_proto.items():
        judge = judges[name]
        for start in range(0, len(items), chunk):
            part = items[start : start + chunk]
            reqs = []
            for i, k in part:
                s = None if judge.params.temperature == 0 else derive_seed(seed, tag, row_key(rows[i]), k)
                reqs.append(JudgeRequest(rows[i]["prompt"], 1 if rows[i]["role"] is not None else 2, s,
                                         tuple(rows[i].get("responses") or ()), rows[i].get("question")))
            for (i, k), j in zip(part, judge.run(reqs)):
                out[i][k] = j
            done += len(part)
            if progress is not None:
                progress(done, len(work))
    return out


def _cost(j: Any) -> tuple[int, int]:
    calls = j.trajectory.tool_calls if j.trajectory is not None else 0
    return (int(j.completion_tokens), int(calls))


def select_examples(rows: Sequence[dict[str, Any]], judged: Sequence[Sequence[Any]],
                    meta: dict[str, Any] | None = None, *, score_tolerance: float = 0.0,
                    ) -> tuple[list[SFTExample], dict[str, Any]]:
    """Rejection sampling (see the module docstring): the SFT examples kept and statistics.

    Correct means: pairwise, the gold verdict; pointwise rows with a ``gold_score`` (tasks ``tir-pointwise``,
    ``regression``), a score within ``score_tolerance`` of it -- the TIR reward's Rc
    (:func:`judgerl.rewards.tir.rc_component`), so equal gold scores of a pair's two responses are no
    obstacle; other pointwise rows, the (chosen, rejected) sample pair ordered right.

    Returns:
        ``(examples, stats)``; examples in row order. ``stats``: ``rows``, ``samples``,
        ``valid_rate`` (of all samples), ``correct_rate`` (pairwise samples with the gold verdict;
        pointwise samples within ``score_tolerance`` of the gold score, or sample pairs ordered right),
        ``forced_rate``, ``tool_use_rate`` (all samples),
        ``selected`` (rows with a kept example), ``selected_tool_use_rate``,
        ``selected_mean_tokens``.
    """
    best: dict[int, tuple[tuple[int, int], Any]] = {}
    n_correct = n_scored = 0
    blocks: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for i, r in enumerate(rows):
        scored = r.get("gold_score") is not None
        if r["role"] is not None and not scored:
            blocks[(r["pair_id"], r["protocol"])][r["role"]] = i
            continue
        for j in judged[i]:
            if scored:
                ok = bool(rc_component(j.decision, float(r["gold_score"]), "pointwise", score_tolerance=score_tolerance))
            else:
                ok = j.decision.valid and j.decision.verdict == r["label"]
            n_scored += 1
            n_correct += ok
            if ok and (i not in best or _cost(j) < best[i][0]):
                best[i] = (_cost(j), j)
    for block in blocks.values():
        if set(block) != {"chosen", "rejected"}:
            continue
        c, rj = block["chosen"], block["rejected"]
        for jc, jr in zip(judged[c], judged[rj]):
            ok = (jc.decision.valid and jr.decision.valid
                  and jc.decision.scores[0] > jr.decision.scores[0])
            n_scored += 1
            n_correct += ok
            cost = tuple(a + b for a, b in zip(_cost(jc), _cost(jr)))
            if ok and (c not in best or cost < best[c][0]):
                best[c], best[rj] = (cost, jc), (cost, jr)  # type: ignore[assignment]
    examples = []
    for i in sorted(best):
        j = best[i][1]
        examples.append(example_from_judgment(rows[i]["prompt"], j, row_key(rows[i]),
                                              {**(meta or {}), "seed": j.seed, "tokens": j.completion_tokens,
                                               "tool_calls": _cost(j)[1], "forced": j.forced}))
    flat = [j for js in judged for j in js]
    kept = [best[i][1] for i in best]
    n = max(len(flat), 1)
    stats = {
        "rows": len(rows),
        "samples": len(flat),
        "valid_rate": sum(j.decision.valid and not j.forced for j in flat) / n,
        "valid_rate_with_forcing": sum(j.decision.valid for j in flat) / n,
        "correct_rate": n_correct / n_scored if n_scored else None,
        "forced_rate": sum(j.forced for j in flat) / n,
        "tool_use_rate": sum(_cost(j)[1] > 0 for j in flat) / n,
        "selected": len(examples),
        "selected_tool_use_rate": sum(_cost(j)[1] > 0 for j in kept) / len(kept) if kept else None,
        "selected_mean_tokens": sum(_cost(j)[0] for j in kept) / len(kept) if kept else None,
    }
    return examples, stats


def programmatic_teacher(rows: Sequence[dict[str, Any]], pairs_by_id: dict[str, PreferencePair],
                         protocols: dict[str, Any], tools: bool) -> tuple[Any, list[dict[str, Any]]]:
    """The programmatic teacher of the rows, and the rows it can judge (others are left out).

    Pairs with a ``meta["domain"]`` (the issue-23 builders: ``arith/<form>``, ``code``, ``if``, ``chat``,
    ``safety``) get the :class:`~judgerl.train.teach.base.DomainTeacher` (one plan per domain,
    :func:`judgerl.train.teach.domain_teacher`); pairs with only ``meta["expression"]`` (the ``a op b``
    builders) the :class:`~judgerl.train.teachers.ArithmeticTeacher`.

    Raises:
        RecipeError: no row has a pair either teacher can judge.
    """
    from judgerl.train.teach import domain_teacher
    from judgerl.train.teachers import ArithmeticTeacher

    if any(pairs_by_id[r["pair_id"]].meta.get("domain") for r in rows):
        domains, kept, counts = domain_teacher(rows, pairs_by_id, protocols, tools)
        logger.info("programmatic teacher: rows per domain %s", dict(counts))
        if kept:
            return domains, kept
    teacher = ArithmeticTeacher()
    usable = []
    for r in rows:
        pair = pairs_by_id[r["pair_id"]]
        expr = pair.meta.get("expression")
        if not expr:
            continue
        if r["role"] is not None:
            shown = (pair.chosen if r["role"] == "chosen" else pair.rejected,)
        else:
            shown = (pair.chosen, pair.rejected) if r["order"] == 0 else (pair.rejected, pair.chosen)
        try:
            teacher.register(r["prompt"], protocols[r["protocol"]], str(expr), shown, tools)
        except ValueError as e:  # an expression the teacher refuses: skip the row, never the run
            logger.warning("programmatic teacher: row %s skipped: %s", row_key(r), e)
            continue
        usable.append(r)
    if not usable:
        raise RecipeError("distill.teacher=programmatic needs arithmetic pairs (meta 'expression') or pairs of "
                          "a domain it teaches (meta 'domain': arith/*, code, if, chat, safety), e.g. "
                          "data.builder=gsm8k-arith; use a model teacher for other pairs")
    if len(usable) < len(rows):
        logger.warning("programmatic teacher: %d of %d rows have no arithmetic expression and are skipped",
                       len(rows) - len(usable), len(rows))
    return teacher, usable


def distill_examples(rows: Sequence[dict[str, Any]], pairs: Sequence[PreferencePair], *,
                     protocols: Mapping[str, JudgeProtocol], spec: DistillConfig, tools: ToolsConfig | None = None,
                     seed: int = 0, sandbox: Executor | None = None, score_tolerance: float = 0.0,
                     ) -> tuple[list[SFTExample], dict[str, Any]]:
    """Teacher trajectories of the training rows, rejection-sampled.

    Args:
        rows, pairs: The GRPO rows to judge and their pairs.
        protocols: The run's protocol objects by name (the rows' ``protocol`` column).
        spec: The teacher (:class:`~judgerl.train.sections.DistillConfig`: teacher, samples, sampling,
            forcing).
        tools: Tool rows (``task: tir``): judged with tools (this budget and sandbox kind); None: no tools.
        seed: Base of the per-sample seeds.
        sandbox: The executor (default: from ``tools``).
        score_tolerance: Rows with a ``gold_score``: largest ``|score - gold|`` kept as correct
            (the recipe's ``score_tolerance``, as the TIR reward).

    Raises:
        RecipeError: the teacher kept no trajectory, or no usable row.
        ImportError / ValueError: from :func:`judgerl.backends.load_backend` for a model teacher.
    """
    from judgerl.judge.core import Judge

    if tools is not None and sandbox is None:
        from judgerl.tools import get_sandbox

        sandbox = get_sandbox(kind=tools.sandbox, timeout_s=float(tools.timeout_s), allow_unsafe=tools.allow_unsafe)
    if spec.teacher == PROGRAMMATIC:
        backend, rows = programmatic_teacher(rows, {p.id: p for p in pairs}, dict(protocols), tools is not None)
    else:
        from judgerl.backends import load_backend

        backend = load_backend(str(spec.teacher))
    params = SamplingParams(max_new_tokens=int(spec.max_new_tokens), temperature=float(spec.temperature))
    rounds = int(tools.max_rounds) if tools is not None else MAX_TOOL_ROUNDS
    judges = {name: Judge(p, backend, params, sandbox=sandbox if tools is not None else None,
                          max_tool_rounds=rounds, force_answer=bool(spec.force_answer), seed=seed)
              for name, p in protocols.items()}
    judged = judge_rows(judges, rows, int(spec.samples), seed, tag="distill",
                        progress=lambda a, b: logger.info("teacher: %d/%d judgments", a, b))
    examples, stats = select_examples(rows, judged, {"teacher": backend.name}, score_tolerance=score_tolerance)
    stats["teacher"] = backend.name
    if not examples:
        raise RecipeError(f"distill: the teacher {stats['teacher']!r} judged no row correctly ({stats})")
    return examples, stats
