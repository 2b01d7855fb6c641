"""Visible examples of a HumanEval problem: the calls its docstring shows, as asserts a judge may run.

HumanEval prompts show examples in several styles -- doctests (``>>> f(3)``), ``f(3) ==> 2``,
``f(3) ➞ 2`` and ``Input: arr = [1, 2], k = 1`` blocks. :func:`example_calls` finds the *calls*
(never the written results, whose formats vary and are sometimes wrong); :func:`example_asserts`
runs the reference solution on them and writes one assert per call with the value it returned.
These are the tests a judge sees in the prompt; the problem's hidden ``check`` function is never
shown, and only labels the pairs.
"""

from __future__ import annotations

import ast
import json
import math
import re
import secrets
from typing import Any

from judgerl.verify.code import Executor

_INPUT_LINE = re.compile(r"^\s*Input\s*:\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE)


def _docstring_text(prompt: str, entry_point: str) -> str:
    """The part of ``prompt`` after ``def <entry_point>(`` (its docstring), or "" when absent."""
    m = re.search(rf"\bdef\s+{re.escape(entry_point)}\s*\(", prompt)
    if m is None:
        return ""
    body = prompt[m.end():]
    close = body.find(":\n")
    return body[close + 2:] if close >= 0 else ""


def _balanced_call(text: str, start: int) -> str | None:
    """``text[start:]`` up to the parenthesis closing the one at ``text.index("(", start)``."""
    open_at = text.find("(", start)
    depth = 0
    for i in range(open_at, min(len(text), open_at + 2000)):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


def _literal_call(source: str, entry_point: str) -> str | None:
    """``source`` normalised by :func:`ast.unparse` when it is ``entry_point(<literals>)``, else None."""
    try:
        node = ast.parse(" ".join(source.split()), mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point):
        return None
    try:
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            ast.literal_eval(arg)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if any(k.arg is None for k in node.keywords):
        return None
    return ast.unparse(node)


def example_calls(prompt: str, entry_point: str) -> list[str]:
    """Calls of ``entry_point`` on literal arguments shown in the prompt's docstring, in order,
    without duplicates (e.g. ``["add([4, 2, 6, 7])"]``). ``Input: a = 1, b = 2`` lines become
    keyword calls ``f(a=1, b=2)``. Empty when the docstring shows none."""
    doc = _docstring_text(prompt, entry_point)
    found: list[str] = []
    for m in re.finditer(rf"(?<![\w.]){re.escape(entry_point)}\s*\(", doc):
        text = _balanced_call(doc, m.start())
        call = _literal_call(text, entry_point) if text else None
        if call and call not in found:
            found.append(call)
    for m in _INPUT_LINE.finditer(doc):
        call = _literal_call(f"{entry_point}({m.group(1)})", entry_point)
        if call and call not in found:
            found.append(call)
    return found


_PROBE = """\
import ast as _ast
{code}

_results = []
for _i, _src in enumerate({calls!r}):
    try:
        _v = eval(_src)
        _r = repr(_v)
        _ok = _ast.literal_eval(_r) == _v or isinstance(_v, float)
        _results.append([_i, _r if _ok else None, type(_v).__name__])
    except Exception as _e:
        _results.append([_i, None, type(_e).__name__])
print({token!r} + __import__("json").dumps(_results))
"""


def example_asserts(code: str, entry_point: str, calls: list[str], executor: Executor,
                    limit: int = 3) -> list[str]:
    """One assert per call, with the value ``code`` (the reference solution) returns for it.

    Args:
        code: A passing solution (trusted: the problem's canonical one).
        entry_point: The function's name.
        calls: From :func:`example_calls`.
        executor: Runs ``code`` once with every call (``run(code) -> ExecResult``).
        limit: Most asserts kept (the first ones that evaluate).

    Returns:
        E.g. ``["assert add([4, 2, 6, 7]) == 2"]``; a float result is compared within 1e-6
        (``assert abs(f(x) - 2.5) < 1e-06``); calls that raise, return NaN, or return a value
        whose ``repr`` is not a literal are dropped.

    Raises:
        ValueError: ``limit`` < 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    if not calls:
        return []
    token = f"RESULTS-{secrets.token_hex(8)}:"
    result = executor.run(_PROBE.format(code=code.rstrip(), calls=calls, token=token))
    line = next((ln for ln in (result.stdout or "").splitlines() if ln.startswith(token)), None)
    if line is None:
        return []
    out: list[str] = []
    for i, rendered, type_name in json.loads(line[len(token):]):
        if rendered is None:
            continue
        value: Any = ast.literal_eval(rendered) if type_name != "float" else float(rendered)
        if type_name == "float":
            if not math.isfinite(value):
                continue
            out.append(f"assert abs({calls[i]} - {rendered}) < 1e-06")
        else:
            out.append(f"assert {calls[i]} == {rendered}")
        if len(out) == limit:
            break
    return out
