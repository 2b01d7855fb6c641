"""Arithmetic-verification preference pairs derived from GSM8K solutions.

GSM8K reference solutions annotate every calculation as ``<<48/2=24>>``. Each annotation with
two integer operands, one of ``+ - *`` and an integer result becomes a verifiable pair:

    prompt   = "What is 48 + 24?"
    chosen   = "48 + 24 = 72"            (the gold result, checked by re-evaluating)
    rejected = "48 + 24 = 74"            (a typical slip: off by 1, 2 or 10, or two digits swapped)

These are short (fast to train on 2 CPU cores) and need no human labels: the label is the
arithmetic itself. ``meta`` carries ``expression``, ``value``, ``wrong`` and a short
``rationale`` used by the templated SFT warm-up.
"""

from __future__ import annotations

import ast
import json
import operator
import random
import re
from pathlib import Path

from judgerl.types import PreferencePair

_CALC = re.compile(r"<<\s*(\d{1,4})\s*([-+*])\s*(\d{1,4})\s*=\s*(-?\d+(?:\.0+)?)\s*>>")


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}
#: The text an expression may hold: ASCII digits, + - *, parentheses and single spaces (no comments,
#: newlines, hex, underscores: the expression is copied verbatim into the teacher's code and thought).
_EXPRESSION_TEXT = re.compile(r"[0-9+\-*() ]+")
MAX_EXPRESSION_CHARS = 200
#: Values beyond this many digits are refused (no arithmetic pair needs them; str() of huge ints fails).
MAX_VALUE_DIGITS = 100
def evaluate(expression: str) -> int:
    """The value of an integer expression of ``+ - *`` and parentheses (no names, no calls).

    Only ASCII digits, ``+ - * ( )`` and spaces are allowed, at most :data:`MAX_EXPRESSION_CHARS`
    characters, with a value of at most :data:`MAX_VALUE_DIGITS` digits.

    Raises:
        ValueError: anything else (names the expression).
    """

    def bad() -> ValueError:
        return ValueError(f"not an integer +-* expression: {expression!r}")

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            value = _OPS[type(node.op)](ev(node.left), ev(node.right))
            if value.bit_length() > 3.33 * MAX_VALUE_DIGITS:
                raise bad()
            return value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise bad()

    if (not isinstance(expression, str) or len(expression) > MAX_EXPRESSION_CHARS
            or not _EXPRESSION_TEXT.fullmatch(expression) or expression != expression.strip()):
        raise bad()
    try:
        value = ev(ast.parse(expression, mode="eval"))
    except (SyntaxError, RecursionError, MemoryError):
        raise bad() from None
    if len(str(abs(value))) > MAX_VALUE_DIGITS:
        raise bad()
    return value


def _wrong_value(value: int, rng: random.Random) -> int:
    """A plausible wrong result close to ``value`` (never equal to it, never negative)."""
    candidates = {value + 1, value - 1, value + 2, value - 2, value + 10, value - 10}
    s = str(value)
    if len(s) >= 2 and s[-1] != s[-2]:
        candidates.add(int(s[:-2] + s[-1] + s[-2]))
    options = sorted(c for c in candidates if c >= 0 and c != value)
    return rng.choice(options)


def build_arithmetic_pairs(
    gsm8k_path: str | Path,
    limit: int | None = None,
    seed: int = 0,
    max_value: int = 999,
    ops: str = "+-*",
) -> list[PreferencePair]:
    """Build arithmetic-verification pairs from a GSM8K jsonl file (``question``, ``answer`` fields).

    Args:
        gsm8k_path: ``gsm8k/train.jsonl`` or ``test.jsonl``.
        limit: Stop after this many pairs (after de-duplication; None = all).
        seed: Seed for choosing the wrong result.
        max_value: Keep only calculations whose operands and result are in [0, max_value].
        ops: Operators to keep (subset of ``"+-*"``).

    Returns:
        Pairs with ids ``gsm8k-arith-<line>-<k>``, source ``gsm8k/arith-<op>``, in file order,
        one per distinct expression.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: a line is not valid JSON or lacks ``answer`` (message names file and line).
    """
    path = Path(gsm8k_path)
    rng = random.Random(seed)
    seen: set[str] = set()
    pairs: list[PreferencePair] = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                answer = rec["answer"]
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{lineno}: expected a JSON object with an 'answer' field ({e})") from None
            for k, m in enumerate(_CALC.finditer(answer)):
                a, op, b, res = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
                if op not in ops:
                    continue
                value = {"+": a + b, "-": a - b, "*": a * b}[op]
                if float(res) != value or not (0 <= value <= max_value) or max(a, b) > max_value:
                    continue
                expr = f"{a} {op} {b}"
                if expr in seen:
                    continue
                seen.add(expr)
                wrong = _wrong_value(value, rng)
                pairs.append(
                    PreferencePair(
                        id=f"gsm8k-arith-{lineno}-{k}",
                        prompt=f"What is {expr}?",
                        chosen=f"{expr} = {value}",
                        rejected=f"{expr} = {wrong}",
                        source=f"gsm8k/arith-{op}",
                        chosen_score=None,
                        rejected_score=None,
                        meta={"expression": expr, "value": value, "wrong": wrong, "rationale": f"{expr} = {value}"},
                    )
                )
                if limit is not None and len(pairs) >= limit:
                    return pairs
    return pairs


