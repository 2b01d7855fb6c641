"""The helpers of the response namespace: ``code_of(text)``, ``number_of(text)`` and ``passes(text, tests)``.

A tool-using judge with the response namespace on (:mod:`judgerl.tools.namespace`) finds the texts
under judgment as variables (``A``, ``B``, ``RESPONSE``, ``RESPONSES``, ``PROMPT``) and these three
functions in the namespace of every code block it writes, so it calls ``passes(A, tests)`` or
``number_of(B) == value`` instead of re-typing a response (copying is what small judges get wrong;
``exec(code_of(A))`` in the judge's own program lets the response's code rewrite that program).

This module is **standard-library only and self-contained**: its source text is executed inside the
sandbox (which sees no site-packages and no judgerl) before the judge's code, and the host imports
the same functions (the programmatic teachers read claims with them where no code runs), so the
host and the sandbox read every text the same way.

* :func:`code_of` -- a response's Python code: its ```` ```python ```` / ```` ```py ```` /
  ```` ```python3 ```` blocks joined by blank lines; without such a block its bare ```` ``` ````
  blocks; without any fence the whole text. Fences follow :mod:`judgerl.text.codeblocks`'s line
  rule (a fence line of three backticks, indented at most three spaces); a block left open at the
  end of the text runs to the end (a response cut short).
* :func:`number_of` -- the final number a response states: the first number after its last answer
  marker (``the answer is``, ``answer:``, ``result:``, ``####``, ``\\boxed{``, ``total is``, ...),
  else its last number. Thousands separators (``23,060``), signs (``-45``, ``−45``),
  decimals and ``$`` / ``%`` around the number are read; numbers written in English words
  (``two hundred sixty-seven``, ``minus forty-five``) count as numbers; a number in a power, a
  fraction or a date (``10^100``, ``1/2``) or after ``not`` / ``never`` is no claim, ``42 or 43`` states no
  one number, and a correction right before a number (``The answer is 42. Actually, no: 43.``, ``Oops,
  43.``) retracts the claim before it. After an answer marker a number inside arithmetic (``72 - 2``;
  ``3 + 4 = 7`` states 7) is no claim and a hedge, a range or a list (``72 (or 74)``, ``72 to 74``,
  ``72-74``, ``72 ± 2``, ``between 72 and 74``, ``72, 73 or 74``) states no one number; a marked statement
  whose numbers are all no claims (``The answer is not 72``) states none. Dashes as minus signs (``–45``),
  digits with a scale word (``72 thousand``) and zero-width characters are read as a reader sees them.
  Returns an ``int`` when the value is whole, else a ``float``; None when the text states no number.
* :func:`passes` -- how many test lines a response's code passes, run **apart** from the judge's
  code: in a forked child whose output is discarded, so the response cannot print, exit early for,
  patch or rebind anything of the judge's program or the other response's check (see its docstring).
"""

import builtins as _builtins
import re

_FENCE_OPEN = re.compile(r"^[ \t]{0,3}```[ \t]*([^\s`]*)[^\n`]*$")
_FENCE_CLOSE = re.compile(r"^[ \t]{0,3}```[ \t]*$")
_PYTHON = ("python", "py", "python3")


def code_of(text):
    """The Python code of ``text`` (see the module docstring); ``""`` for a non-str."""
    if not isinstance(text, str):
        return ""
    blocks, lang, body, inside = [], "", [], False
    for line in text.split("\n"):
        if not inside:
            m = _FENCE_OPEN.match(line)
            if m:
                inside, lang, body = True, m.group(1).lower(), []
        elif _FENCE_CLOSE.match(line):
            blocks.append((lang, "\n".join(body)))
            inside = False
        else:
            body.append(line)
    if inside:
        blocks.append((lang, "\n".join(body)))
    if not blocks:
        return text
    python = [b for lang, b in blocks if lang in _PYTHON]
    bare = [b for lang, b in blocks if lang == ""]
    return "\n\n".join(python or bare) + "\n" if (python or bare) else text


