"""Judge prompt template files: a judge prompt and its answer pattern, read from a user's file.

A template file plugs another project's judge prompt into judgerl (``judgerl eval --prompt-template
FILE``; the ``template`` protocol, :mod:`judgerl.protocols.template`). Two spellings:

* a YAML or JSON file (``.yaml`` / ``.yml`` / ``.json``): a mapping with the fields below, the user message
  in ``template``;
* any other text file: YAML front matter between two ``---`` lines holding the fields, then the user
  message as the body.

Fields:

==================  ========================================================================================
``kind``            ``pairwise`` or ``pointwise`` (required)
``template``        the user message; placeholders ``{prompt}`` and ``{response_a}`` + ``{response_b}``
                    (pairwise) or ``{response}`` (pointwise), optional ``{rubric}``; ``{{`` / ``}}`` are
                    literal braces; any other ``{name}`` is an error
``system``          the system message (optional; same placeholders)
``answer``          the answer pattern, a Python regex (required): the first capture group (or the whole
                    match) is the answer, e.g. Arena-Hard's ``\\[\\[([AB<>=]+)\\]\\]``, Prometheus's
                    ``\\[RESULT\\]\\s*([1-5])``
``verdicts``        pairwise: answer -> ``A`` / ``B`` / ``tie`` or a five-level arena label (``A>>B``,
                    ``A>B``, ``A=B``, ``B>A``, ``B>>A``); required
``scores``          pointwise: answer -> score; or ``score_range: [lo, hi]`` (the answer read as a number)
``rubric``          the default text of ``{rubric}`` (an input's own rubric replaces it)
``answer_prefix``   the text the prompt asks for before the answer (``"My final verdict is: [["``,
                    ``"[RESULT] "``): answer forcing prefills it, SFT targets write it
``answer_suffix``   the text after the answer (``"]]"``); forcing stops there
``name``, ``source`` a display name and where the prompt comes from (kept in the run's config)
==================  ========================================================================================

Answers are matched with whitespace removed and case folded (``a > b`` is ``A>B``); two keys that fold to
the same answer are an error. Errors name the file and the field (and the line of a bad placeholder).

**Catastrophic backtracking (ReDoS).** The answer pattern runs over judge outputs and responses, which are
adversarial text, so it is compiled with the `regex <https://pypi.org/project/regex/>`_ package (``re``
syntax and semantics, its default ``VERSION0``) and every run over such text is given
:data:`ANSWER_TIMEOUT` (the ``template`` protocol turns a timeout into the invalid reason
``answer_pattern_timeout``). At load time the pattern is tried on pathological probes
(:func:`probe_strings`) with :data:`PROBE_TIMEOUT`; a pattern that times out there is refused.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import regex

from judgerl.protocols.arena import LABEL_VERDICT
from judgerl.protocols.common import check_scale

#: Placeholders a template may use, by kind (``rubric`` is always optional).
PLACEHOLDERS: dict[str, tuple[str, ...]] = {"pairwise": ("prompt", "response_a", "response_b"),
                                            "pointwise": ("prompt", "response")}
#: What a pairwise answer may mean: a verdict, or a five-level label (:data:`judgerl.protocols.arena.ARENA_LABELS`).
VERDICT_VALUES = ("A", "B", "tie", "A>>B", "A>B", "A=B", "B>A", "B>>A")
_FIELDS = frozenset({"kind", "template", "system", "answer", "verdicts", "scores", "score_range", "rubric",
                     "answer_prefix", "answer_suffix", "name", "source"})
_PLACEHOLDER_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")

#: Seconds one run of the answer pattern (search / finditer / sub) over a judge output or a response may
#: take (``regex``'s ``timeout=``): beyond it the judgment is invalid (``answer_pattern_timeout``). Normal
#: patterns take microseconds on judge outputs of tens of kilobytes.
ANSWER_TIMEOUT = 1.0
#: Seconds the answer pattern may take on one load-time probe (:func:`probe_strings`) before the file is
#: refused: a pattern with catastrophic backtracking takes seconds there, a normal one microseconds.
PROBE_TIMEOUT = 0.1
#: Repeats of the running character in a probe (:func:`probe_strings`): ``(?:a|a)+`` needs 2**32 steps.
_PROBE_RUN = 32


class TemplateError(ValueError):
    """A template file that cannot be used; the message names the file and the field (or line)."""


def answer_key(text: str) -> str:
    """An answer as the maps are looked up: whitespace removed, case folded (``" a > b "`` -> ``"a>b"``)."""
    return "".join(text.split()).casefold()


@dataclass(frozen=True)
class PromptTemplate:
    """A parsed template file (module docstring).

    Attributes:
        path: The file it was read from.
        digest: SHA-256 (hex) of the file's bytes: a run's identity changes when the file does.
        kind: ``"pairwise"`` or ``"pointwise"``.
        user: The user-message template; ``system`` the system-message template or None.
        answer: The compiled answer pattern (a ``regex`` pattern: run it with ``timeout=ANSWER_TIMEOUT``).
        verdicts: Pairwise: :func:`answer_key` -> a :data:`VERDICT_VALUES` entry (empty for pointwise).
        scores: Pointwise: :func:`answer_key` -> score (empty with ``score_range``).
        score_range: Pointwise ``(lo, hi)`` when answers are read as numbers, else None.
        spellings: :func:`answer_key` -> the answer as the file writes it (rendering an answer).
        uses: The placeholders the templates use.
        rubric, answer_prefix, answer_suffix, name, source: As in the file (module docstring).
    """

    path: str
    digest: str
    kind: str
    user: str
    answer: regex.Pattern
    system: str | None = None
    verdicts: Mapping[str, str] = field(default_factory=dict)
    scores: Mapping[str, float] = field(default_factory=dict)
    score_range: tuple[float, float] | None = None
    spellings: Mapping[str, str] = field(default_factory=dict)
    uses: frozenset[str] = frozenset()
    rubric: str | None = None
    answer_prefix: str = ""
    answer_suffix: str = ""
    name: str | None = None
    source: str | None = None

    @property
    def score_scale(self) -> tuple[float, float] | None:
        """``(min, max)`` of a pointwise template's scores; None for pairwise."""
        if self.kind != "pointwise":
            return None
        if self.score_range is not None:
            return self.score_range
        return float(min(self.scores.values())), float(max(self.scores.values()))

    def literal_lines(self) -> tuple[str, ...]:
        """The template's own text lines of 4+ characters (delimiters such as ``<|The End of Assistant A's
        Answer|>`` or ``###Response B:``), placeholders removed: untrusted text must not forge them."""
        out: dict[str, None] = {}
        for text in (self.system or "", self.user):
            for line in _PLACEHOLDER_RE.sub("\n", text).splitlines():
                if len(line.strip()) >= 4:
                    out.setdefault(line.strip(), None)
        return tuple(out)

    def fill(self, text: str, values: Mapping[str, str]) -> str:
        """``text`` with every ``{name}`` replaced by ``values[name]`` in one pass (a value that itself holds
        ``{response_b}`` stays as written) and ``{{`` / ``}}`` by braces."""
        def sub(m: re.Match[str]) -> str:
            if m.group(1) is None:
                return m.group(0)[0]
            return values[m.group(1)]
        return _PLACEHOLDER_RE.sub(sub, text)


