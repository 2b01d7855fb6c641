"""Errors raised by the data loaders."""

from __future__ import annotations

from pathlib import Path


class DataFormatError(ValueError):
    """A data file or one of its records does not match the expected format.

    Attributes:
        path: The file being read (as given by the caller).
        location: Where in the file: ``"line 12"`` (JSON Lines, 1-based line number),
            ``"index 5"`` (JSON array, 0-based element index), or ``None`` for file-level errors.
        field: The offending field of the record, or ``None`` when the whole record is at fault.
        reason: What is wrong, e.g. ``"is missing"``.

    ``str(err)`` reads like ``"data.jsonl line 12: field 'chosen' is missing"``.
    """

    def __init__(
        self,
        path: str | Path,
        location: str | None,
        field: str | None,
        reason: str,
    ) -> None:
        self.path = str(path)
        self.location = location
        self.field = field
        self.reason = reason
        where = f"{self.path} {location}" if location else self.path
        what = f"field '{field}' {reason}" if field else reason
        super().__init__(f"{where}: {what}")


class FieldError(ValueError):
    """Raised by a format converter for one bad field; the loader adds file and location.

    Internal to :mod:`judgerl.data`: callers of :func:`judgerl.data.load_pairs` only ever see
    :class:`DataFormatError`.
    """

    def __init__(self, field: str | None, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"field '{field}' {reason}" if field else reason)
