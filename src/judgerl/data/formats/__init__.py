"""The supported on-disk formats, one small module each, keyed by canonical name.

Detection (:func:`judgerl.data.detect_format`) asks each format's ``matches`` about the first
records, which vote; the key sets are chosen to be disjoint, and a tie between formats is
reported as ambiguous rather than guessed.
"""

from __future__ import annotations

from judgerl.data.formats import (
    autoj,
    canonical,
    generic,
    hh_rlhf,
    judgebench,
    llmbar,
    pandalm,
    rewardbench,
    rmbench,
)
from judgerl.data.formats.base import Format, RecordContext

#: Canonical format name -> adapter.
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        llmbar.FORMAT,
        pandalm.FORMAT,
        judgebench.FORMAT,
        rmbench.FORMAT,
        autoj.FORMAT,
        rewardbench.FORMAT,
        hh_rlhf.FORMAT,
        generic.FORMAT,
        canonical.FORMAT,
    )
}

#: Other spellings accepted for ``format=`` / ``--format`` (lower-cased, ``_`` -> ``-``).
ALIASES: dict[str, str] = {
    "rm-bench": "rmbench",
    "auto-j": "autoj",
    "reward-bench": "rewardbench",
    "hh": "hh-rlhf",
    "hhrlhf": "hh-rlhf",
    "canonical": "judgerl",
    "jsonl": "generic",
}

__all__ = ["ALIASES", "FORMATS", "Format", "RecordContext"]
