"""The supported on-disk formats, one small module each, keyed by canonical name.

Detection (:func:`judgerl.data.detect_format`) asks each format's ``matches`` about the first
records, which vote; the key sets are chosen to be disjoint, and a tie between formats is
reported as ambiguous rather than guessed.
"""

from __future__ import annotations

from judgerl.data.formats import (
    autoj,
    battles,
    canonical,
    chat,
    generic,
    helpsteer3,
    hh_rlhf,
    judgebench,
    llmbar,
    pandalm,
    ppe_correctness,
    rewardbench,
    rewardbench2,
    rmbench,
    ultrafeedback,
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
        rewardbench2.FORMAT,
        helpsteer3.FORMAT,
        ultrafeedback.FORMAT,
        chat.FORMAT,
        battles.ARENA,
        battles.MTBENCH,
        battles.PPE,
        ppe_correctness.FORMAT,
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
    "reward-bench-2": "rewardbench2",
    "rewardbench-2": "rewardbench2",
    "helpsteer-3": "helpsteer3",
    "skywork": "chat-pairs",
    "chatbot-arena": "arena",
    "mt-bench-human": "mtbench-human",
    "ppe-best-of-k": "ppe-correctness",
    "hh": "hh-rlhf",
    "hhrlhf": "hh-rlhf",
    "canonical": "judgerl",
    "jsonl": "generic",
}

__all__ = ["ALIASES", "FORMATS", "Format", "RecordContext"]
