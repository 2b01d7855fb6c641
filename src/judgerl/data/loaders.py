"""Load preference data in any supported format into canonical :class:`PreferencePair` records.

Formats (see :mod:`judgerl.data.formats` for each one's fields and label rules, and
docs/benchmarks.md): ``llmbar``, ``pandalm``, ``judgebench``, ``rmbench``, ``autoj``, ``rewardbench``,
``rewardbench2``, ``helpsteer3``, ``ultrafeedback``, ``chat-pairs``, ``arena``, ``mtbench-human``,
``ppe`` (named only), ``ppe-correctness``, ``hh-rlhf``, ``generic`` (with a field map) and ``judgerl``
(the canonical JSONL of :func:`write_pairs_jsonl`).
Sources: JSON arrays or JSON Lines (optionally gzipped), parquet / CSV / Arrow files,
``save_to_disk`` directories and Hub dataset names (:func:`judgerl.data.io.iter_source`).

A detected format is never a silent guess: the detection notice (``LoadResult.notice``, logged and
printed by the CLI) says which format was chosen and why; when two formats fit the records equally
the load stops and asks for ``format=`` / ``--format``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from judgerl.data.errors import DataFormatError, FieldError
from judgerl.data.formats import ALIASES, FORMATS
from judgerl.data.formats.base import RecordContext, dataset_stem
from judgerl.data.formats.generic import resolve, validate_field_map, validate_label_map
from judgerl.data.io import RawRecord, iter_source
from judgerl.types import PreferencePair

logger = logging.getLogger(__name__)

#: Records format detection looks at (a bad first record must not decide the format).
DETECT_RECORDS = 20
#: ``meta`` key set to True on a non-tie pair whose two responses are the same text.
IDENTICAL_KEY = "identical_responses"


@dataclass
class LoadResult:
    """What :func:`load_pairs` read.

    Attributes:
        path: The file read.
        format: The canonical format name used (detected or given).
        pairs: The converted pairs, in file order.
        n_records: Records read from the file (including skipped ones; RM-Bench gives 9 pairs
            per record, so ``len(pairs)`` may differ).
        n_skipped: Bad records skipped (only non-zero with ``skip_invalid=True``).
        errors: One message per skipped record, e.g. ``"x.jsonl line 3: field 'chosen' is missing"``.
        identical_ids: Ids of the non-tie pairs whose two responses are the same text (compared
            with runs of whitespace collapsed). They are kept, marked ``meta["identical_responses"]
            = True``: no judge can be position-consistent on them, so metrics report them apart.
        notice: For a detected format: one line saying which format was chosen and why
            (e.g. ``"format 'helpsteer3' detected: 20 of 20 sampled records have its fields (…)"``).
    """

    path: str
    format: str
    pairs: list[PreferencePair] = field(default_factory=list)
    n_records: int = 0
    n_skipped: int = 0
    errors: list[str] = field(default_factory=list)
    identical_ids: list[str] = field(default_factory=list)
    notice: str | None = None

    @property
    def n_ties(self) -> int:
        """Number of pairs labelled as ties."""
        return sum(p.tie for p in self.pairs)

    @property
    def n_identical(self) -> int:
        """Number of non-tie pairs whose two responses are identical (see ``identical_ids``)."""
        return len(self.identical_ids)

    def by_source(self) -> dict[str, dict[str, int]]:
        """``{source: {"pairs": n, "ties": t, "identical": i}}``, sources sorted by name."""
        pairs = Counter(p.source for p in self.pairs)
        ties = Counter(p.source for p in self.pairs if p.tie)
        same = Counter(p.source for p in self.pairs if p.meta.get(IDENTICAL_KEY))
        return {s: {"pairs": pairs[s], "ties": ties[s], "identical": same[s]} for s in sorted(pairs)}

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable counts: path, format, records, pairs, ties, identical, skipped, sources."""
        return {
            "path": self.path,
            "format": self.format,
            "records": self.n_records,
            "pairs": len(self.pairs),
            "ties": self.n_ties,
            "identical": self.n_identical,
            "skipped": self.n_skipped,
            "sources": self.by_source(),
        }


def normalize_format(name: str) -> str:
    """Canonical format name for ``name`` (case-insensitive; aliases such as ``"RM-Bench"``).

    Raises:
        ValueError: unknown name; the message lists the known formats.
    """
    key = name.strip().lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key not in FORMATS:
        raise ValueError(f"unknown data format {name!r}; known formats: {', '.join(FORMATS)}")
    return key


def _formats_matching(record: Mapping[str, Any]) -> list[str]:
    return [name for name, f in FORMATS.items() if f.matches is not None and f.matches(record)]


def _describe_formats() -> str:
    return "\n".join(f"  {name:<12} {f.description}" for name, f in FORMATS.items())


def _sample_objects(path: str | Path, records: Iterator[RawRecord], n: int) -> list[RawRecord]:
    sample = []
    for raw in records:
        if raw.error is None and isinstance(raw.value, dict):
            sample.append(raw)
            if len(sample) == n:
                break
    if not sample:
        raise DataFormatError(path, None, None, "contains no JSON object records")
    return sample


