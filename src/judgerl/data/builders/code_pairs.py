"""Code preference pairs with visible examples, split by problem (TIR-Judge's verifiable code domain).

From HumanEval (Chen et al., 2021): each problem is on one side of a deterministic split by its
``task_id`` (:func:`judgerl.data.builders.splits.split_of` of ``"code:<task_id>"``), so held-out pairs
never share a problem with training pairs. Per problem:

* the prompt shows the function to complete and a few **visible examples** as asserts
  (:mod:`judgerl.data.builders.code_examples`: the docstring's calls, with the values the reference
  solution returns); these are ``meta["tests"]``, the only tests a judge or a teacher may run;
* chosen = a passing solution: the canonical one, or the canonical one rewritten by
  :func:`ast.unparse` (same logic, other layout; ``meta["chosen_variant"]``), verified to pass the
  problem's hidden tests and its visible examples;
* rejected = a single-edit mutant of *that same* chosen text (:mod:`judgerl.data.builders.mutants`:
  off-by-one, flipped comparison, wrong edge case, ...), verified to FAIL the hidden tests;
  ``meta["visible_fail"]`` says whether it also fails a visible example (then running the examples
  decides the pair). Mutants that fail a visible example are used first.

Training problems give up to ``pairs_per_problem`` pairs (distinct mutants, alternating the chosen
variants); held-out problems give one each by default. Tests run through an executor
(``run(code) -> ExecResult``, the sandbox or :class:`judgerl.verify.code.SubprocessExecutor`).
"""

from __future__ import annotations

import ast
import random
import textwrap
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from judgerl.data.builders.code_examples import example_asserts, example_calls
from judgerl.data.builders.humaneval import PROMPT_TEMPLATE
from judgerl.data.builders.mutants import Mutant, generate_mutants
from judgerl.data.builders.splits import HELD_OUT_FRACTION, check_split, split_of
from judgerl.types import PreferencePair
from judgerl.verify.code import Executor, humaneval_program, run_tests

SOURCE = "code/humaneval"
DOMAIN = "code"
EXAMPLES_TEMPLATE = "\n\nExamples it must satisfy (you may run them):\n```python\n{asserts}\n```"