def _pair(pid: str, source: str, a: int, op: str, b: int, value: int, rng: random.Random) -> PreferencePair:
    expr = f"{a} {op} {b}"
    wrong = _wrong_value(value, rng)
    return PreferencePair(id=pid, prompt=f"What is {expr}?", chosen=f"{expr} = {value}", rejected=f"{expr} = {wrong}",
                          source=source, meta={"expression": expr, "value": value, "wrong": wrong,
                                               "rationale": f"{expr} = {value}"})


def generated_arithmetic_pairs(n: int, seed: int = 0, ops: str = "+-*", max_value: int = 999,
                               exclude: set[str] | frozenset[str] = frozenset()) -> list[PreferencePair]:
    """``n`` arithmetic-verification pairs on random expressions: no input file needed (the demo's data).

    Expressions look like GSM8K's calculations (two integer operands, one of ``+ - *``, operands and
    result in [0, ``max_value``]): ``+`` on operands 1…``max_value``/2, ``-`` with a non-negative result,
    ``*`` of a number up to 99 by 2…9. Drawn with ``random.Random(seed)``, each expression once,
    none from ``exclude`` (e.g. a training set's expressions). The wrong result is chosen as in
    :func:`build_arithmetic_pairs`. Ids ``arith-gen-<k>``, source ``generated/arith-<op>``.

    Raises:
        ValueError: ``n < 1``, or ``ops`` not a non-empty subset of ``"+-*"``.
    """
    if n < 1 or not ops or set(ops) - set("+-*"):
        raise ValueError(f"need n >= 1 and ops a subset of '+-*', got n={n}, ops={ops!r}")
    rng = random.Random(seed)
    seen: set[str] = set(exclude)
    pairs: list[PreferencePair] = []
    tries = 0
    while len(pairs) < n and tries < 100 * n:
        tries += 1
        op = rng.choice(ops)
        if op == "+":
            a, b = rng.randint(1, max_value // 2), rng.randint(1, max_value // 2)
        elif op == "-":
            a = rng.randint(10, max_value)
            b = rng.randint(1, a)
        else:
            a, b = rng.randint(2, min(99, max_value // 2)), rng.randint(2, 9)
        value = {"+": a + b, "-": a - b, "*": a * b}[op]
        expr = f"{a} {op} {b}"
        if value > max_value or expr in seen:
            continue
        seen.add(expr)
        pairs.append(_pair(f"arith-gen-{len(pairs)}", f"generated/arith-{op}", a, op, b, value, rng))
    return pairs


def held_out_arithmetic_pairs(
    gsm8k_path: str | Path, seen_path: str | Path, seed: int = 0, ops: str = "+-*"
) -> tuple[list[PreferencePair], int]:
    """Arithmetic pairs of ``gsm8k_path`` whose expression never occurs in ``seen_path`` (e.g. the
    training file), shuffled with ``random.Random(seed)``: the held-out set of
    ``bench/bench_train_judges.py`` and of ``judgerl data build arithmetic --held-out-from``.

    Returns:
        (pairs, number of pairs dropped because their expression is in ``seen_path``).

    Raises:
        FileNotFoundError, ValueError: as :func:`build_arithmetic_pairs`, for either file.
    """
    seen = {p.meta["expression"] for p in build_arithmetic_pairs(seen_path, seed=seed, ops=ops)}
    pairs = build_arithmetic_pairs(gsm8k_path, seed=seed, ops=ops)
    kept = [p for p in pairs if p.meta["expression"] not in seen]
    random.Random(seed).shuffle(kept)
    return kept, len(pairs) - len(kept)
