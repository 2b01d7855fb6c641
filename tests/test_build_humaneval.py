"""Mutants, code verification and the HumanEval pair builder."""

from __future__ import annotations

import ast
import json

import pytest

from judgerl.data.builders.humaneval import (
    PROMPT_TEMPLATE,
    build_humaneval_pairs,
    build_humaneval_pairs_report,
    load_humaneval_problems,
)
from judgerl.data.builders.mutants import generate_mutants
from judgerl.data.errors import DataFormatError
from judgerl.verify.code import SubprocessExecutor, humaneval_program, run_tests

SOLUTION = '''def below_threshold(l: list, t: int):
    """Return True if all numbers in the list l are below threshold t."""
    if not l:
        return True
    for i in range(len(l)):
        if l[i] >= t:  # comment kept
            return False
    return True
'''
BODY_START = SOLUTION.index("    if not l")


# --------------------------------------------------------------------------- mutants
def test_mutants_parse_and_touch_only_the_body():
    mutants = generate_mutants(SOLUTION, body_start=BODY_START)
    assert mutants
    head = SOLUTION[:BODY_START]
    for m in mutants:
        ast.parse(m.code)
        assert m.code != SOLUTION
        assert m.code.startswith(head), m.description
        assert "# comment kept" in m.code or m.kind == "missing_edge_case"
    assert len({m.code for m in mutants}) == len(mutants)


def test_mutation_kinds_present():
    kinds = {m.kind for m in generate_mutants(SOLUTION, body_start=BODY_START)}
    assert {"flipped_comparison", "swapped_boolean", "off_by_one_range", "wrong_edge_return",
            "missing_edge_case"} <= kinds


@pytest.mark.parametrize(
    "kind, fragment",
    [
        ("flipped_comparison", "if l[i] > t:"),
        ("off_by_one_range", "range(len(l) - 1)"),
        ("wrong_edge_return", "if not l:\n        return False"),
        ("swapped_boolean", "    return False\n"),
    ],
)
def test_specific_mutants(kind, fragment):
    codes = [m.code for m in generate_mutants(SOLUTION, body_start=BODY_START) if m.kind == kind]
    assert any(fragment in c for c in codes), codes


def test_missing_edge_case_removes_guard_lines():
    [m] = [m for m in generate_mutants(SOLUTION, body_start=BODY_START) if m.kind == "missing_edge_case" and "if not l" not in m.code]
    assert "    for i in range(len(l)):" in m.code


def test_no_mutants_for_unparseable_or_operator_free_code():
    assert generate_mutants("def f(:\n  pass") == []
    assert generate_mutants("def f(x):\n    return x\n", body_start=0) == []


def test_unpacking_star_not_mutated():
    code = "def f(*args):\n    return g(*args)\n"
    assert all("+args" not in m.code for m in generate_mutants(code))


# --------------------------------------------------------------------------- code verification
@pytest.fixture(scope="module")
def subprocess_executor():
    return SubprocessExecutor(timeout_s=5)


def test_subprocess_executor(subprocess_executor):
    ok = subprocess_executor.run("print('hi')")
    assert ok.ok and ok.stdout == "hi\n"
    bad = subprocess_executor.run("assert 1 == 2, 'nope'")
    assert not bad.ok and bad.stderr.strip().endswith("AssertionError: nope")
    slow = subprocess_executor.run("import time\ntime.sleep(30)", timeout_s=0.5)
    assert slow.timed_out and not slow.ok and "TimeoutError" in slow.stderr
    big = SubprocessExecutor(output_bytes=10).run("print('x' * 100)")
    assert big.truncated and len(big.stdout) == 10
    with pytest.raises(ValueError):
        SubprocessExecutor(timeout_s=0)


def test_run_tests_pass_and_fail(subprocess_executor):
    test = "def check(candidate):\n    assert candidate([1, 2], 3)\n    assert not candidate([1, 5], 3)\n"
    assert run_tests(humaneval_program(SOLUTION, test, "below_threshold"), subprocess_executor).passed
    broken = SOLUTION.replace(">= t", "> t + 10")
    outcome = run_tests(humaneval_program(broken, test, "below_threshold"), subprocess_executor)
    assert not outcome.passed and outcome.error == "AssertionError"


_TEST = "def check(candidate):\n    assert candidate([1, 2], 3)\n    assert not candidate([1, 5], 3)\n"
_WRONG = SOLUTION.replace(">= t", "> t + 10")


