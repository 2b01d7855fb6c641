"""Resumable, append-only output of the generating pair builders (noisy instructions, sampled solutions).

A builder processes *items* (an instruction, a question), each with a stable id. :class:`PairSink`
appends each item's pairs to the canonical JSONL file (one ``PreferencePair.to_dict()`` per line,
flushed and fsynced per item) and then one line to a ledger ``<out>.progress.jsonl`` naming the item
and what happened to it. A killed run resumes by skipping the items in the ledger; an item whose
pairs were written but whose ledger line was not is redone, and its pairs (same seeds, same ids)
are not written twice: pairs are deduplicated by id and by content (prompt, chosen, rejected).

The ledger's first line records the build's configuration; resuming with a different one (another
model, seed, sample count) is refused, so one file never mixes two builds. A line cut short by a crash
(the file's last line, without its newline) is removed on resume; a malformed line elsewhere is an error.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping

from judgerl.types import PreferencePair


def ledger_path(out: str | Path) -> Path:
    """``<out>.progress.jsonl``."""
    p = Path(out)
    return p.with_name(p.name + ".progress.jsonl")


def repair_tail(path: Path) -> int:
    """Remove a last line cut short by a crash (no trailing newline); returns the bytes removed."""
    if not path.is_file():
        return 0
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with path.open("r+b") as f:
        f.truncate(keep)
    return len(data) - keep


def _content_key(p: PreferencePair) -> str:
    return hashlib.sha256(json.dumps([p.prompt, p.chosen, p.rejected], ensure_ascii=False).encode()).hexdigest()


class PairSink:
    """Append pairs item by item, resumably (see the module docstring).

    Args:
        out: The canonical JSONL output (not ``.gz``: it is appended to).
        config: The build's configuration (JSON-able); must equal the ledger's on resume.

    Raises:
        ValueError: ``out`` ends in ``.gz``, the ledger or output holds a malformed line (names the
            file and line), or the ledger was written by a build with another configuration (names
            the differing keys).
    """

    def __init__(self, out: str | Path, config: Mapping[str, Any]) -> None:
        self.out = Path(out)
        if self.out.name.endswith(".gz"):
            raise ValueError(f"{self.out}: generated pairs are appended as they are made; use a .jsonl path")
        self.ledger = ledger_path(self.out)
        self.config = json.loads(json.dumps(dict(config)))
        self.status: dict[str, dict[str, Any]] = {}
        self.pair_ids: set[str] = set()
        self.contents: set[str] = set()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._load()

    def _load(self) -> None:
        repair_tail(self.ledger)
        repair_tail(self.out)
        if self.ledger.is_file():
            for lineno, line in enumerate(self.ledger.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    raise ValueError(f"{self.ledger}:{lineno}: not JSON (a damaged ledger; delete it to start over)") from None
                if lineno == 1 and "config" in rec:
                    diff = sorted(k for k in set(rec["config"]) | set(self.config)
                                  if rec["config"].get(k) != self.config.get(k))
                    if diff:
                        raise ValueError(f"{self.out} was built with another configuration (differs in {', '.join(diff)}); "
                                         "use another --out or the same options")
                    continue
                self.status[str(rec["id"])] = rec
        elif self.out.is_file() and self.out.stat().st_size:
            raise ValueError(f"{self.out} exists without its ledger {self.ledger.name}; use another --out")
        if not self.ledger.is_file():
            self._append(self.ledger, {"config": self.config})
        if self.out.is_file():
            for lineno, line in enumerate(self.out.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    pair = PreferencePair.from_dict(json.loads(line))
                except (ValueError, TypeError):
                    raise ValueError(f"{self.out}:{lineno}: not a canonical pair line") from None
                self.pair_ids.add(pair.id)
                self.contents.add(_content_key(pair))

    @staticmethod
    def _append(path: Path, *records: Mapping[str, Any]) -> None:
        with path.open("a", encoding="utf-8") as f:
            for rec in records:
                f.write(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def done(self, item_id: str) -> bool:
        """Whether the ledger already records ``item_id``."""
        return str(item_id) in self.status

    def finish(self, item_id: str, pairs: Iterable[PreferencePair], status: str, **counts: Any) -> int:
        """Write an item's new pairs, then its ledger line ``{"id", "status", "written", **counts}``.

        Returns:
            Pairs written (duplicates by id or content are skipped).
        """
        new = []
        for p in pairs:
            key = _content_key(p)
            if p.id in self.pair_ids or key in self.contents:
                continue
            self.pair_ids.add(p.id)
            self.contents.add(key)
            new.append(p.to_dict())
        if new:
            self._append(self.out, *new)
        rec = {"id": str(item_id), "status": status, "written": len(new), **counts}
        self._append(self.ledger, rec)
        self.status[str(item_id)] = rec
        return len(new)

    def summary(self) -> dict[str, Any]:
        """Totals over every item in the ledger (this run and the resumed ones): ``items``,
        ``pairs_written``, ``by_status`` and the sum of each numeric count."""
        totals: Counter[str] = Counter()
        by_status: Counter[str] = Counter()
        for rec in self.status.values():
            by_status[rec["status"]] += 1
            for k, v in rec.items():
                if k not in ("id", "status") and isinstance(v, (int, float)) and not isinstance(v, bool):
                    totals[k] += v
        return {"items": len(self.status), "pairs_written": totals.pop("written", 0), "by_status": dict(by_status),
                **dict(totals), "out": str(self.out), "ledger": str(self.ledger)}
