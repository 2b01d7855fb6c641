"""Preference data: loaders for public judge/reward benchmarks into canonical pairs.

>>> from judgerl.data import load_pairs
>>> result = load_pairs("../shared/data/llmbar/natural.json")  # doctest: +SKIP
>>> result.format, len(result.pairs)                            # doctest: +SKIP
('llmbar', 100)
"""

from judgerl.data.errors import DataFormatError
from judgerl.data.formats import FORMATS
from judgerl.data.io import iter_records, write_pairs_jsonl
from judgerl.data.loaders import LoadResult, detect_format, load_pairs, normalize_format

__all__ = [
    "DataFormatError",
    "FORMATS",
    "LoadResult",
    "detect_format",
    "iter_records",
    "load_pairs",
    "normalize_format",
    "write_pairs_jsonl",
]