_ONES = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i >= 2}
_SCALES = {"thousand": 10 ** 3, "million": 10 ** 6, "billion": 10 ** 9, "trillion": 10 ** 12}
_WORD = "|".join(sorted([*_ONES, *_TENS, *_SCALES, "hundred"], key=len, reverse=True))
#: A run of number words: "two hundred and sixty-seven", "one thousand, two hundred", "minus five".
_WORDS_RUN = re.compile(
    rf"(?<![\w-])(?:(minus|negative)\s+)?((?:{_WORD})(?:(?:[\s-]+|,\s*|\s+and\s+)(?:{_WORD}))*)(?![\w-])",
    re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![\w.,])([-\u2212]?)\$?((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?![\w]|[.,]\d)")
_MARKER = re.compile(
    r"(?:\banswer\b[*\s]*(?:is|was|would be|=|:)|\bresult\b[*\s]*(?:is|=|:)|\bfinal\b[^\n.:]{0,20}?(?:is|=|:)"
    r"|####|\\boxed\s*\{|\btotal\b[*\s]*(?:is|=|:))",
    re.IGNORECASE)


#: Largest value a run of number words may name (``str()`` of a larger int exceeds Python's digit limit).
_WORDS_CAP = 10 ** 4000
#: A number that is part of a power, a fraction or a date (``10^100``, ``1.5 × 10^3``, ``1/2``) or follows
#: a negation (``not 42``) is no claim of its own.
_PART_AFTER = re.compile(r"\s*(?:\^|\*\*|[×x*]\s*10\s*(?:\^|\*\*))|\s*/\s*[-\u2212]?\d")
_PART_BEFORE = re.compile(r"[\d)]\s*(?:\^|\*\*|/)\s*$|(?:\bnot|n't|\bnever)[\s*_~`\"']+$", re.IGNORECASE)
#: ``42 or 43``: a hedge between two numbers states no one number (after a marker: :data:`_SPREAD_AFTER`).
_HEDGE_BEFORE = re.compile(r"\d\s*,?\s+or\s+$")
#: ``The answer is 42. Actually, no: 43.``: a correction right before a number that ends its sentence retracts
#: the claim before it (``Actually, 3 different ways give it`` corrects nothing).
_CORRECTION = re.compile(
    r"(?:\b(?:actually|wait|correction|sorry|i mean|scratch that|on second thought|make that|oops|hmm|my mistake"
    r"|my bad|rather|let me re-?(?:do|compute|check|calculate)(?: (?:that|this|it))?)|(?<=[.!?] )no)\b"
    r"(?:[\s,:;.!\u2014]|-(?!\d))*(?:no\b(?:[\s,:;.!\u2014]|-(?!\d))*)?"
    r"(?:(?:it(?:'s|\u2019s|\s+is)|make that|that should be|it should be|the answer is)\s+)?(?=[-\u2212$]?\d)",
    re.IGNORECASE)
_CLAIM_END = re.compile(r"[\s*_%)\]]*(?:$|[.!;,:\n])")
#: After an answer marker: a number inside arithmetic (``72 - 2``, ``3 + 4 = 7``: the ``7`` is the claim) is no
#: claim of its own, and one followed by another candidate -- a hedge (``72 (or 74)``, ``72, or maybe 74``,
#: ``72 and/or 74``), a range (``72 to 74``, ``72-74``, ``72 ± 2``, ``between 72 and 74``) or a list ending in
#: ``or`` / ``and`` (``72, 73 or 74``) -- states no one number.
_OP_AFTER = re.compile(r"\s*(?:[-+*\u00d7\u00b7\u00f7:\u2044\u2215]\s*[-\u2212]?\$?(?:\d|[a-z]\b)"
                       r"|(?:\u2192|->|=>)\s*[-\u2212]?\$?\d)", re.IGNORECASE)  # ``72 + x``; ``72 → 74``: 74
#: A claim its writer disowns (``72 (incorrect)``, ``72 ✗``) or bounds (``at least 72``, ``< 72``) names no value.
_DISOWNED_AFTER = re.compile(r"\s*(?:\(\s*(?:incorrect|wrong)\b|[\u2717\u2718\u274c])", re.IGNORECASE)
_BOUND_BEFORE = re.compile(r"(?:\bat\s+(?:least|most)|\b(?:more|less|fewer|greater)\s+than"
                           r"|(?<![-=])[<>\u2264\u2265]=?)\s*$", re.IGNORECASE)
#: Struck-out text (``~~72~~ 74``, ``<del>72</del>``, ``<s>72</s>``) is retracted: read as if absent.
_STRUCK = re.compile(r"~~[^~\n]{0,200}~~|<(del|s|strike)>[^<]{0,200}</\1>", re.IGNORECASE)
_OP_BEFORE = re.compile(r"[\d)]\s*[-+*\u00d7\u00b7\u00f7:\u2044\u2215]\s*$")
_SPREAD_AFTER = re.compile(
    r"\s*(?:\(?\s*,?\s*(?:\.{2,3}|\u2026)?\s*(?:or|and/or)\b[^\n.;:\d]{0,24}?|(?:to|~|\u00b1|\+/?-)\s*"
    r"|,?\s+(?:if|when|unless)\b[^\n.;]{0,60}?\b(?:else|otherwise)\b[^\n.;\d]{0,12}?"
    r"|(?:\s*,\s*[-\u2212]?\$?\d[\d.]*)+\s*,?\s*(?:or|and)\s+)[-\u2212]?\$?\d", re.IGNORECASE)
_SPREAD_BEFORE = re.compile(r"\b(?:between|from)\s+[-\u2212]?\$?$", re.IGNORECASE)
#: Dashes a text may write a minus sign with (``–45``, ``‐45``, ``－45``) and digits followed by a scale word
#: (``72 thousand``, ``1.5 million``): read as ``-45``, ``72000``, ``1500000``.
_DASH_SIGN = re.compile("[\u2010-\u2015\u2212\ufe63\uff0d](?=\\d)")
_DIGITS_SCALE = re.compile(r"(?<![\w.,])(\d{1,15}(?:\.\d{1,15})?)\s+(hundred|thousand|million|billion|trillion)\b",
                           re.IGNORECASE)


def _claims(text, start=0):
    """The numbers of ``text`` from ``start`` on that are claims of their own (:data:`_PART_AFTER`)."""
    for m in _NUMBER.finditer(text, start):
        if not _PART_AFTER.match(text, m.end()) and not _PART_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
            yield m


def _words_value(words):
    """The integer of a run of number words, or None when the words do not form one number."""
    total, current, seen = 0, 0, False
    for w in re.split(r"[\s,-]+", words.lower()):
        if not w or w == "and":
            continue
        if w in _ONES:
            current += _ONES[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = (current or 1) * 100
        elif w in _SCALES:
            total += (current or 1) * _SCALES[w]
            current = 0
        else:
            return None
        if current > _WORDS_CAP or total > _WORDS_CAP:  # "hundred hundred ...": no claim, and no quadratic work
            return None
        seen = True
    return total + current if seen else None


def _spell_out(text):
    """``text`` with each run of number words replaced by its digits."""
    def one(m):
        value = _words_value(m.group(2))
        if value is None:
            return m.group(0)
        return ("-" if m.group(1) else "") + str(value)
    return _WORDS_RUN.sub(one, text)


def _as_number(sign, digits):
    raw = digits.replace(",", "")
    if len(raw) > 4000:  # beyond int()'s default digit limit: not a claim a judge can check
        return None
    if "." in raw:
        value = float(raw)
        if value.is_integer() and abs(value) < 2 ** 53:
            value = int(value)
    else:
        value = int(raw)
    return -value if sign else value


def _scaled(m):
    """``72 thousand`` -> ``72000`` (exact: decimal arithmetic)."""
    from decimal import Decimal

    value = Decimal(m.group(1)) * (100 if m.group(2).lower() == "hundred" else _SCALES[m.group(2).lower()])
    return str(int(value)) if value == value.to_integral_value() else str(value)


def _marked_claims(text, start):
    """The claims after an answer marker that are no operand of arithmetic (``72 - 2``; ``3 + 4 = 7`` gives 7)."""
    for m in _claims(text, start):
        if not _OP_AFTER.match(text, m.end()) and not _OP_BEFORE.search(text[max(0, m.start() - 8):m.start()]):
            yield m


def number_of(text):
    """The final number ``text`` states (see the module docstring), or None."""
    if not isinstance(text, str):
        return None
    import unicodedata

    text = "".join(c for c in text if unicodedata.category(c) != "Cf")  # zero-width characters, soft hyphens
    text = _STRUCK.sub(" ", text)
    text = _spell_out(_DIGITS_SCALE.sub(_scaled, _DASH_SIGN.sub("-", text.replace("\u2212", "-"))))
    markers = list(_MARKER.finditer(text))
    if markers:
        m = next(_marked_claims(text, markers[-1].end()), None)
        if m is None and _NUMBER.search(text, markers[-1].end()):
            return None  # the last marked statement names no number of its own (``not 42``, ``72 - 2``)
        if m is not None:
            for c in reversed(list(_CORRECTION.finditer(text, m.end()))):
                fix = next(_claims(text, c.end()), None)
                if fix is not None and fix.start() == c.end() and _CLAIM_END.match(text, fix.end()):
                    m = fix  # the claim retracted: the number the last correction states
                    break
            if _SPREAD_AFTER.match(text, m.end()) or _DISOWNED_AFTER.match(text, m.end()) \
                    or _SPREAD_BEFORE.search(text[max(0, m.start() - 12):m.start()]) \
                    or _BOUND_BEFORE.search(text[max(0, m.start() - 16):m.start()]):
                return None
            return _as_number(*m.groups())
    found = list(_claims(text))
    if not found or _HEDGE_BEFORE.search(text[max(0, found[-1].start() - 40):found[-1].start()]):
        return None
    return _as_number(*found[-1].groups())


#: Builtin types whose values compare by the interpreter's own rules (no class a response defines).
_ATOMS = (int, float, complex, bool, str, bytes, type(None))
_BOXES = (list, tuple, set, frozenset, dict)
#: The builtins the harness calls after a response's code ran, bound when this module is loaded: a response
#: that rebinds ``builtins.all`` (or ``type``, ``eval``, ``bool``, ...) cannot change how its tests are counted.
_HARNESS = {"all": all, "bool": bool, "eval": eval, "exec": exec, "type": type, "zip": zip, "dict": dict, "vars": vars,
            "isinstance": isinstance, "setattr": setattr, "builtins": _builtins}
_MISSING = object()


def _is_one_of(kind, types):
    """``kind in types`` by identity: a class whose metaclass ``__eq__`` says yes to every type is none of them."""
    for t in types:
        if kind is t:
            return True
    return False


def _plain(value, depth=0, _type=type):
    """Whether ``value`` is data of builtin types only (its ``==`` cannot be a response's ``__eq__``)."""
    kind = _type(value)
    if _is_one_of(kind, _ATOMS):
        return True
    if not _is_one_of(kind, _BOXES) or depth > 50:
        return False
    items = [x for kv in value.items() for x in kv] if kind is _BOXES[4] else value
    for x in items:
        if not _plain(x, depth + 1):
            return False
    return True


def _compiled_test(test):
    """One test line compiled before any response code runs: ``("cmp", operands, operators, names)`` for an
    ``assert`` of a comparison, ``("truth", expression, names)`` for any other ``assert``, ``("exec", code,
    names)`` for any other statement, ``names`` being every name the line refers to (:func:`_names`). Raises
    SyntaxError for a line that is not Python."""
    import ast
    import operator

    ops = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
    tree = ast.parse(test, "<test>")
    names = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)) | frozenset(
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))
    node = tree.body[0] if len(tree.body) == 1 else None
    if isinstance(node, ast.Assert):
        expr = node.test
        if isinstance(expr, ast.Compare):
            parts = tuple(compile(ast.Expression(e), "<test>", "eval") for e in (expr.left, *expr.comparators))
            return "cmp", parts, tuple(ops[type(o)] for o in expr.ops), names  # tuples: no response edits them
        return "truth", compile(ast.Expression(expr), "<test>", "eval"), names
    return "exec", compile(tree, "<test>", "exec"), names


