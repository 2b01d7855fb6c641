"""Judge protocols: build a judge prompt, parse the judge's output into a :class:`Decision`.

======================  ==========  ===========================================================
name (aliases)          kind        final answer
======================  ==========  ===========================================================
``pav`` (``pairwise``)  pairwise    ``<verdict>A</verdict>`` (also ``<preference>``)   -- J1 PaV
``pas``                 pairwise    ``<score_A>x</score_A> <score_B>y</score_B>``      -- J1 PaS
``pavs``                pairwise    verdict + both scores                               -- J1 PaVS
``pos`` (``pointwise``) pointwise   ``<score>x</score>`` (``min_score``/``max_score``) -- J1 PoS
``listwise``            listwise    ``<best>k</best>`` or ``<ranking>2 > 1 > 3</ranking>`` (``mode``)
``arena``               pairwise    ``<verdict>[[A>>B]]</verdict>``: five levels     -- Arena-Hard
``template``            from file   the file's answer pattern (``path=FILE``; ``--prompt-template``)
======================  ==========  ===========================================================

Every protocol asks the judge to think inside ``<think>…</think>`` first, and works with or
without tools (``build(..., tools=True)``). Parsing rules: :mod:`judgerl.protocols.parsing`.
Every protocol takes the keyword option ``anti_hacking=True`` (an extra system instruction against
reward hacking: :data:`judgerl.protocols.common.ANTI_HACKING_INSTRUCTION`).

Example::

    proto = get_protocol("PaV")
    messages = proto.build(pair.prompt, [pair.chosen, pair.rejected])
    decision = proto.parse(completion.text)   # Decision(valid=True, verdict="A", ...)
"""

from __future__ import annotations

from typing import Any

from judgerl.protocols.arena import Arena
from judgerl.protocols.base import JudgeProtocol, ProtocolKind
from judgerl.protocols.common import ANTI_HACKING_INSTRUCTION
from judgerl.protocols.listwise import Listwise
from judgerl.protocols.pairwise import PaS, PaV, PaVS
from judgerl.protocols.parsing import INVALID_REASONS
from judgerl.protocols.pointwise import PoS
from judgerl.protocols.template import Template
from judgerl.text.untrusted import control_tags

#: Canonical (lower-case) protocol names -> classes.
PROTOCOLS: dict[str, type[JudgeProtocol]] = {
    "pav": PaV,
    "pas": PaS,
    "pavs": PaVS,
    "pos": PoS,
    "listwise": Listwise,
    "arena": Arena,
    "template": Template,
}

#: ``think`` and every shipped protocol's answer tags (each protocol class registers its own when it is
#: defined; :func:`judgerl.text.untrusted.control_tags` also holds those of protocols defined later).
CONTROL_TAGS: tuple[str, ...] = control_tags()

#: Extra names accepted by :func:`get_protocol` (J1's mixed-case names work case-insensitively).
ALIASES: dict[str, str] = {"pairwise": "pav", "pointwise": "pos"}


def get_protocol(name: str, **kwargs: Any) -> JudgeProtocol:
    """Make a judge protocol by name.

    Args:
        name: ``"pav"``, ``"pas"``, ``"pavs"``, ``"pos"``, ``"listwise"``, ``"arena"``
            (case-insensitive, so J1's ``"PaV"`` etc. work) or an alias from :data:`ALIASES`.
        **kwargs: Options of that protocol: ``min_score``/``max_score`` (PaS, PaVS, PoS),
            ``require_scores`` (PaVS), ``mode="best"|"rank"`` (listwise), ``path`` (template: the
            template file, :mod:`judgerl.protocols.template_file`); every protocol takes
            ``anti_hacking``, ``namespace`` and ``measures`` (bools; ``namespace``: the response namespace
            of tool-using judgments, :mod:`judgerl.tools.namespace`; ``measures``: its text measures named
            in the prompt, :mod:`judgerl.tools.namespace_text`).

    Raises:
        ValueError: unknown name, or a bad option value (e.g. ``min_score >= max_score``, ``measures``
            without ``namespace``).
        TypeError: an option the protocol does not take.
    """
    if not isinstance(name, str):
        raise TypeError(f"protocol name must be a str, got {type(name).__name__}")
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    cls = PROTOCOLS.get(key)
    if cls is None:
        known = sorted([*PROTOCOLS, *ALIASES])
        raise ValueError(f"unknown judge protocol {name!r}; known: {', '.join(known)}")
    for flag in ("anti_hacking", "namespace", "measures"):
        if flag in kwargs and not isinstance(kwargs[flag], bool):
            raise ValueError(f"get_protocol({name!r}): {flag} must be true or false, got {kwargs[flag]!r}")
    if kwargs.get("measures") and not kwargs.get("namespace"):
        raise ValueError(f"get_protocol({name!r}): measures documents functions of the response namespace: it "
                         "needs namespace=true")
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise TypeError(f"get_protocol({name!r}): {e}") from e


__all__ = [
    "ALIASES",
    "ANTI_HACKING_INSTRUCTION",
    "Arena",
    "CONTROL_TAGS",
    "INVALID_REASONS",
    "JudgeProtocol",
    "Listwise",
    "PROTOCOLS",
    "PaS",
    "PaV",
    "PaVS",
    "PoS",
    "ProtocolKind",
    "Template",
    "get_protocol",
]
