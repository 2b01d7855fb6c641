"""Code-block detection and observation formatting for the tool-integrated loop."""

from __future__ import annotations

import pytest

from judgerl.text.codeblocks import (
    cap_text,
    count_python_blocks,
    find_new_python_block,
    format_observation,
    iter_code_blocks,
    looks_like_error,
    output_block,
    output_blocks,
)
from judgerl.tools.sandbox import ExecResult


def _result(stdout="", stderr="", exit_code=0, timed_out=False) -> ExecResult:
    return ExecResult(stdout, stderr, exit_code, timed_out, False, 0.01)


# --------------------------------------------------------------------------- detection
@pytest.mark.parametrize(
    "text, expected_code",
    [
        ("Let me check.\n```python\nprint(1 + 1)\n```\nDone.", "print(1 + 1)\n"),
        ("```py\nx = 3\nprint(x)\n```", "x = 3\nprint(x)\n"),
        ("```Python3\nprint('a')\n```\n", "print('a')\n"),
        # indented fences (inside a list item) still count
        ("1. check:\n   ```python\n   print(2)\n   ```\n", "   print(2)\n"),
        # first of several blocks
        ("```python\na = 1\n```\nthen\n```python\nb = 2\n```\n", "a = 1\n"),
        # non-python blocks before it are skipped whole, even when they contain python-looking text
        ("```text\n```python\nnot code\n```\n```python\nreal = 1\n```\n", "real = 1\n"),
        ("```json\n{\"a\": 1}\n```\n```python\nprint('x')\n```", "print('x')\n"),
        # a bare fence block is not python
        ("```\nprint('bare')\n```\n```python\nprint('py')\n```", "print('py')\n"),
        # trailing spaces after the closing fence
        ("```python\nprint(3)\n```   \nok", "print(3)\n"),
    ],
)
def test_first_python_block_found(text, expected_code):
    block = find_new_python_block(text, 0)
    assert block is not None
    assert block.code == expected_code
    assert block.closed and block.is_python
    assert text[block.start :].lstrip(" ").startswith("```")
    assert text[: block.end].rstrip().endswith("```")


@pytest.mark.parametrize(
    "text",
    [
        "No code here, the answer is <verdict>A</verdict>.",
        "```python\nprint('never closed')\n",  # unclosed: the judge did not finish it
        "```output\n42\n```\n",  # interpreter output, not code
        "```bash\nls -la\n```\n",
        "inline ```python print(1)``` is not a block",
        "```javascript\nconsole.log(1)\n```",
        "",
    ],
)
def test_no_python_block(text):
    assert find_new_python_block(text, 0) is None


def test_unclosed_python_block_stops_search():
    # A later closed block does not count once an earlier python block is left unclosed: the
    # "closing" fence belongs to the unclosed block.
    text = "```python\nx = 1\n\nmore\n```python\ny = 2\n"
    assert find_new_python_block(text, 0) is None


def test_block_offsets_cut_text_after_closing_fence():
    text = "think\n```python\nprint(5)\n```\nhallucinated output 99"
    block = find_new_python_block(text, 0)
    assert text[block.start : block.end] == "```python\nprint(5)\n```\n"
    assert text[block.end :] == "hallucinated output 99"


def test_iter_code_blocks_lists_all_languages_and_unclosed_last():
    text = "```python\na\n```\n```output\nb\n```\n```python\nc"
    blocks = list(iter_code_blocks(text))
    assert [(b.lang, b.closed) for b in blocks] == [("python", True), ("output", True), ("python", False)]
    assert blocks[-1].code == "c" and blocks[-1].end == len(text)


def test_count_and_output_blocks():
    text = (
        "```python\nprint(1)\n```\n```output\n1\n```\n"
        "```python\n1/0\n```\n```output\nZeroDivisionError: division by zero\n```\n"
        "```python\nnot closed"
    )
    assert count_python_blocks(text) == 2
    assert output_blocks(text) == ["1\n", "ZeroDivisionError: division by zero\n"]


def test_find_new_python_block_with_prefill_opened_fence():
    prefill = "<think>\n```python\n"
    new = "print(6 * 7)\n```\nrest"
    block = find_new_python_block(prefill + new, len(prefill))
    assert block is not None and block.code == "print(6 * 7)\n"
    assert block.start < len(prefill) < block.end


def test_find_new_python_block_skips_handled_context():
    context = "```python\nprint(1)\n```\n```output\n1\n```\n"
    assert find_new_python_block(context + "final answer", len(context)) is None
    block = find_new_python_block(context + "```python\nprint(2)\n```\n", len(context))
    assert block is not None and block.code == "print(2)\n"


# --------------------------------------------------------------------------- observations
def test_observation_success_and_empty():
    assert format_observation(_result(stdout="42\n")) == ("42", False)
    assert format_observation(_result(stdout="")) == ("(no output)", False)


def test_observation_error_truncated_to_last_line():
    tb = (
        "Traceback (most recent call last):\n"
        '  File "<sandbox>", line 3, in <module>\n'
        "    print(undefined_name)\n"
        "NameError: name 'undefined_name' is not defined\n"
    )
    text, is_error = format_observation(_result(stdout="partial\n", stderr=tb, exit_code=1))
    assert is_error
    assert text == "partial\nNameError: name 'undefined_name' is not defined"
    assert "Traceback" not in text


def test_observation_timeout_and_silent_failure():
    text, is_error = format_observation(
        _result(stderr="TimeoutError: execution exceeded the wall-clock limit of 2 s\n", exit_code=-9, timed_out=True)
    )
    assert is_error and text == "TimeoutError: execution exceeded the wall-clock limit of 2 s"
    assert format_observation(_result(exit_code=-9, timed_out=True)) == ("TimeoutError: execution timed out", True)
    assert format_observation(_result(exit_code=3)) == ("Error: exit code 3", True)


def test_observation_output_cap():
    text, is_error = format_observation(_result(stdout="x" * 5000), max_chars=100)
    assert not is_error
    assert text.startswith("x" * 100) and "[output truncated: 4900 more characters]" in text
    with pytest.raises(ValueError, match="max_chars"):
        cap_text("abc", 0)


def test_output_block_format():
    assert output_block("42") == "```output\n42\n```\n"


@pytest.mark.parametrize(
    "obs, expected",
    [
        ("NameError: name 'x' is not defined", True),
        ("1\n2\nZeroDivisionError: division by zero\n", True),
        ("TimeoutError: execution exceeded the wall-clock limit of 10 s", True),
        ("numpy.linalg.LinAlgError: Singular matrix", True),
        ("42", False),
        ("(no output)", False),
        ("The Error was small", False),
        ("", False),
    ],
)
def test_looks_like_error(obs, expected):
    assert looks_like_error(obs) is expected