@pytest.mark.parametrize(
    ("escape", "correct_passes"),
    [
        ("import sys\nsys.exit(0)\n", False),  # at import: the tests never run
        ("raise SystemExit(0)\n", False),
        ("import os\nos._exit(0)\n", False),
        ("import atexit, os\natexit.register(lambda: os._exit(0))\n", True),  # runs after the asserts
        ("import atexit, sys\natexit.register(sys.exit, 0)\n", True),
        ("import sys\nsys.excepthook = lambda *a: None\n", True),  # a silent traceback
        ("print('PASSED')\nimport sys\nsys.stdout.flush()\nsys.exit(0)\n", False),  # forged success text
    ],
    ids=["sys.exit", "SystemExit", "os._exit", "atexit-os._exit", "atexit-sys.exit", "excepthook", "print-pass"],
)
def test_run_tests_wrong_solution_that_exits_early_fails(subprocess_executor, escape, correct_passes):
    """Issue 22: a wrong solution that ended the process with status 0 passed every test."""
    assert not run_tests(humaneval_program(escape + _WRONG, _TEST, "below_threshold"), subprocess_executor).passed
    # The same lines in a correct solution: a pass exactly when the tests still ran to their end.
    outcome = run_tests(humaneval_program(escape + SOLUTION, _TEST, "below_threshold"), subprocess_executor)
    assert outcome.passed is correct_passes


def test_run_tests_exit_inside_a_test_call_fails(subprocess_executor):
    exiting = SOLUTION.replace("    if not l:", "    import sys\n    sys.exit(0)\n    if not l:")
    outcome = run_tests(humaneval_program(exiting, _TEST, "below_threshold"), subprocess_executor)
    assert not outcome.passed and outcome.error.startswith("exited before the tests finished")


def test_run_tests_passes_on_the_harness_token_not_the_exit_status(subprocess_executor):
    # A correct solution that prints a lot (past the executor's output cap) and exits non-zero
    # after the tests finished still passed them.
    chatty = "print('x' * 200_000)\nimport atexit, os\natexit.register(os._exit, 3)\n" + SOLUTION
    assert run_tests(humaneval_program(chatty, _TEST, "below_threshold"), SubprocessExecutor(output_bytes=1024)).passed
    slow = "import time\ntime.sleep(30)\n" + SOLUTION
    outcome = run_tests(humaneval_program(slow, _TEST, "below_threshold"), SubprocessExecutor(timeout_s=0.5))
    assert not outcome.passed and outcome.timed_out


# --------------------------------------------------------------------------- builder
def test_load_problems_from_package():
    problems = load_humaneval_problems()
    assert len(problems) == 164
    assert problems[0]["task_id"] == "HumanEval/0"


def test_load_problems_bad_record(tmp_path):
    path = tmp_path / "he.jsonl"
    path.write_text(json.dumps({"task_id": "X/0", "prompt": "def f():\n"}) + "\n")
    with pytest.raises(DataFormatError) as err:
        load_humaneval_problems(path)
    assert err.value.field == "canonical_solution" and err.value.location == "line 1"


def _check_pairs(pairs, executor):
    problems = {p["task_id"]: p for p in load_humaneval_problems()}
    for pair in pairs:
        prob = problems[pair.meta["task_id"]]
        assert pair.source == "humaneval"
        assert pair.prompt == PROMPT_TEMPLATE.format(code=prob["prompt"])
        assert pair.chosen.startswith(prob["prompt"].strip("\n"))
        assert pair.rejected.startswith(prob["prompt"].strip("\n"))  # signature + docstring intact
        # labels re-checked independently: chosen passes, rejected fails
        assert run_tests(humaneval_program(pair.chosen, prob["test"], prob["entry_point"]), executor).passed
        assert not run_tests(humaneval_program(pair.rejected, prob["test"], prob["entry_point"]), executor).passed


def test_build_with_subprocess_executor(subprocess_executor):
    report = build_humaneval_pairs_report(subprocess_executor, limit=4)
    assert report.n_problems == 4 and report.canonical_failed == []
    assert len(report.pairs) + len(report.no_failing_mutant) == 4
    assert len(report.pairs) >= 3
    assert [p.id for p in report.pairs][0] == "humaneval-HumanEval-0"
    _check_pairs(report.pairs, subprocess_executor)
    again = build_humaneval_pairs(subprocess_executor, limit=4)
    assert [p.rejected for p in again] == [p.rejected for p in report.pairs]  # seeded


def test_build_with_real_sandbox():
    from judgerl.tools import get_sandbox

    with get_sandbox(timeout_s=5) as sandbox:
        pairs = build_humaneval_pairs(sandbox, limit=3, seed=1)
        assert len(pairs) >= 2
        _check_pairs(pairs, sandbox)
        assert all(p.meta["mutation"] and p.meta["rejected_failure"] for p in pairs)


def test_build_arguments():
    with pytest.raises(ValueError, match="limit"):
        build_humaneval_pairs_report(SubprocessExecutor(), limit=0)
    with pytest.raises(ValueError, match="max_attempts"):
        build_humaneval_pairs_report(SubprocessExecutor(), max_attempts=0)


@pytest.mark.slow
def test_build_all_problems():
    report = build_humaneval_pairs_report(limit=None)
    assert report.canonical_failed == []
    assert len(report.pairs) >= 140  # measured: 149 of 164 with seed 0
