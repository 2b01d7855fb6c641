"""Non-verifiable pairs for TIR-Judge's no-tool rule: chat (LLMBar, PandaLM) and safety (hh-rlhf).

TIR-Judge's format reward is only valid on chat and safety items when the judge calls *no* tool, so
the training mixture needs such pairs beside the verifiable ones, and the held-out set needs some to
measure how often a judge reaches for the interpreter where code cannot help.

The pairs are read with :func:`judgerl.data.load_pairs` (its formats and label rules); ties and
pairs whose two responses are the same text are dropped (a training pair needs one better
response). ``meta["domain"]`` is ``"safety"`` for hh-rlhf *harmless* transcripts and ``"chat"``
for everything else. The split is by prompt (:func:`judgerl.data.builders.splits.split_of` of the
prompt, or of the first human turn of an hh-rlhf dialogue, so dialogues that open with the same
request stay together): no held-out prompt is ever trained on, across all the files.
"""

from __future__ import annotations

import dataclasses
import random
import re
from pathlib import Path
from typing import Iterable, Sequence

from judgerl.backends.base import derive_seed
from judgerl.data.loaders import IDENTICAL_KEY, load_pairs
from judgerl.data.builders.splits import check_split, problem_key, split_of
from judgerl.types import PreferencePair

#: The files of ``../shared/data`` read when a directory is given (those present are used).
DEFAULT_FILES = ("llmbar/natural.json", "llmbar/adversarial_gptout.json", "pandalm/testset-v1.json",
                 "hh-rlhf/harmless-base-test.jsonl.gz")
_FIRST_TURN = re.compile(r"^\s*Human:\s*(.*?)(?:\n\nAssistant:|\Z)", re.DOTALL)


def chat_files(inputs: Iterable[str | Path]) -> list[Path]:
    """The files to read: each file as given; for a directory, the :data:`DEFAULT_FILES` under it.

    Raises:
        FileNotFoundError: an input that does not exist, or a directory holding none of the files.
    """
    out: list[Path] = []
    for inp in map(Path, inputs):
        if inp.is_dir():
            found = [inp / f for f in DEFAULT_FILES if (inp / f).is_file()]
            if not found:
                raise FileNotFoundError(f"{inp}: none of {', '.join(DEFAULT_FILES)} found under this directory")
            out.extend(found)
        elif inp.is_file():
            out.append(inp)
        else:
            raise FileNotFoundError(f"{inp}: no such file or directory")
    return out


def prompt_split_key(prompt: str) -> str:
    """The split key of a chat prompt: its first human turn for an hh-rlhf dialogue
    (``"Human: ...\\n\\nAssistant: ..."``), else the whole prompt; :func:`problem_key`-normalised."""
    m = _FIRST_TURN.match(prompt)
    return "p:" + problem_key(m.group(1) if m else prompt)


def domain_of(fmt: str, path: Path) -> str:
    """``"safety"`` for an hh-rlhf *harmless* (or red-team) file, else ``"chat"``."""
    name = path.name.lower()
    return "safety" if fmt == "hh-rlhf" and ("harmless" in name or "red-team" in name) else "chat"


def chat_mix_pairs(inputs: Sequence[str | Path], split: str, seed: int = 0,
                   limit: int | None = None) -> tuple[list[PreferencePair], dict[str, dict[str, int]]]:
    """The non-tie pairs of ``inputs`` whose prompt belongs to ``split``.

    Args:
        inputs: Files (any format :func:`load_pairs` detects) or directories (see :func:`chat_files`).
        split: ``"train"`` or ``"held-out"``.
        seed: Order of the pairs (each file's pairs shuffled with ``derive_seed(seed, file name, split)``),
            which decides which are kept under ``limit``; the split itself never depends on it.
        limit: At most this many pairs per file.

    Returns:
        ``(pairs, counts)``: pairs with ids ``chat-<format>-<id>``, ``meta`` plus ``domain``,
        ``split``, ``problem_key``, ``source_file``; ``counts[file]`` = ``read``, ``ties``,
        ``identical``, ``other_split``, ``kept``.

    Raises:
        FileNotFoundError: as :func:`chat_files`. judgerl.data.DataFormatError: a malformed file
            (names the file and record). ValueError: bad split.
    """
    check_split(split)
    pairs: list[PreferencePair] = []
    counts: dict[str, dict[str, int]] = {}
    for path in chat_files(inputs):
        result = load_pairs(path)
        domain = domain_of(result.format, path)
        c = {"read": len(result.pairs), "ties": 0, "identical": 0, "other_split": 0, "kept": 0}
        kept = []
        for p in result.pairs:
            meta = dict(p.meta)
            if p.tie:
                c["ties"] += 1
                continue
            if meta.get(IDENTICAL_KEY):
                c["identical"] += 1
                continue
            key = prompt_split_key(p.prompt)
            if split_of(key) != split:
                c["other_split"] += 1
                continue
            meta.update(domain=domain, split=split, problem_key=key, source_file=str(path))
            kept.append(dataclasses.replace(p, id=f"chat-{result.format}-{p.id}", meta=meta))
        random.Random(derive_seed(seed, path.name, split)).shuffle(kept)
        kept = kept[:limit] if limit is not None else kept
        c["kept"] = len(kept)
        counts[str(path)] = c
        pairs.extend(kept)
    return pairs, counts