def load_template(path: str | Path) -> PromptTemplate:
    """Read and check a template file (module docstring).

    Raises:
        TemplateError: the file cannot be read, is not UTF-8, is malformed YAML/JSON, has unknown or
            missing fields, a bad regex (or one that matches the empty string), an unknown placeholder, a
            missing required placeholder, or a bad verdict / score map (the message names file and field).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise TemplateError(f"{p}: cannot read it: {e.strerror or e}") from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TemplateError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    spec, body_line = _read_fields(p, text)
    where = f"{p}"
    unknown = sorted(set(spec) - _FIELDS)
    if unknown:
        raise TemplateError(f"{where}: unknown field(s) {unknown}; known: {sorted(_FIELDS)}")
    kind = spec.get("kind")
    if kind not in PLACEHOLDERS:
        raise TemplateError(f"{where}: field 'kind' must be 'pairwise' or 'pointwise', got {kind!r}")
    user = _text_field(where, spec, "template", required=True)
    system = _text_field(where, spec, "system")
    used = set(_placeholders(where, "template", user, body_line))
    if system is not None:
        used |= set(_placeholders(where, "system", system, None))
    allowed = set(PLACEHOLDERS[kind]) | {"rubric"}
    if used - allowed:
        raise TemplateError(f"{where}: unknown placeholder(s) {sorted('{' + u + '}' for u in used - allowed)} for a "
                            f"{kind} template; known: {sorted('{' + a + '}' for a in allowed)} ({{{{ and }}}} are "
                            "literal braces)")
    missing = [n for n in PLACEHOLDERS[kind] if n not in used]
    if missing:
        raise TemplateError(f"{where}: a {kind} template must show {', '.join('{' + m + '}' for m in missing)}")
    answer = _answer_pattern(where, spec.get("answer"), _text_field(where, spec, "answer_prefix") or "")
    verdicts: dict[str, str] = {}
    scores: dict[str, float] = {}
    score_range = None
    if kind == "pairwise":
        if "scores" in spec or "score_range" in spec:
            raise TemplateError(f"{where}: a pairwise template maps answers with 'verdicts', not scores")
        verdicts = _verdict_map(where, spec.get("verdicts"))
    else:
        if "verdicts" in spec:
            raise TemplateError(f"{where}: a pointwise template maps answers with 'scores' or 'score_range'")
        if ("scores" in spec) == ("score_range" in spec):
            raise TemplateError(f"{where}: a pointwise template needs exactly one of 'scores' (answer -> score) or "
                                "'score_range' ([lo, hi])")
        if "scores" in spec:
            scores = _score_map(where, spec["scores"])
        else:
            score_range = _score_range(where, spec["score_range"])
    return PromptTemplate(
        path=str(p), digest=hashlib.sha256(raw).hexdigest(), kind=kind, user=user, answer=answer, system=system,
        verdicts=verdicts, scores=scores, score_range=score_range, uses=frozenset(used),
        spellings={answer_key(str(k)): str(k) for k in (spec.get("verdicts") or spec.get("scores") or {})},
        rubric=_text_field(where, spec, "rubric"),
        answer_prefix=_text_field(where, spec, "answer_prefix") or "",
        answer_suffix=_text_field(where, spec, "answer_suffix") or "",
        name=_text_field(where, spec, "name"), source=_text_field(where, spec, "source"),
    )


def _read_fields(path: Path, text: str) -> tuple[dict[str, Any], int | None]:
    """The file's fields, and the line where a front-matter file's body (the ``template``) starts."""
    import yaml

    structured = path.suffix.lower() in (".yaml", ".yml", ".json")
    lines = text.splitlines(keepends=True)
    body_line = None
    if structured:
        source = text
    else:
        if not lines or lines[0].strip() != "---":
            raise TemplateError(f"{path}: a text template starts with YAML front matter between two '---' lines "
                                "(or use a .yaml / .json file)")
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is None:
            raise TemplateError(f"{path}: the front matter opened on line 1 is never closed by a '---' line")
        source = "".join(lines[1:end])
        body_line = end + 2
    try:
        spec = yaml.safe_load(source)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" line {mark.line + 1 + (0 if structured else 1)}" if mark is not None else ""
        raise TemplateError(f"{path}{at}: malformed YAML: {getattr(e, 'problem', None) or e}") from e
    if not isinstance(spec, dict):
        raise TemplateError(f"{path}: expected a mapping of fields, got {type(spec).__name__}")
    if not structured:
        if "template" in spec:
            raise TemplateError(f"{path}: field 'template' is the body after the front matter; remove it")
        spec["template"] = "".join(lines[end + 1:]).strip("\n")
    return spec, body_line


def _text_field(where: str, spec: Mapping[str, Any], name: str, required: bool = False) -> str | None:
    value = spec.get(name)
    if value is None:
        if required:
            raise TemplateError(f"{where}: field '{name}' is missing")
        return None
    if not isinstance(value, str):
        raise TemplateError(f"{where}: field '{name}' must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise TemplateError(f"{where}: field '{name}' is empty")
    return value


def _placeholders(where: str, name: str, text: str, first_line: int | None) -> list[str]:
    out = []
    for m in _PLACEHOLDER_RE.finditer(text):
        if m.group(1) is None:
            continue
        if not re.fullmatch(r"[A-Za-z_]\w*", m.group(1)):
            line = text.count("\n", 0, m.start()) + (first_line or 1)
            raise TemplateError(f"{where} ({name} line {line}): {m.group(0)!r} is not a placeholder; write "
                                "{{ and }} for literal braces")
        out.append(m.group(1))
    return out


def probe_strings(pattern: str, prefix: str = "") -> Iterator[str]:
    """Pathological probes for an answer pattern's load-time self-test: for every pair of characters
    ``c``, ``d`` (those of ``pattern`` and ``prefix``, plus ``a A 0`` and a space; at most 40), ``cc`` then
    ``d`` repeated 32 times then a NUL -- and the same after ``prefix`` (the file's ``answer_prefix``).
    A nested or overlapping quantifier reached after a short opening (``\\[\\[((?:a|a)+)\\]\\]`` on
    ``[[aaa…``) backtracks exponentially on one of them. A heuristic: the runtime :data:`ANSWER_TIMEOUT`
    is the guard; this only refuses the patterns it can show to be broken."""
    chars = list(dict.fromkeys(c for c in f"{pattern}{prefix}aA0 " if c.isprintable()))[:40]
    for c in chars:
        for d in chars:
            yield f"{c}{c}{d * _PROBE_RUN}\x00"
            if prefix:
                yield f"{prefix}{d * _PROBE_RUN}\x00"
                yield f"{prefix}{c}{d * _PROBE_RUN}\x00"


def _answer_pattern(where: str, pattern: Any, prefix: str = "") -> regex.Pattern:
    if not isinstance(pattern, str) or not pattern:
        raise TemplateError(f"{where}: field 'answer' must be a regex string, got {pattern!r}")
    try:
        compiled = regex.compile(pattern)
    except regex.error as e:
        raise TemplateError(f"{where}: field 'answer' is not a valid regex: {e}") from e
    if compiled.search("") is not None:
        raise TemplateError(f"{where}: field 'answer' {pattern!r} matches the empty string")
    folded = regex.compile(pattern, compiled.flags | regex.IGNORECASE)  # the quoted-answer check's form
    for probe in probe_strings(pattern, prefix):
        for p in (compiled, folded):
            try:
                p.search(probe, timeout=PROBE_TIMEOUT)
            except TimeoutError:
                raise TemplateError(
                    f"{where}: field 'answer' {pattern!r} backtracks catastrophically: it takes over "
                    f"{PROBE_TIMEOUT:g} s on the probe {probe[:48]!r} (length {len(probe)}); judge outputs are "
                    "adversarial text: avoid nested or overlapping repeats such as (a|a)+ or (a+)+") from None
    return compiled


def _verdict_map(where: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not value:
        raise TemplateError(f"{where}: field 'verdicts' must map answers to {', '.join(VERDICT_VALUES)}")
    canon = {answer_key(v): v for v in VERDICT_VALUES}
    out: dict[str, str] = {}
    for k, v in value.items():
        meaning = canon.get(answer_key(str(v))) if isinstance(v, str) else None
        if meaning is None:
            raise TemplateError(f"{where}: field 'verdicts.{k}' must be one of {', '.join(VERDICT_VALUES)}, got {v!r}")
        _put(where, "verdicts", out, str(k), meaning)
    if not {"A", "B"} <= {LABEL_VERDICT.get(v, v) for v in out.values()}:
        raise TemplateError(f"{where}: field 'verdicts' must give an answer for each of A and B")
    return out


def _score_map(where: str, value: Any) -> dict[str, float]:
    if not isinstance(value, dict) or len(value) < 2:
        raise TemplateError(f"{where}: field 'scores' must map at least two answers to numbers")
    out: dict[str, float] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise TemplateError(f"{where}: field 'scores.{k}' must be a finite number, got {v!r}")
        _put(where, "scores", out, str(k), float(v))
    if len(set(out.values())) < 2:
        raise TemplateError(f"{where}: field 'scores' gives every answer the same score")
    return out


def _score_range(where: str, value: Any) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise TemplateError(f"{where}: field 'score_range' must be [lo, hi], got {value!r}")
    try:
        check_scale(value[0], value[1])
    except ValueError as e:
        raise TemplateError(f"{where}: field 'score_range': {e}") from e
    return float(value[0]), float(value[1])


def _put(where: str, name: str, out: dict[str, Any], key: str, value: Any) -> None:
    k = answer_key(key)
    if not k:
        raise TemplateError(f"{where}: field '{name}' has an empty answer")
    if k in out:
        raise TemplateError(f"{where}: field '{name}' maps {key!r} twice (answers are compared without "
                            "whitespace and case)")
    out[k] = value


__all__ = ["ANSWER_TIMEOUT", "PROBE_TIMEOUT", "PLACEHOLDERS", "PromptTemplate", "TemplateError", "VERDICT_VALUES", "answer_key", "load_template", "probe_strings"]