def _passed(check, ns, h=_HARNESS):
    """Whether one compiled test passes in ``ns``: a compared or asserted value must be plain data
    (an object whose ``__eq__`` or ``__bool__`` always says yes passes nothing). Calls only the builtins
    bound in :data:`_HARNESS`."""
    kind = check[0]
    if kind == "exec":
        h["exec"](check[1], ns)
        return True
    if kind == "truth":
        value = h["eval"](check[1], ns)
        return _plain(value) and h["bool"](value)
    values = [h["eval"](part, ns) for part in check[1]]
    return h["all"](_plain(v) for v in values) and h["all"](
        h["bool"](op(a, b)) for op, a, b in h["zip"](check[2], values, values[1:]))


def _module_state():
    """Every loaded module (but ``sys`` and ``__main__``) with a copy of its namespace, taken before a response
    runs: what it rebinds afterwards (``builtins.abs = ...``, ``math.isclose = ...``) is found by identity."""
    import sys

    out = []
    for name, m in list(sys.modules.items()):
        if name in ("sys", "__main__"):
            continue
        try:
            out.append((m, dict(vars(m))))
        except TypeError:  # None or an object without a namespace
            pass
    return out


def _tampered(before, ns, names, h=_HARNESS):
    """What a response's code changed that the test lines refer to (``names``): ``(rebinds, shadows)`` --
    module attributes it rebound, as ``(module, name, original)``, and the names of its own globals that hide
    a builtin (``abs = lambda x: 0``, or a ``__builtins__`` of its own). Calls only :data:`_HARNESS` builtins."""
    builtins = h["builtins"]
    rebinds = [(m, k, v) for m, snap in before for k, v in snap.items()
               if k in names and h["vars"](m).get(k, _MISSING) is not v]
    real = h["dict"](h["vars"](builtins))
    for m, k, v in rebinds:
        if m is builtins:
            real[k] = v
    own = ns.get("__builtins__", builtins)
    own = h["vars"](builtins) if own is builtins else own
    if not h["isinstance"](own, h["dict"]):
        own = {}
    shadows = {k for k in names if k in real and (ns[k] if k in ns else own.get(k, _MISSING)) is not real[k]}
    return rebinds, shadows