def detect_format(path: str | Path, split: str | None = None, config: str | None = None) -> str:
    """Name of the format of ``path``, judged from the keys of its first records.

    Each of the first :data:`DETECT_RECORDS` JSON-object records votes for the formats its keys
    fit; the format with the most votes wins, so one bad record (say, a first record missing
    ``label``) does not decide the format: it is then reported, or skipped with
    ``skip_invalid``, like any other bad record.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        DataFormatError: no record; no sampled record fits a format; or several formats tie
            for the most votes. The message lists the first record's keys and every known
            format with its fields. (``generic`` is never detected: name it, or pass a field map.)
    """
    return _detect(path, split, config)[0]


def _detect(path: str | Path, split: str | None, config: str | None) -> tuple[str, str]:
    """(format, notice) of :func:`detect_format`."""
    with closing(iter_source(path, split, config)) as records:
        sample = _sample_objects(path, records, DETECT_RECORDS)
    votes = Counter(name for raw in sample for name in _formats_matching(raw.value))
    first = sample[0]
    keys = ", ".join(repr(k) for k in list(first.value)[:12])
    if votes:
        top = max(votes.values())
        found = [name for name in FORMATS if votes.get(name) == top]
        if len(found) == 1:
            others = ", ".join(f"{n!r} ({c})" for n, c in votes.most_common() if n != found[0])
            notice = (f"format {found[0]!r} detected: {top} of {len(sample)} sampled records have its fields "
                      f"({FORMATS[found[0]].description})"
                      + (f"; fewer records fit {others}" if others else "")
                      + "; pass --format to choose another")
            logger.info("%s: %s", path, notice)
            return found[0], notice
        reason = f"record keys [{keys}] fit several formats ({', '.join(found)}); name one with format="
    else:
        rest = len(sample) - 1
        scope = f" (nor do the {rest} records after it)" if rest > 1 else " (nor does the next one)" if rest else ""
        reason = (
            f"record keys [{keys}] match no known format{scope}; name one with format= or map the fields "
            f"with field_map= (CLI: --field prompt=… --field chosen=… --field rejected=…). Known formats:\n"
            + _describe_formats()
        )
    raise DataFormatError(path, first.location, None, reason)


