"""Reading raw records from JSON / JSON Lines files (optionally gzipped) and writing canonical JSONL.

Files are recognised by content, not by name:

* gzip is detected from the magic bytes ``1f 8b`` (so ``.jsonl.gz`` and misnamed files both work);
* a file whose first non-blank character is ``[`` is a JSON array of records; anything else is
  read as JSON Lines (one object per line, blank lines ignored).

Python's :mod:`json` accepts the bare ``NaN`` / ``Infinity`` tokens some exported datasets
contain (e.g. PandaLM written by pandas); converters treat a NaN text field as missing.

Other sources go through the Hugging Face ``datasets`` library (:func:`iter_source`): parquet, CSV/TSV
and Arrow files, ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk`` directories, and Hub dataset
names (``allenai/reward-bench-2``, with a split and config). JSON / JSON Lines stay on the reader
above, which names the line of a bad record; rows of the other sources are named ``row N``.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from judgerl.data.errors import DataFormatError
from judgerl.types import PreferencePair

_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class RawRecord:
    """One record as read from disk, before conversion.

    Attributes:
        index: 0-based ordinal of the record in the file (array index, or count of non-blank
            lines before it in JSON Lines). Used for default ids ``"<stem>-<index>"``.
        location: Human-readable position for error messages: ``"line 12"`` or ``"index 5"``.
        value: The decoded JSON value (normally a dict), or ``None`` when ``error`` is set.
        error: Why the record could not be decoded (invalid JSON on that line), else ``None``.
    """

    index: int
    location: str
    value: Any = None
    error: str | None = None


def open_text(path: str | Path) -> IO[str]:
    """Open ``path`` for reading as UTF-8 text, transparently decompressing gzip.

    A UTF-8 byte-order mark is dropped.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        IsADirectoryError: ``path`` is a directory.
    """
    p = Path(path)
    with p.open("rb") as fh:
        magic = fh.read(2)
    if magic == _GZIP_MAGIC:
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8-sig")
    return p.open("r", encoding="utf-8-sig")


def _first_char(fh: IO[str]) -> tuple[str, str]:
    """Read up to the first non-whitespace character; return (consumed text, that char or '')."""
    consumed = []
    while True:
        ch = fh.read(1)
        if not ch:
            return "".join(consumed), ""
        consumed.append(ch)
        if not ch.isspace():
            return "".join(consumed), ch


def iter_records(path: str | Path) -> Iterator[RawRecord]:
    """Yield the records of a JSON array or JSON Lines file (gzip allowed), in file order.

    JSON Lines are streamed; a JSON array is decoded whole. A line that is not valid JSON is
    yielded as a :class:`RawRecord` with ``error`` set, so the caller can skip or report it.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        DataFormatError: the file is a JSON array that does not decode, a JSON value that is
            neither an array nor JSON Lines (e.g. one pretty-printed object), or is not UTF-8.
    """
    try:
        with open_text(path) as fh:
            head, first = _first_char(fh)
            if first == "[":
                yield from _iter_array(path, head + fh.read())
            else:
                yield from _iter_lines(path, fh, head)
    except UnicodeDecodeError as e:
        raise DataFormatError(path, None, None, f"is not UTF-8 text ({e.reason} at byte {e.start})") from e
    except (OSError, EOFError) as e:
        if isinstance(e, (FileNotFoundError, IsADirectoryError, PermissionError)):
            raise
        raise DataFormatError(path, None, None, f"could not be read: {e}") from e


def _iter_array(path: str | Path, text: str) -> Iterator[RawRecord]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataFormatError(
            path, f"line {e.lineno}", None, f"invalid JSON: {e.msg} (column {e.colno})"
        ) from e
    for i, value in enumerate(data):
        yield RawRecord(index=i, location=f"index {i}", value=value)


def _iter_lines(path: str | Path, fh: IO[str], head: str) -> Iterator[RawRecord]:
    # ``head`` holds any leading blank lines plus the start of the first record's line.
    skipped_lines = head.count("\n")
    lines = _prepend(head[head.rfind("\n") + 1 :], fh)
    index = 0
    for lineno, line in enumerate(lines, start=1 + skipped_lines):
        if not line.strip():
            continue
        try:  # without its line break: an error at the end of a cut record names its own column
            value = json.loads(line.rstrip("\r\n"))
        except json.JSONDecodeError as e:
            if index == 0 and line.strip() == "{":
                raise DataFormatError(
                    path,
                    None,
                    None,
                    "looks like one pretty-printed JSON object; expected a JSON array of records "
                    "or JSON Lines (one object per line)",
                ) from None
            yield RawRecord(
                index=index, location=f"line {lineno}", error=f"invalid JSON: {e.msg} (column {e.colno})"
            )
        else:
            yield RawRecord(index=index, location=f"line {lineno}", value=value)
        index += 1


def _prepend(head: str, fh: IO[str]) -> Iterator[str]:
    """Lines of ``fh`` with the already-consumed ``head`` glued to the first one."""
    first = fh.readline()
    yield head + first
    yield from fh


#: File suffix -> the ``datasets`` packaged builder that reads it.
TABULAR_BUILDERS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "csv", ".arrow": "arrow"}
_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def iter_source(source: str | Path, split: str | None = None, config: str | None = None) -> Iterator[RawRecord]:
    """Yield the records of any supported source, in order (see the module docstring).

    Args:
        source: A JSON / JSON Lines (gzip allowed), parquet, CSV/TSV or Arrow file; a ``save_to_disk``
            directory; or a Hub dataset name ``owner/name`` that is not a local path.
        split: The split of a ``DatasetDict`` directory or Hub dataset (default: its only split).
        config: The Hub dataset's configuration name.

    Raises:
        FileNotFoundError: a local path that does not exist and is not a Hub name.
        DataFormatError: a directory that is not a saved dataset, an unknown split (the message lists
            the splits), a Hub dataset that cannot be loaded (offline: one line saying so), or a
            file the ``datasets`` library cannot read.
    """
    p = Path(source)
    if p.is_dir():
        yield from _iter_dataset(source, _load_from_disk(source), split)
    elif p.exists():
        builder = TABULAR_BUILDERS.get(p.suffix.lower())
        if builder is None:
            if split is not None or config is not None:
                raise DataFormatError(source, None, None, "--split / --config only apply to datasets "
                                      "(parquet, CSV, save_to_disk directories, Hub names), not JSON files")
            yield from iter_records(source)
            return
        yield from _iter_dataset(source, _load(source, builder, data_files=str(p), delimiter="\t"
                                               if p.suffix.lower() == ".tsv" else None), split)
    elif _HUB_NAME.fullmatch(str(source)) and not p.suffix:
        yield from _iter_dataset(source, _load_hub(str(source), config, split), split)
    else:
        raise FileNotFoundError(f"{source}: no such file or directory (nor a Hub dataset name owner/name)")


def _datasets() -> Any:
    try:
        import datasets
    except ImportError as e:  # pragma: no cover - a core dependency
        raise DataFormatError("datasets", None, None, "the 'datasets' package is needed: pip install datasets") from e
    datasets.utils.logging.disable_progress_bar()
    return datasets


def _load_from_disk(source: str | Path) -> Any:
    datasets = _datasets()
    p = Path(source)
    if not ((p / "dataset_info.json").exists() or (p / "dataset_dict.json").exists() or (p / "state.json").exists()):
        raise DataFormatError(source, None, None, "is a directory but not a saved dataset (no dataset_info.json / "
                              "dataset_dict.json from Dataset.save_to_disk); name a data file inside it")
    try:
        return datasets.load_from_disk(str(p))
    except (OSError, ValueError) as e:
        raise DataFormatError(source, None, None, f"could not be read as a saved dataset: {e}") from e


def _load(source: str | Path, builder: str, **kwargs: Any) -> Any:
    datasets = _datasets()
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    try:
        return datasets.load_dataset(builder, split="train", **kwargs)
    except Exception as e:  # the builders raise many types (ArrowInvalid, DatasetGenerationError, ...)
        raise DataFormatError(source, None, None, f"could not be read as {builder}: {str(e).splitlines()[0][:300]}") \
            from e


def _load_hub(name: str, config: str | None, split: str | None) -> Any:
    datasets = _datasets()
    offline = bool(getattr(datasets.config, "HF_HUB_OFFLINE", False)) or os.environ.get("HF_HUB_OFFLINE") == "1"
    try:
        return datasets.load_dataset(name, config, split=split)
    except Exception as e:
        first = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        how = "offline (HF_HUB_OFFLINE=1)" if offline else "the Hub could not be reached or has no such dataset"
        raise DataFormatError(name, None, None, f"is not a local file and could not be loaded as a Hugging Face "
                              f"Hub dataset: {how} ({type(e).__name__}: {first}); download it where the Hub is "
                              "reachable (datasets.load_dataset(...).save_to_disk(DIR)) and pass DIR") from None


def _iter_dataset(source: str | Path, data: Any, split: str | None) -> Iterator[RawRecord]:
    if hasattr(data, "keys") and not hasattr(data, "features"):  # a DatasetDict
        splits = list(data.keys())
        if split is None:
            if len(splits) != 1:
                raise DataFormatError(source, None, None, f"has splits {splits}; choose one with --split (split=)")
            split = splits[0]
        if split not in data:
            raise DataFormatError(source, None, None, f"has no split {split!r}; its splits: {splits}")
        data = data[split]
    for i, row in enumerate(data):
        yield RawRecord(index=i, location=f"row {i}", value=dict(row))


def write_pairs_jsonl(pairs: Iterable[PreferencePair], path: str | Path) -> int:
    """Write ``pairs`` as canonical judgerl JSON Lines (``PreferencePair.to_dict()`` per line).

    The file is read back by ``load_pairs(path)`` (format ``"judgerl"``). A path ending in
    ``.gz`` is gzip-compressed. The write is atomic (temporary file + rename) and parent
    directories are created.

    Returns:
        The number of pairs written.

    Raises:
        ValueError: a pair holds a value JSON cannot represent (NaN score, non-serialisable meta);
            the message names the pair id. Nothing is written in that case.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    n = 0
    try:
        umask = os.umask(0o022)  # mkstemp makes 0600; give the file the mode open() would (0666 & ~umask)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as raw:
            stream: IO[bytes] = (
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if out.name.endswith(".gz") else raw
            )
            with io.TextIOWrapper(stream, encoding="utf-8", newline="\n") as fh:
                for pair in pairs:
                    try:
                        line = json.dumps(pair.to_dict(), ensure_ascii=False, allow_nan=False)
                    except (TypeError, ValueError) as e:
                        raise ValueError(f"pair {pair.id!r} cannot be written as JSON: {e}") from e
                    fh.write(line + "\n")
                    n += 1
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n