def _passed_untampered(check, truth, rebinds, h=_HARNESS):
    """:func:`_passed` in ``truth`` (the response's globals without the names that hide a builtin) with the
    module attributes the response rebound restored for the time of the test, then rebound again."""
    current = [(m, k, h["vars"](m).get(k, _MISSING)) for m, k, _ in rebinds]
    try:
        for m, k, v in rebinds:
            h["setattr"](m, k, v)
        return _passed(check, truth)
    finally:
        for m, k, v in current:
            if v is _MISSING:
                h["vars"](m).pop(k, None)
            else:
                h["setattr"](m, k, v)


def passes(text, tests, timeout_s=3.0):
    """How many of ``tests`` pass after the Python code of ``text`` (:func:`code_of`) has run.

    The code runs in a **forked child** with fresh globals (``__name__ == "response"``), its
    stdin, stdout and stderr on ``/dev/null``; each test line then runs in those globals. The child
    reports each test's outcome to this process over a pipe, tagged with a random per-call token,
    and this process counts them: what the response prints, an early exit (``sys.exit``,
    ``os._exit``, ``atexit``), a patched builtin, a rebound name or an endless loop stay in the
    child, and the judge's own code (the other response's check, what it prints) is untouched. An
    ``assert`` of a comparison passes only when every compared value is plain data (builtin numbers,
    strings, bytes, None and lists / tuples / sets / dicts of them), an ``assert`` of another
    expression only when its value is plain and true: an object whose ``__eq__`` always says True
    passes nothing. A response whose code fails to compile or raises passes no test.

    Args:
        text: A response (its code is :func:`code_of` ``(text)``); a non-str passes nothing.
        tests: Test lines (``assert f(1) == 2``), compiled here before any response code runs.
        timeout_s: Seconds the child may run (past it, it is killed; tests it reported count).

    Returns:
        The number of tests that passed (``0 .. len(tests)``).

    Raises:
        SyntaxError: a test line is not Python. TypeError: ``tests`` is not a list of str.

    Limits: the child is the response's own process, so code written against this harness (reading
    the token from its memory, rebinding or re-coding this module's functions or ``_HARNESS``, a
    ``sys.settrace`` hook that rewrites the harness frame's locals) can report passes it did not earn
    for itself -- never for the other response, and never in the judge's output.
    """
    import os
    import secrets
    import select
    import signal
    import sys
    import time

    if not isinstance(tests, (list, tuple)) or not all(isinstance(t, str) for t in tests):
        raise TypeError("passes(text, tests): tests must be a list of str (test lines)")
    checks = [_compiled_test(t) for t in tests]
    try:
        program = compile(code_of(text), "<response>", "exec") if isinstance(text, str) else None
    except (SyntaxError, ValueError):
        program = None
    if program is None or not checks:
        return 0
    token = secrets.token_hex(16).encode()
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the response's code, then the tests; it never returns
        # bound before the response's code runs, which may rebind them (os.write, os._exit, builtins, ...)
        report, leave, stop = os.write, os._exit, BaseException
        try:
            os.close(read)
            os.setpgid(0, 0)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            checks_of = tuple(enumerate(checks))
            names = frozenset().union(*(c[-1] for c in checks))
            before = _module_state()
            ns = {"__name__": "response"}
            exec(program, ns)
            rebinds, shadows = _tampered(before, ns, names)
            truth = None
            if rebinds or shadows:  # a test must pass with what it names as the response left it, and as it was
                truth = {k: v for k, v in ns.items() if k not in shadows}
                truth["__builtins__"] = _HARNESS["builtins"]
            for i, check in checks_of:
                try:
                    ok = _passed(check, ns) and (truth is None or _passed_untampered(check, truth, rebinds))
                except stop:
                    ok = False
                report(write, b"%s %d %d\n" % (token, i, 1 if ok else 0))
        finally:
            leave(0)
    os.close(write)
    data, deadline = b"", time.monotonic() + float(timeout_s)
    try:
        while len(data) < 1 << 20:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read], [], [], left)[0]:
                break
            chunk = os.read(read, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(read)
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.waitpid(pid, 0)
    seen = {}
    for line in data.split(b"\n"):
        parts = line.split(b" ")
        if len(parts) == 3 and parts[0] == token and parts[1].isdigit() and parts[2] in (b"0", b"1"):
            seen.setdefault(int(parts[1]), parts[2] == b"1")
    return sum(ok for i, ok in seen.items() if i < len(checks))