@dataclass(frozen=True)
class CodePairSettings:
    """How :func:`build_code_pairs_for_problem` builds a problem's pairs.

    Attributes:
        split: ``"train"`` or ``"held-out"``.
        seed: Seeds the order in which mutants are tried.
        pairs_per_problem: Most pairs per problem (default: 3 for train, 1 for held-out).
        max_attempts: Mutants tried per chosen variant.
        max_examples: Visible asserts shown per problem.
        held_out_fraction: Share of problems held out (:func:`split_of`).
    """

    split: str = "train"
    seed: int = 0
    pairs_per_problem: int | None = None
    max_attempts: int = 12
    max_examples: int = 3
    held_out_fraction: float = HELD_OUT_FRACTION

    def __post_init__(self) -> None:
        check_split(self.split)
        for name in ("pairs_per_problem", "max_attempts", "max_examples"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")

    @property
    def n_pairs(self) -> int:
        """Pairs wanted per problem."""
        if self.pairs_per_problem is not None:
            return self.pairs_per_problem
        return 3 if self.split == "train" else 1

    def config(self) -> dict[str, Any]:
        """JSON-able settings (the :class:`~judgerl.data.builders._sink.PairSink` configuration)."""
        return {"kind": "code-pairs", "split": self.split, "seed": self.seed, "pairs_per_problem": self.n_pairs,
                "max_attempts": self.max_attempts, "max_examples": self.max_examples,
                "held_out_fraction": self.held_out_fraction}


def normalised_variant(prompt: str, solution: str) -> str | None:
    """``prompt`` + the solution body re-laid-out by :func:`ast.unparse` (comments dropped, one
    statement per line, canonical quoting), or None when the body does not parse on its own or
    the rewrite is the same text."""
    try:
        tree = ast.parse(textwrap.dedent(solution))
    except SyntaxError:
        return None
    body = textwrap.indent(ast.unparse(tree), "    ") + "\n"
    if body.strip() == solution.strip():
        return None
    return prompt + body


def problem_key_of(problem: Mapping[str, Any]) -> str:
    """The split key of a HumanEval problem: ``"code:<task_id>"`` (``meta["problem_key"]``)."""
    return f"{DOMAIN}:{problem['task_id']}"


def problem_split(problem: Mapping[str, Any], held_out_fraction: float = HELD_OUT_FRACTION) -> str:
    """The split of a HumanEval problem, by the hash of its :func:`problem_key_of`
    (:func:`judgerl.data.builders.splits.split_of`)."""
    return split_of(problem_key_of(problem), held_out_fraction)


def _passes(code: str, test: str, entry: str, executor: Executor) -> tuple[bool, str]:
    outcome = run_tests(humaneval_program(code, test, entry), executor)
    return outcome.passed, ("timeout" if outcome.timed_out else outcome.error)


def _visible_ok(code: str, asserts: Sequence[str], executor: Executor) -> bool:
    """Whether ``code`` passes every visible assert (True when there are none)."""
    if not asserts:
        return True
    return run_tests(code.rstrip() + "\n\n\n" + "\n".join(asserts) + "\n", executor).passed


def _failing_mutants(code: str, body_start: int, problem: Mapping[str, Any], asserts: Sequence[str],
                     executor: Executor, settings: CodePairSettings, counts: dict[str, int]
                     ) -> Iterator[tuple[Mutant, str, bool]]:
    """(mutant, hidden-test failure, visible_fail) for the tried mutants that fail the hidden tests,
    visible-failing ones first."""
    mutants = generate_mutants(code, body_start=body_start)
    random.Random(f"{settings.seed}:{problem['task_id']}:{len(code)}").shuffle(mutants)
    later = []
    for mutant in mutants[: settings.max_attempts]:
        counts["runs"] += 1
        passed, failure = _passes(mutant.code, problem["test"], problem["entry_point"], executor)
        if passed:
            counts["equivalent_mutants"] += 1
            continue
        counts["runs"] += bool(asserts)
        visible_fail = bool(asserts) and not _visible_ok(mutant.code, asserts, executor)
        if visible_fail:
            yield mutant, failure, True
        else:
            later.append((mutant, failure, False))
    yield from later


def build_code_pairs_for_problem(problem: Mapping[str, Any], executor: Executor,
                                 settings: CodePairSettings) -> tuple[list[PreferencePair], str, dict[str, int]]:
    """The pairs of one HumanEval problem (see the module docstring).

    Args:
        problem: A record of :func:`judgerl.data.builders.humaneval.load_humaneval_problems`.
        executor: Runs the tests.
        settings: Split, seed and counts.

    Returns:
        ``(pairs, status, counts)``: status ``ok``, ``other_split`` (the problem is on the other
        side; nothing run), ``canonical_failed`` or ``no_failing_mutant``; counts ``runs``,
        ``equivalent_mutants``, ``visible_examples``, ``visible_fail``.
    """
    counts = {"runs": 0, "equivalent_mutants": 0, "visible_examples": 0, "visible_fail": 0}
    if problem_split(problem, settings.held_out_fraction) != settings.split:
        return [], "other_split", counts
    prompt, entry, test = problem["prompt"], problem["entry_point"], problem["test"]
    canonical = prompt + problem["canonical_solution"]
    counts["runs"] += 1
    if not _passes(canonical, test, entry, executor)[0]:
        return [], "canonical_failed", counts
    counts["runs"] += 1
    asserts = example_asserts(canonical, entry, example_calls(prompt, entry), executor, settings.max_examples)
    counts["visible_examples"] = len(asserts)
    variants = [("canonical", canonical)]
    rewritten = normalised_variant(prompt, problem["canonical_solution"])
    if rewritten is not None:
        counts["runs"] += 2
        if _passes(rewritten, test, entry, executor)[0] and _visible_ok(rewritten, asserts, executor):
            variants.append(("normalised", rewritten))
    streams = [(name, code, _failing_mutants(code, len(prompt), problem, asserts, executor, settings, counts))
               for name, code in variants]
    full_prompt = PROMPT_TEMPLATE.format(code=prompt)
    if asserts:
        full_prompt += EXAMPLES_TEMPLATE.format(asserts="\n".join(asserts))
    pairs: list[PreferencePair] = []
    while len(pairs) < settings.n_pairs and streams:
        for stream in list(streams):
            name, code, mutants = stream
            found = next(mutants, None)
            if found is None:
                streams.remove(stream)
                continue
            mutant, failure, visible_fail = found
            counts["visible_fail"] += visible_fail
            pairs.append(PreferencePair(
                id=f"code-{problem['task_id'].replace('/', '-')}-{len(pairs)}",
                prompt=full_prompt,
                chosen=code.strip("\n") + "\n",
                rejected=mutant.code.strip("\n") + "\n",
                source=SOURCE,
                meta={
                    "domain": DOMAIN, "split": settings.split, "task_id": problem["task_id"],
                    "problem_key": problem_key_of(problem),
                    "entry_point": entry, "tests": list(asserts), "visible_fail": visible_fail,
                    "chosen_variant": name, "mutation": mutant.kind,
                    "mutation_description": mutant.description, "rejected_failure": failure,
                },
            ))
            if len(pairs) == settings.n_pairs:
                break
    return pairs, ("ok" if pairs else "no_failing_mutant"), counts


def write_code_pairs(problems: Sequence[Mapping[str, Any]], executor: Executor, out: Any,
                     settings: CodePairSettings, *, workers: int = 2) -> dict[str, Any]:
    """Build every problem's pairs into ``out`` through a resumable
    :class:`~judgerl.data.builders._sink.PairSink` (one ledger item per problem; a rerun skips the
    problems already done).

    Args:
        problems: HumanEval records, in order.
        executor: Runs the tests (not closed here).
        out: Canonical JSONL path (appended to).
        settings: See :class:`CodePairSettings`.
        workers: Problems verified concurrently (threads; each run is its own process).

    Returns:
        The sink's summary (``items``, ``pairs_written``, ``by_status`` and summed counts) plus
        ``split`` and ``problems_in_split``.

    Raises:
        ValueError: ``workers`` < 1; see :class:`~judgerl.data.builders._sink.PairSink`.
    """
    from concurrent.futures import ThreadPoolExecutor

    from judgerl.data.builders._sink import PairSink

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    sink = PairSink(out, settings.config())
    mine = [p for p in problems if problem_split(p, settings.held_out_fraction) == settings.split]
    todo = [p for p in mine if not sink.done(p["task_id"])]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for problem, (pairs, status, counts) in zip(
                todo, pool.map(lambda p: build_code_pairs_for_problem(p, executor, settings), todo)):
            sink.finish(problem["task_id"], pairs, status, **counts)
    return {**sink.summary(), "split": settings.split, "problems_in_split": len(mine)}
