"""The arithmetic and chat mixtures of issue 23, written resumably through :class:`PairSink`.

``judgerl data build arith-mix`` and ``judgerl data build chat-mix`` call :func:`write_arith_mix` and
:func:`write_chat_mix`. Each mixture is a list of *items* (one per arithmetic form, one per GSM8K
file, one per chat file); the sink appends each item's pairs and records it in the ledger
``<out>.progress.jsonl``, so a killed build resumes at the next item and a second build with other
options into the same ``--out`` is refused (:class:`~judgerl.data.builders._sink.PairSink`).

The summary counts the pairs per item and per ``meta["domain"]`` (``arith/<form>``, ``chat``,
``safety``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from judgerl.data.builders._sink import PairSink
from judgerl.data.builders.arith_forms import FORMS, generate_form_pairs
from judgerl.data.builders.splits import HELD_OUT, check_split
from judgerl.types import PreferencePair

#: Generated pairs per form when no count is given.
DEFAULT_PER_FORM = {"train": 1000, HELD_OUT: 200}


def parse_forms(text: str) -> list[str]:
    """``"expression,word"`` -> ``["expression", "word"]`` (``"all"`` or empty: every form).

    Raises:
        ValueError: an unknown form (lists the valid ones).
    """
    forms = [f.strip() for f in text.split(",") if f.strip()]
    if not forms or forms == ["all"]:
        return list(FORMS)
    bad = [f for f in forms if f not in FORMS]
    if bad:
        raise ValueError(f"unknown arithmetic form(s) {', '.join(bad)}; expected some of {', '.join(FORMS)} or 'all'")
    return list(dict.fromkeys(forms))


def _write(out: str | Path, config: Mapping[str, Any],
           items: Sequence[tuple[str, Callable[[], list[PreferencePair]]]]) -> dict[str, Any]:
    sink = PairSink(out, config)
    for name, build in items:
        if sink.done(name):
            continue
        pairs = build()
        sink.finish(name, pairs, "ok" if pairs else "empty", built=len(pairs),
                    **{f"domain:{d}": n for d, n in Counter(str(p.meta.get("domain")) for p in pairs).items()})
    summary = sink.summary()
    summary["by_item"] = {k: v.get("written", 0) for k, v in sink.status.items()}
    return summary


def write_arith_mix(out: str | Path, split: str, forms: Sequence[str] = FORMS, per_form: int | None = None,
                    seed: int = 0, gsm8k: str | Path | None = None, gsm8k_exclude: str | Path | None = None,
                    gsm8k_limit: int | None = None) -> dict[str, Any]:
    """Write the arithmetic mixture of one split: ``per_form`` generated pairs of each form, plus one
    pair per question of ``gsm8k`` (word problems) when given.

    Args:
        out: Output JSONL (appended to; resumable).
        split: ``"train"`` or ``"held-out"``.
        forms: Forms of :data:`~judgerl.data.builders.arith_forms.FORMS`.
        per_form: Generated pairs per form (default :data:`DEFAULT_PER_FORM` of the split).
        seed: Seed of every draw (never of the split).
        gsm8k: A GSM8K JSONL (``train.jsonl`` for training, ``test.jsonl`` for held-out); None: the
            generated forms only (no data files needed).
        gsm8k_exclude: A GSM8K file whose questions are left out (the training file, for held-out).
        gsm8k_limit: At most this many GSM8K pairs.

    Returns:
        The sink's summary plus ``by_item`` (pairs per item: the forms and ``gsm8k:<file name>``).

    Raises:
        ValueError: bad split or form, a configuration other than the one ``out`` was begun with.
        FileNotFoundError, judgerl.data.DataFormatError: a bad GSM8K file (names file and line).
    """
    from judgerl.data.builders.gsm8k_forms import gsm8k_word_pairs

    check_split(split)
    forms = parse_forms(",".join(forms))
    n = per_form or DEFAULT_PER_FORM[split]
    items: list[tuple[str, Callable[[], list[PreferencePair]]]] = [
        (form, lambda form=form: generate_form_pairs(form, split, n, seed=seed)) for form in forms]
    if gsm8k is not None and "word" in forms:
        items.append((f"gsm8k:{Path(gsm8k).name}",
                      lambda: gsm8k_word_pairs(gsm8k, split, seed=seed, limit=gsm8k_limit, exclude_from=gsm8k_exclude)))
    config = {"kind": "arith-mix", "split": split, "forms": forms, "per_form": n, "seed": seed,
              "gsm8k": str(gsm8k) if gsm8k else None, "gsm8k_exclude": str(gsm8k_exclude) if gsm8k_exclude else None,
              "gsm8k_limit": gsm8k_limit}
    return _write(out, config, items)


def write_chat_mix(out: str | Path, inputs: Sequence[str | Path], split: str, seed: int = 0,
                   limit: int | None = None) -> dict[str, Any]:
    """Write the chat / safety pairs of one split (:func:`judgerl.data.builders.chat_mix.chat_mix_pairs`),
    one sink item per input file; the summary adds ``files`` (per-file counts: read, ties, identical,
    other split, kept).

    Raises:
        FileNotFoundError, judgerl.data.DataFormatError, ValueError: as ``chat_mix_pairs`` and :class:`PairSink`.
    """
    from judgerl.data.builders.chat_mix import chat_files, chat_mix_pairs

    check_split(split)
    files = chat_files(inputs)
    counts: dict[str, Any] = {}

    def one(path: Path) -> list[PreferencePair]:
        pairs, c = chat_mix_pairs([path], split, seed=seed, limit=limit)
        counts.update(c)
        return pairs

    config = {"kind": "chat-mix", "split": split, "inputs": [str(f) for f in files], "seed": seed, "limit": limit}
    summary = _write(out, config, [(str(f), lambda f=f: one(f)) for f in files])
    summary["files"] = counts
    return summary