def load_pairs(
    path: str | Path,
    format: str | None = None,
    field_map: Mapping[str, str] | None = None,
    skip_invalid: bool = False,
    limit: int | None = None,
    *,
    split: str | None = None,
    config: str | None = None,
    label_map: Mapping[str, str] | None = None,
    rubric_field: str | None = None,
) -> LoadResult:
    """Read a preference-data file into canonical pairs.

    Args:
        path: JSON array or JSON Lines file (optionally gzipped), parquet / CSV / Arrow file,
            ``save_to_disk`` directory or Hub dataset name (:func:`judgerl.data.io.iter_source`).
        format: Format name (see :data:`judgerl.data.formats.FORMATS`; case-insensitive,
            aliases accepted). ``None``: detect from the first records, or ``"generic"`` when
            ``field_map`` is given.
        field_map: For ``generic``: canonical field -> record field (dotted paths allowed),
            e.g. ``{"prompt": "question", "chosen": "good", "rejected": "bad"}``.
        skip_invalid: Skip bad records instead of raising; they are counted in ``n_skipped``
            and described in ``errors``. File-level problems (unreadable file, broken JSON
            array, unknown format) still raise.
        limit: Stop after this many pairs (``None`` = all).
        split: Split of a dataset directory / Hub dataset (default: its only split).
        config: Hub dataset configuration.
        label_map: For ``generic`` with a ``label`` field: label value -> ``"first"`` / ``"second"``
            / ``"tie"`` (CLI ``--label-map``); an unmapped value is an error.
        rubric_field: A record field (dotted paths allowed) holding each prompt's rubric, any format; it
            becomes :attr:`PreferencePair.rubric` (CLI ``--rubric FIELD``). A record without it, or with a
            non-string / empty value, is a bad record naming the field.

    Returns:
        A :class:`LoadResult`. Ids are unique inside the file.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: bad ``format`` / ``field_map`` / ``limit`` arguments.
        DataFormatError: a bad record (without ``skip_invalid``), naming the file, the
            ``line N`` (JSON Lines) or ``index N`` (JSON array) and the field; or a
            file-level problem.

    Non-tie pairs whose two responses are identical are kept but marked
    ``meta["identical_responses"] = True``, listed in ``identical_ids`` and logged as a warning.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    fmt, fmap, notice = _resolve_format(path, format, field_map, split, config)
    lmap = validate_label_map(label_map) if label_map else None
    if lmap and fmt != "generic":
        raise ValueError("label_map is only used by format 'generic' with a 'label' field")
    result = LoadResult(path=str(path), format=fmt, notice=notice)
    with closing(iter_source(path, split, config)) as records:
        _convert_all(
            records, path, fmt, fmap, skip_invalid, limit, checked_first=format is None, result=result,
            label_map=lmap, rubric_field=rubric_field,
        )
    if result.n_records == 0:
        raise DataFormatError(path, None, None, "contains no records")
    if limit is not None:
        del result.pairs[limit:]
    _mark_identical(result)
    return result


def _same_text(a: str, b: str) -> bool:
    return a == b or a.split() == b.split()


def _mark_identical(result: LoadResult) -> None:
    """Mark, list and warn about non-tie pairs whose two responses are the same text."""
    for k, pair in enumerate(result.pairs):
        if not pair.tie and _same_text(pair.chosen, pair.rejected):
            result.pairs[k] = replace(pair, meta={**pair.meta, IDENTICAL_KEY: True})
            result.identical_ids.append(pair.id)
    if result.identical_ids:
        shown = ", ".join(result.identical_ids[:5]) + (", …" if result.n_identical > 5 else "")
        logger.warning(
            "%s: %d non-tie pair(s) have identical responses (no judge can be position-consistent "
            "on them; marked meta[%r]): %s",
            result.path, result.n_identical, IDENTICAL_KEY, shown,
        )


def _convert_all(
    records: Iterator[RawRecord],
    path: str | Path,
    fmt: str,
    fmap: dict[str, str] | None,
    skip_invalid: bool,
    limit: int | None,
    *,
    checked_first: bool,
    result: LoadResult,
    label_map: dict[str, str] | None = None,
    rubric_field: str | None = None,
) -> None:
    """Convert ``records`` into ``result`` (pairs, counts, skip messages); see :func:`load_pairs`."""
    spec = FORMATS[fmt]
    stem = dataset_stem(path)
    seen_ids: dict[str, str] = {}
    for raw in records:
        if limit is not None and len(result.pairs) >= limit:
            break
        result.n_records += 1
        try:
            if raw.error is not None:
                raise DataFormatError(path, raw.location, None, raw.error)
            if not isinstance(raw.value, dict):
                raise DataFormatError(
                    path, raw.location, None, f"record must be a JSON object, got {type(raw.value).__name__}"
                )
            if not checked_first:
                checked_first = True
                _check_named_format(path, raw, fmt)
            ctx = RecordContext(path=Path(path), stem=stem, index=raw.index, field_map=fmap, label_map=label_map)
            try:
                pairs = spec.convert(raw.value, ctx)
            except FieldError as e:
                raise DataFormatError(path, raw.location, e.field, e.reason) from None
            if rubric_field is not None:
                rubric = rubric_of_record(raw.value, rubric_field, path, raw.location)
                pairs = [replace(p, rubric=rubric) for p in pairs]
            for pair in pairs:
                if pair.id in seen_ids:
                    raise DataFormatError(
                        path, raw.location, "id", f"repeats id {pair.id!r} (first at {seen_ids[pair.id]})"
                    )
            for pair in pairs:
                seen_ids[pair.id] = raw.location
        except DataFormatError as e:
            if not skip_invalid or e.location is None:
                raise
            result.n_skipped += 1
            result.errors.append(str(e))
            continue
        result.pairs.extend(pairs)


def rubric_of_record(record: Mapping[str, Any], name: str, path: str | Path, location: str | None) -> str:
    """The rubric in ``record[name]`` (dotted paths allowed): what ``--rubric FIELD`` reads in eval and label.

    Raises:
        DataFormatError: the field is missing, not a string or blank (names the file, location and field).
    """
    value = resolve(record, name)
    if value is None:
        raise DataFormatError(path, location, name, "is missing (--rubric names this field as the prompt's rubric)")
    if not isinstance(value, str) or not value.strip():
        raise DataFormatError(path, location, name, f"must be a non-empty string (the rubric), got {value!r:.60}")
    return value


def _resolve_format(
    path: str | Path, format: str | None, field_map: Mapping[str, str] | None,
    split: str | None = None, config: str | None = None,
) -> tuple[str, dict[str, str] | None, str | None]:
    fmt = normalize_format(format) if format is not None else None
    if field_map:
        if fmt not in (None, "generic"):
            raise ValueError(f"field_map is only used by format 'generic', not {fmt!r}")
        return "generic", validate_field_map(field_map), None
    if fmt == "generic":
        raise ValueError(
            "format 'generic' needs field_map, "
            "e.g. {'prompt': 'question', 'chosen': 'good', 'rejected': 'bad'}"
        )
    if fmt is not None:
        return fmt, None, None
    detected, notice = _detect(path, split, config)
    return detected, None, notice


def _check_named_format(path: str | Path, raw: RawRecord, fmt: str) -> None:
    """A named format whose first record clearly is another format: say so instead of N errors."""
    spec = FORMATS[fmt]
    if spec.matches is None or spec.matches(raw.value):
        return
    others = _formats_matching(raw.value)
    if others:
        raise DataFormatError(  # file-level (no location): not skipped by skip_invalid
            path,
            None,
            None,
            f"format {fmt!r} was named but the first record ({raw.location}) looks like "
            f"{', '.join(others)} (expected fields: {spec.description})",
        )
