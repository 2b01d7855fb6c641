"""Plausible buggy variants ("mutants") of a Python solution, written as minimal source edits.

Each mutant changes ONE place of the function body and keeps the rest of the text byte-for-byte
(formatting, comments, docstring), so a judge cannot spot the rejected response by its style, only
by its logic. Mutation kinds, the classic mutation-testing operators (e.g. Jia & Harman, 2011):

``flipped_comparison``   ``<`` ↔ ``<=``, ``>`` ↔ ``>=``, ``==`` ↔ ``!=``
``swapped_operator``     ``+`` ↔ ``-``, ``*`` → ``+``, ``//`` → ``/``, ``%`` → ``//``
``swapped_boolean``      ``and`` ↔ ``or``, ``True`` ↔ ``False``, ``min`` ↔ ``max``
``off_by_one_constant``  an integer literal ``n`` → ``n + 1`` / ``n - 1``
``off_by_one_range``     ``range(b)`` → ``range(b - 1)``, ``range(a, b)`` → ``range(a, b + 1)`` / ``range(a + 1, b)``
``wrong_edge_return``    ``if …: return <literal>`` returns a different literal
``missing_edge_case``    an ``if …: return …`` guard (no else) is deleted

Only the region after ``body_start`` (the solution body, not the given signature and docstring) is
mutated; every mutant parses.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass

_TOKEN_SWAPS: dict[str, tuple[str, list[str]]] = {
    "<": ("flipped_comparison", ["<="]),
    "<=": ("flipped_comparison", ["<"]),
    ">": ("flipped_comparison", [">="]),
    ">=": ("flipped_comparison", [">"]),
    "==": ("flipped_comparison", ["!="]),
    "!=": ("flipped_comparison", ["=="]),
    "+": ("swapped_operator", ["-"]),
    "-": ("swapped_operator", ["+"]),
    "*": ("swapped_operator", ["+"]),
    "//": ("swapped_operator", ["/"]),
    "%": ("swapped_operator", ["//"]),
    "and": ("swapped_boolean", ["or"]),
    "or": ("swapped_boolean", ["and"]),
    "True": ("swapped_boolean", ["False"]),
    "False": ("swapped_boolean", ["True"]),
    "min": ("swapped_boolean", ["max"]),
    "max": ("swapped_boolean", ["min"]),
}


@dataclass(frozen=True)
class Mutant:
    """One buggy variant.

    Attributes:
        kind: Mutation kind (see the module docstring).
        code: The full mutated source.
        line: 1-based line of the edit in the source.
        description: What changed, e.g. ``"'<' -> '<=' on line 7"``.
    """

    kind: str
    code: str
    line: int
    description: str


def _line_starts(source: str) -> list[int]:
    starts, pos = [0], 0
    for line in source.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def _offset(starts: list[int], source_lines: list[str], lineno: int, col_bytes: int) -> int:
    """Character offset of an ast (line, UTF-8 byte column) position."""
    line = source_lines[lineno - 1]
    col = len(line.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))
    return starts[lineno - 1] + col


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def _token_mutants(source: str, body_start: int, starts: list[int]) -> list[Mutant]:
    out = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return out
    for i, tok in enumerate(tokens):
        begin = starts[tok.start[0] - 1] + tok.start[1]
        end = starts[tok.end[0] - 1] + tok.end[1]
        if begin < body_start:
            continue
        replacements: list[tuple[str, str]] = []
        if tok.type in (tokenize.OP, tokenize.NAME) and tok.string in _TOKEN_SWAPS:
            kind, repl = _TOKEN_SWAPS[tok.string]
            prev = tokens[i - 1] if i else None
            if tok.string in ("min", "max") and (prev is not None and prev.string == "."):
                continue  # an attribute such as df.max
            if tok.string in ("*", "-", "+") and (prev is None or prev.string in ("(", ",", "[", "{", "=")):
                continue  # unpacking / unary sign, not a binary operator
            replacements = [(kind, r) for r in repl]
        elif tok.type == tokenize.NUMBER and tok.string.isdigit():
            n = int(tok.string)
            replacements = [("off_by_one_constant", str(n + 1))]
            if n >= 1:
                replacements.append(("off_by_one_constant", str(n - 1)))
        for kind, new in replacements:
            code = source[:begin] + new + source[end:]
            if code != source and _parses(code):
                out.append(Mutant(kind, code, tok.start[0], f"{tok.string!r} -> {new!r} on line {tok.start[0]}"))
    return out


def _simple(node: ast.AST) -> bool:
    return isinstance(node, (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript))


def _ast_mutants(source: str, body_start: int, starts: list[int]) -> list[Mutant]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines(keepends=True)
    out: list[Mutant] = []

    def span(node: ast.AST) -> tuple[int, int]:
        return (_offset(starts, lines, node.lineno, node.col_offset),  # type: ignore[attr-defined]
                _offset(starts, lines, node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def add(kind: str, code: str, line: int, description: str) -> None:
        if code != source and _parses(code):
            out.append(Mutant(kind, code, line, description))

    for node in ast.walk(tree):
        if not hasattr(node, "lineno"):
            continue
        if span(node)[0] < body_start:
            continue
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
                and 1 <= len(node.args) <= 2 and not node.keywords):
            variants = []
            if len(node.args) == 1:
                variants.append((node.args[0], "- 1"))
            else:
                variants += [(node.args[1], "+ 1"), (node.args[0], "+ 1")]
            for arg, delta in variants:
                b, e = span(arg)
                text = source[b:e]
                wrapped = text if _simple(arg) else f"({text})"
                add("off_by_one_range", source[:b] + f"{wrapped} {delta}" + source[e:], arg.lineno,
                    f"range bound {text!r} -> {wrapped + ' ' + delta!r} on line {arg.lineno}")
        if isinstance(node, ast.If) and not node.orelse and len(node.body) == 1 and isinstance(node.body[0], ast.Return):
            ret = node.body[0]
            value = ret.value
            if isinstance(value, ast.Constant) and value.value is not None and not isinstance(value.value, (str, bytes)):
                b, e = span(value)
                if isinstance(value.value, bool):
                    new = repr(not value.value)
                else:
                    new = repr(value.value + 1)
                add("wrong_edge_return", source[:b] + new + source[e:], value.lineno,
                    f"edge-case return {source[b:e]!r} -> {new!r} on line {value.lineno}")
            # Delete the whole guard (its lines), if nothing else shares them.
            first, last = node.lineno, node.end_lineno or node.lineno
            seg_start, seg_end = starts[first - 1], starts[last]
            head = lines[first - 1][: node.col_offset]
            if not head.strip() and source[span(node)[1]:seg_end].strip() == "":
                add("missing_edge_case", source[:seg_start] + source[seg_end:], first,
                    f"edge-case guard on lines {first}-{last} removed")
    return out


def generate_mutants(source: str, body_start: int = 0) -> list[Mutant]:
    """All single-edit mutants of ``source`` that touch only ``source[body_start:]`` and parse.

    Args:
        source: Python source (the full solution).
        body_start: Character offset where mutation may begin (e.g. ``len(prompt)`` for
            HumanEval, so the given signature and docstring stay intact).

    Returns:
        AST-based edits (range bounds, edge cases) then token edits, each in source order;
        duplicates (same code) removed, keeping the first. Empty when
        ``source`` does not parse.
    """
    if not _parses(source):
        return []
    starts = _line_starts(source)
    seen = {source}
    result = []
    # AST mutants first: when both make the same edit, the more specific kind is kept.
    for m in _ast_mutants(source, body_start, starts) + _token_mutants(source, body_start, starts):
        if m.code not in seen:
            seen.add(m.code)
            result.append(m)
    return result
