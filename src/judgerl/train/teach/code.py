"""The code teacher: run each response's code on the prompt's visible examples, compare pass counts.

For the pairs of :mod:`judgerl.data.builders.code_pairs` (``meta["tests"]``: the visible example
asserts the prompt shows, the only tests a judge may run; the hidden tests are never used). The
teacher's code, run in the sandbox with the response namespace::

    tests = ['assert add(1, 2) == 3', ...]
    print("A", passes(A, tests), "of", len(tests))
    print("B", passes(B, tests), "of", len(tests))

:func:`~judgerl.tools.namespace_passes.passes` runs each response's code in a fresh interpreter apart
from this program (its output discarded) and the tests here, on the values its functions return, so a
response cannot print forged ``A 3 of 3`` lines, exit early so that the other response's line never
prints, patch ``print`` / ``len`` / the other response's names or the harness, or win with an object
whose ``__eq__`` always says True; an endless loop costs it its own count only.

It reads ``A 3 of 3`` / ``B 2 of 3`` back: the response passing more examples wins; equal counts
(the mutant passes every visible example) give no verdict and the pair is dropped. Pointwise: the
top of the scale when every example passes, else the bottom. The code needs the namespace (copying
a whole program into a string literal is what the namespace exists to avoid): a protocol without
it, or a judge without tools, is refused for code pairs.
"""

from __future__ import annotations

from typing import Any

from judgerl.train.teach.base import Case, Turn, binary_score, pick, read_counts, shown_names
from judgerl.types import PreferencePair

_RUN = """tests = {tests}
{prints}"""


class CodePlan:
    """The code domain plan (see the module docstring)."""

    domain = "code"

    def accepts(self, pair: PreferencePair) -> bool:
        return pair.meta.get("domain") == "code" and bool(pair.meta.get("tests"))

    def prepare(self, pair: PreferencePair, protocol: Any, tools: bool) -> list[str]:
        if not tools or not protocol.namespace:
            raise ValueError(f"pair {pair.id!r}: the code teacher runs the responses' code: it needs tools "
                             "and the response namespace (protocol option namespace=true)")
        tests = pair.meta.get("tests")
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t.strip() for t in tests):
            raise ValueError(f"pair {pair.id!r}: meta['tests'] must be a non-empty list of assert lines")
        for t in tests:
            compile(t, "<test>", "exec")  # raises SyntaxError (a ValueError) on a malformed example
        return list(tests)

    def first(self, case: Case, seed: int | None) -> Turn:
        names = shown_names(case)
        label = (lambda n: f'"{n}", ') if len(names) > 1 else (lambda n: "")
        prints = "".join(f'print({label(n)}passes({n}, tests), "of", len(tests))\n' for n in names)
        code = _RUN.format(tests="[" + ",\n         ".join(repr(t) for t in case.data) + "]", prints=prints)
        what = "the code" if len(names) == 1 else "both programs"
        return Turn(f"Let me run {what} on the examples from the question.", code)

    def after(self, case: Case, observation: str) -> Turn:
        counts = read_counts(observation, len(case.responses))
        if counts is None:
            return Turn("The check failed, so I cannot compare the programs.")
        said = " ".join(f"{n} passes {p} of {t}." for n, (p, t) in zip(shown_names(case), counts))
        if case.protocol.kind == "pointwise":
            p, t = counts[0]
            return Turn(said, decision=pick(case.protocol, [binary_score(case.protocol, p == t)], "")[1])
        thought, decision = pick(case.protocol, [p for p, _ in counts], said + " ")
        return Turn(thought, decision=decision)
