"""The response namespace: the texts under judgment as data in every executed code block.

With the protocol option ``namespace=True`` (``--protocol-arg namespace=true``) a tool-using judge
finds, in the globals of each ```` ```python ```` block it writes (beyond the TIR-Judge paper, whose
judge must re-type what it checks):

==============  ==========================================================================
name            value
==============  ==========================================================================
``PROMPT``      the user question (str)
``RESPONSES``   the responses in the order shown (list of str; Response 1 is ``RESPONSES[0]``)
``A``, ``B``    pairwise: the two responses
``RESPONSE``    pointwise: the one response
``code_of``     ``code_of(text) -> str``: a response's Python code (:mod:`.namespace_helpers`)
``number_of``   ``number_of(text) -> int | float | None``: the final number a response states
``value_of``    ``value_of(text) -> int | float | None``: the value of the arithmetic expression a text
                (the question) asks about, exact (:mod:`.namespace_arith`)
``passes``      ``passes(text, tests) -> int``: how many test lines a response's code passes; its code
                runs in a fresh interpreter and the tests in the judge's (:mod:`.namespace_passes`):
                what the response prints, an early exit, a patched builtin or a trace hook stay there
``words``, ...  the text measures of :mod:`.namespace_text` (``words(t)``, ``sentences(t)``,
                ``has_title(t)``, ...: what an instruction-following judge checks); documented in
                the prompt with the protocol option ``measures=True``
==============  ==========================================================================

The prompt documents the names (:func:`judgerl.protocols.common.namespace_instruction`); the
:class:`~judgerl.judge.Judge` (eval, serve, training rollouts, teachers) injects them through
:func:`namespaced_code`, the one place a program is wrapped. Texts are **data, never code**: they
travel as a base64 literal of their JSON, decoded in the sandbox, and the judge's own code travels
as another base64 literal that is compiled there (``<judge>`` in tracebacks) and run with the
namespace as its globals, so no text under judgment is ever spliced into source. The wrapper is not
part of the trajectory: the ``code`` segment holds what the judge wrote, and the observation is the
output of that code alone (errors cut to their last line as always).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from judgerl.protocols.common import NAMESPACE_NAMES
from judgerl.tools.namespace_text import MEASURES

#: Largest namespace (UTF-8 bytes of its JSON) sent to the sandbox; larger texts make the code block
#: fail with a ``NamespaceTooLarge`` error instead of a request the sandbox would refuse (64 MiB).
MAX_NAMESPACE_BYTES = 8 * 1024 * 1024
#: The helpers' sources, executed in this order in one globals dict inside the sandbox.
_HELPERS = "\n".join(Path(__file__).with_name(f).read_text(encoding="utf-8")
                     for f in ("namespace_helpers.py", "namespace_arith.py", "namespace_text.py", "namespace_passes.py"))
#: The helper functions the judge's code finds (the text measures are there in every namespace; the prompt names
#: them only with the protocol option ``measures``).
HELPER_NAMES = ("code_of", "number_of", "value_of", "passes", *MEASURES)
_KINDS = ("pairwise", "pointwise", "listwise")


def response_namespace(kind: str, prompt: str, responses: Sequence[str]) -> dict[str, Any]:
    """The data names of one judgment (the helpers are added by :func:`namespaced_code`).

    Args:
        kind: The protocol kind (``pairwise``, ``pointwise``, ``listwise``).
        prompt: The user question.
        responses: The texts under judgment, in the order shown.

    Returns:
        ``{"PROMPT": ..., "RESPONSES": [...]}`` plus ``A``/``B`` (pairwise) or ``RESPONSE``
        (pointwise): the names of :data:`judgerl.protocols.common.NAMESPACE_NAMES` for ``kind``.

    Raises:
        ValueError: unknown kind, or a number of responses that does not fit it.
        TypeError: a prompt or response that is not a str.
    """
    if kind not in _KINDS:
        raise ValueError(f"unknown protocol kind {kind!r}; expected one of {', '.join(_KINDS)}")
    items = list(responses)
    if not isinstance(prompt, str) or not all(isinstance(r, str) for r in items):
        raise TypeError("the response namespace holds texts: prompt and responses must be str")
    need = {"pairwise": 2, "pointwise": 1}.get(kind)
    if (need is not None and len(items) != need) or (need is None and len(items) < 2):
        raise ValueError(f"a {kind} judgment shows {need or 'at least 2'} response(s), got {len(items)}")
    ns: dict[str, Any] = {"PROMPT": prompt, "RESPONSES": items}
    for name, text in zip(NAMESPACE_NAMES[kind], items):
        ns[name] = text
    return ns


def _literal(text: str) -> str:
    """A Python string literal of ``text``'s UTF-8 (surrogates escaped) in base64: [A-Za-z0-9+/=] only."""
    return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")


def namespaced_code(code: str, namespace: Mapping[str, Any]) -> str:
    """The program the sandbox runs for the judge's ``code`` with ``namespace`` defined.

    The program defines the helpers of :mod:`judgerl.tools.namespace_helpers` and
    :mod:`judgerl.tools.namespace_passes` and the names of
    ``namespace`` (JSON values) in a fresh globals dict with ``__name__ == "__main__"``, then
    compiles ``code`` as ``<judge>`` and executes it there. What it prints, and the last line of its
    error, are those of ``code`` alone.

    Args:
        code: The judge's code block (already dedented), any text.
        namespace: JSON-serialisable names (:func:`response_namespace`).

    Returns:
        Python source; when the namespace is larger than :data:`MAX_NAMESPACE_BYTES` a program that
        only raises ``NamespaceTooLarge`` (the judge's code is not run).

    Raises:
        TypeError: ``code`` is not a str, or a namespace value is not JSON-serialisable.
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be a str, got {type(code).__name__}")
    data = json.dumps(dict(namespace), ensure_ascii=True)
    if len(data) > MAX_NAMESPACE_BYTES:
        return ("class NamespaceTooLarge(Exception):\n    pass\n"
                f"raise NamespaceTooLarge('the texts under judgment are {len(data)} bytes, over the "
                f"{MAX_NAMESPACE_BYTES} bytes the sandbox takes')\n")
    return (
        "import base64 as _b, json as _j\n"
        "_h = {'__name__': 'judgerl_namespace'}\n"
        f"exec(compile(_b.b64decode('{_literal(_HELPERS)}').decode(), '<namespace>', 'exec'), _h)\n"
        "_g = {'__name__': '__main__', '__builtins__': __builtins__}\n"
        f"_g.update((_n, _h[_n]) for _n in {HELPER_NAMES!r})\n"
        f"_g.update(_j.loads(_b.b64decode('{_literal(data)}').decode()))\n"
        f"_c = compile(_b.b64decode('{_literal(code)}').decode('utf-8', 'surrogatepass'), '<judge>', 'exec')\n"
        "del _b, _j, _h\n"
        "exec(_c, _g)\n"
    )


__all__ = ["HELPER_NAMES", "MAX_NAMESPACE_BYTES", "namespaced_code", "response_namespace"]
