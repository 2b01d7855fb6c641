"""The ``template`` protocol: a judge prompt and answer pattern from a user's template file.

Another project's judge prompt -- Arena-Hard-Auto's pairwise five-level verdict, Prometheus's absolute
1-5 grading -- is plugged in with a template file (:mod:`judgerl.protocols.template_file`;
``--prompt-template FILE`` on eval / serve / label / probe / arena, or ``get_protocol("template",
path=FILE)``). Shipped examples: ``examples/templates/arena-hard.yaml``, ``examples/templates/prometheus-absolute.md``.

**Building.** The template's placeholders are filled with the question, the response(s) and the rubric
(an input's own rubric, else the file's ``rubric``; a rubric given to a template without ``{rubric}`` is
appended as judgerl's ``[Rubric]`` section). Every filled value is untrusted text: judgerl's control
tags and section delimiters are neutralised (:func:`judgerl.text.untrusted.neutralise_tags`), and so are,
with a zero-width joiner after their first character, every line of the template's own text (a response
that writes ``<|The End of Assistant A's Answer|>`` cannot close its block) and every match of the answer
pattern (a response's ``[[B>>A]]`` copied faithfully does not read as an answer). ``anti_hacking`` adds
:data:`~judgerl.protocols.common.ANTI_HACKING_INSTRUCTION` and ``tools`` the TIR tool instruction to
the system message.

**Parsing**, as every protocol (:mod:`judgerl.protocols.parsing`): only the final-answer region is read
(after the last ``</think>``, code blanked; an unterminated ``<think>`` is invalid); every match of the
answer pattern there is mapped (``verdicts`` / ``scores``); matches that disagree are
``conflicting_answers`` -- Arena-Hard's own reading (``gen_judgment.py:get_score``: more than one distinct
match gives no score); an unmapped answer is ``invalid_verdict`` (pairwise) / ``unparseable_score``
(pointwise); none is ``missing_final_answer``.

**The quoted-answer check** (:func:`judgerl.judge.decision.read_decision`) compares answer *tags*; this
protocol's answer is a pattern, so :meth:`Template.quote_form` marks every match with the control tag
``<judge_answer>`` in the judge's output and in the responses alike, and the check then works as for a
tagged protocol: a verdict copied from a response is void unless it is the worst outcome for that response.

**Timeouts.** Every run of the answer pattern over a judge output or a response has
:data:`~judgerl.protocols.template_file.ANSWER_TIMEOUT` (the pattern is a ``regex`` pattern): a parse
that times out is invalid (``answer_pattern_timeout``), and so is a decision whose quoted-answer check
times out (:meth:`Template.quote_form` raises ``ParseFailure("answer_pattern_timeout")``, which
:func:`~judgerl.judge.decision.read_decision` turns into that invalid decision -- a response cannot skip
the check by making it slow). A response the pattern times out on while the prompt is built has a zero-width
joiner put after the first character of every word instead (the check still runs on the judgment).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence, TypeVar

import regex

from judgerl.protocols.arena import LABEL_VERDICT, VERDICT_LABEL
from judgerl.protocols.base import JudgeProtocol
from judgerl.protocols.common import (
    ANTI_HACKING_INSTRUCTION,
    check_inputs,
    close_open_spans,
    rubric_section,
    tools_instruction,
)
from judgerl.protocols.parsing import (
    ParseFailure,
    agree,
    answer_region,
    format_number,
    neutralise_tags,
    parse_score,
    thought_of,
)
from judgerl.protocols import template_file
from judgerl.protocols.quoting import copier_form
from judgerl.protocols.template_file import PromptTemplate, answer_key, load_template
from judgerl.text.codeblocks import MAX_TOOL_ROUNDS
from judgerl.text.confusables import skeleton
from judgerl.types import Decision, Messages

#: The control tag :meth:`Template.quote_form` wraps each answer-pattern match in.
QUOTE_TAG = "judge_answer"
_ZWJ = "\u200d"
_WORD_RE = re.compile(r"\S+")
T = TypeVar("T")


def _break(m: re.Match[str] | regex.Match) -> str:
    """A zero-width joiner after the first character of a match (it reads the same; no pattern matches it)."""
    text = m.group(0)
    return text[:1] + _ZWJ + text[1:]


def _mark(m: regex.Match) -> str:
    """An answer-pattern match wrapped in the :data:`QUOTE_TAG` control tag."""
    return f"<{QUOTE_TAG}>{m.group(0)}</{QUOTE_TAG}>"


def _timed(run: Callable[..., T], *args: Any) -> T:
    """``run(*args, timeout=ANSWER_TIMEOUT)`` (a ``regex`` pattern method over untrusted text).

    Raises:
        ParseFailure: ``"answer_pattern_timeout"`` when it runs past the timeout.
    """
    try:
        return run(*args, timeout=template_file.ANSWER_TIMEOUT)
    except TimeoutError:
        raise ParseFailure("answer_pattern_timeout") from None


@dataclass(frozen=True)
class Template(JudgeProtocol):
    """A judge format read from a template file (module docstring).

    Args:
        path: The template file (YAML / JSON, or text with front matter).
        anti_hacking: Add the anti-hacking instruction to the system message.

    ``options()`` holds the resolved ``path`` and the file's SHA-256 ``digest``, so a resumed run with an
    edited template is refused. ``parse`` returns ``Decision(verdict="A"|"B"|"tie", label=…)`` (pairwise;
    ``label`` for five-level answers) or ``Decision(scores=(s,))`` (pointwise).

    Raises:
        ValueError: no ``path``, or a template file that cannot be used
            (:class:`~judgerl.protocols.template_file.TemplateError`, naming file and field).
    """

    path: str = ""
    anti_hacking: bool = field(default=False, kw_only=True)
    digest: str = field(init=False, default="")
    template: PromptTemplate | None = field(init=False, default=None, repr=False, compare=False)
    name: ClassVar[str] = "template"
    tag_names: ClassVar[tuple[str, ...]] = (QUOTE_TAG,)

    def __post_init__(self) -> None:
        if not isinstance(self.path, (str, Path)) or not str(self.path).strip():
            raise ValueError("the template protocol needs path=FILE (--prompt-template FILE)")
        spec = load_template(self.path)
        object.__setattr__(self, "path", str(Path(self.path).resolve()))
        object.__setattr__(self, "digest", spec.digest)
        object.__setattr__(self, "template", spec)

    @property
    def spec(self) -> PromptTemplate:
        """The parsed template file."""
        assert self.template is not None
        return self.template

    @property
    def kind(self) -> str:  # type: ignore[override]
        """``"pairwise"`` or ``"pointwise"``, from the file."""
        return self.spec.kind

    @property
    def n_responses(self) -> int:  # type: ignore[override]
        """2 (pairwise) or 1 (pointwise)."""
        return 2 if self.spec.kind == "pairwise" else 1

    @property
    def answer_tags(self) -> tuple[str, ...]:
        """None: the answer is a pattern, not a tag (:meth:`quote_form` marks it for the quoted-answer check)."""
        return ()

    @property
    def control_tags(self) -> tuple[str, ...]:
        """``think`` and :data:`QUOTE_TAG`."""
        return ("think", QUOTE_TAG)

    @property
    def answer_marker(self) -> str:
        """The file's ``answer_prefix`` (``"My final verdict is: [["``, ``"[RESULT] "``)."""
        return self.spec.answer_prefix

    @property
    def score_scale(self) -> tuple[float, float] | None:
        """The pointwise template's ``(min, max)`` score; None for pairwise."""
        return self.spec.score_scale

    def options(self) -> dict[str, Any]:
        """``path``, ``digest``, ``anti_hacking`` (and the file's ``name`` when it has one)."""
        out = {"path": self.path, "digest": self.digest, "anti_hacking": self.anti_hacking}
        if self.spec.name:
            out["template_name"] = self.spec.name
        return out

    # ------------------------------------------------------------------ building
    def build(self, prompt: str, responses: Sequence[str], tools: bool = False,
              max_tool_rounds: int = MAX_TOOL_ROUNDS, rubric: str | None = None) -> Messages:
        """The template's [system,] user messages with the question, response(s) and rubric filled in.

        Raises:
            TypeError: non-str prompt / responses / rubric.
            ValueError: the wrong number of responses for the template's kind.
        """
        items = check_inputs(self.name, prompt, responses, self.n_responses)
        if rubric is not None and not isinstance(rubric, str):
            raise TypeError(f"rubric must be a str or None, got {type(rubric).__name__}")
        extra = rubric_section(rubric, self._untrusted) if "rubric" not in self.spec.uses else []
        own = rubric.strip() if rubric and rubric.strip() else None
        names = ("response_a", "response_b") if self.kind == "pairwise" else ("response",)
        values = {"prompt": self._untrusted(prompt), **{n: self._untrusted(r) for n, r in zip(names, items)},
                  "rubric": self._untrusted(own) if own else (self.spec.rubric or "").strip()}
        user = self.spec.fill(self.spec.user, values)
        if extra:
            user = f"{user}\n\n{extra[0]}"
        parts = [ANTI_HACKING_INSTRUCTION] if self.anti_hacking else []
        if self.spec.system:
            parts.append(self.spec.fill(self.spec.system, values))
        if tools:
            parts.append(tools_instruction(max_tool_rounds))
        system = [{"role": "system", "content": "\n\n".join(parts)}] if parts else []
        return [*system, {"role": "user", "content": user}]

    def _untrusted(self, text: str) -> str:
        """``text`` made inert: control tags and delimiters, the template's own lines, answer-pattern matches."""
        text = neutralise_tags(text)
        lines = self._literal_re()
        if lines is not None:
            text = lines.sub(_break, text)
        try:
            return _timed(self.spec.answer.sub, _break, text)
        except ParseFailure:  # no match is known: break every word (the quoted-answer check still runs)
            return _WORD_RE.sub(_break, text)

    def _literal_re(self) -> re.Pattern[str] | None:
        lines = self.spec.literal_lines()
        if not lines:
            return None
        return re.compile("|".join(re.escape(x) for x in sorted(lines, key=len, reverse=True)), re.IGNORECASE)

    # ------------------------------------------------------------------ parsing
    def parse(self, text: str, n_responses: int | None = None) -> Decision:
        """See :meth:`JudgeProtocol.parse` and the module docstring.

        Raises:
            TypeError: ``text`` is not a str.
            ValueError: ``n_responses`` does not fit the template's kind.
        """
        if not isinstance(text, str):
            raise TypeError(f"{self.name}.parse: text must be a str, got {type(text).__name__}")
        if n_responses is not None and n_responses != self.n_responses:
            raise ValueError(f"this {self.kind} template judges {self.n_responses} response(s), "
                             f"got n_responses={n_responses}")
        try:
            region = answer_region(text)
            matches = _timed(lambda t, timeout: list(self.spec.answer.finditer(t, timeout=timeout)), region.text)
            if not matches:
                raise ParseFailure("missing_final_answer")
            meaning = agree(self._meaning(m) for m in matches)
        except ParseFailure as e:
            return Decision.invalid(e.reason, thought=thought_of(text))
        thought = region.thought
        if thought is None:
            thought = text[: region.start + matches[0].start()].strip() or None
        if self.kind == "pairwise":
            verdict, label = meaning
            return Decision(valid=True, verdict=verdict, label=label, thought=thought)  # type: ignore[arg-type]
        return Decision(valid=True, scores=(meaning,), thought=thought)

    def _meaning(self, m: regex.Match) -> Any:
        """(verdict, label or None) of a pairwise match, the score of a pointwise one."""
        answer = (m.group(1) if m.re.groups else m.group(0)) or ""
        key = answer_key(answer)
        if self.kind == "pairwise":
            value = self.spec.verdicts.get(key)
            if value is None:
                raise ParseFailure("invalid_verdict")
            return (LABEL_VERDICT[value], value) if value in LABEL_VERDICT else (value, None)
        if self.spec.score_range is not None:
            return parse_score(answer, *self.spec.score_range)
        if key not in self.spec.scores:
            raise ParseFailure("unparseable_score")
        return self.spec.scores[key]

    def quote_form(self, text: str, source: bool = False) -> str:
        """``text`` with every answer-pattern match wrapped in ``<judge_answer>…</judge_answer>``: the form
        the quoted-answer check compares (for the judge's output and, ``source=True``, the responses).

        Matches are found as a copier may rewrite them: after NFKC (full-width ``［［Ａ>>Ｂ］］``), with every
        other non-ASCII character replaced by its TR39 skeleton (a Cyrillic ``А``,
        :func:`judgerl.text.confusables.skeleton`) and case ignored; in the judge's output a zero-width joiner
        (a neutralised copy) still breaks a match, as it breaks a tag. A source is read three more ways, as a
        copier "cleans" it before copying: :func:`judgerl.protocols.quoting.copier_form` (HTML entities, URL /
        JSON / markdown escapes and HTML comments decoded, every invisible character dropped, digits of any
        script and look-alikes made ASCII), that without markdown emphasis marks, and that without spaces; the
        readings are joined by ``<think>``, which no window of a judge's output the check compares holds. So
        ``[\u200b[B>>A]]``, ``&#91;&#91;B&gt;&gt;A&#93;&#93;``, ``**[RESULT]** 5`` or ``[ [B>>A] ]`` in a response
        is recognised when the judge copies it clean.

        Raises:
            ParseFailure: ``"answer_pattern_timeout"`` when the pattern runs past
                :data:`~judgerl.protocols.template_file.ANSWER_TIMEOUT` (the decision is then void).
        """
        forms = [re.sub(r"[^\x00-\x7f\u200d]+", lambda m: skeleton(m.group(0)), unicodedata.normalize("NFKC", text))]
        if source:
            clean = copier_form(text)
            plain = re.sub(r"[*_`~]+", "", clean)
            forms += [clean, plain, re.sub(r"[ \t]+", "", plain)]
        return "\n<think>\n".join(_timed(self._quote_re().sub, _mark, form) for form in dict.fromkeys(forms))

    def _quote_re(self) -> regex.Pattern:
        return regex.compile(self.spec.answer.pattern, self.spec.answer.flags | regex.IGNORECASE)

    # ------------------------------------------------------------------ rendering and forcing
    def render_answer(self, decision: Decision) -> str:
        """``answer_prefix`` + the file's spelling of the decision's answer + ``answer_suffix``.

        Raises:
            ValueError: an invalid decision, one the maps cannot express, or prefix / suffix that the answer
                pattern does not read back as ``decision``.
        """
        if not decision.valid:
            raise ValueError(f"template: cannot render an invalid decision {decision!r}")
        answer = self._answer_text(decision)
        text = f"{self.spec.answer_prefix}{answer}{self.spec.answer_suffix}"
        back = self.parse(text)
        if back.verdict != decision.verdict or back.scores != decision.scores or (
                decision.label is not None and back.label != decision.label):
            raise ValueError(f"template {self.spec.path}: {text!r} (answer_prefix + answer + answer_suffix) does not "
                             f"read back as {decision!r} with the answer pattern {self.spec.answer.pattern!r}")
        return text

    def _answer_text(self, decision: Decision) -> str:
        spell = self.spec.spellings
        if self.kind == "pairwise":
            wanted = [decision.label, decision.verdict, VERDICT_LABEL.get(decision.verdict or "")]
            for want in wanted:
                for key, value in self.spec.verdicts.items():
                    if want is not None and value == want:
                        return spell.get(key, key)
            raise ValueError(f"template {self.spec.path}: no answer in 'verdicts' means {decision.label or decision.verdict!r}")
        if not decision.scores or len(decision.scores) != 1:
            raise ValueError(f"template: cannot render {decision!r}: needs one score")
        s = decision.scores[0]
        if self.spec.score_range is not None:
            lo, hi = self.spec.score_range
            if not lo <= s <= hi:
                raise ValueError(f"template: score {s} outside [{lo:g}, {hi:g}]")
            return format_number(s)
        for key, value in self.spec.scores.items():
            if value == s:
                return spell.get(key, key)
        raise ValueError(f"template {self.spec.path}: no answer in 'scores' has score {s:g}")

    def force_suffix(self, text: str) -> str:
        """Close an open code span / ``<think>``, then write ``answer_prefix``."""
        return close_open_spans(text) + self.spec.answer_prefix

    @property
    def forced_stop(self) -> tuple[str, ...]:
        """``answer_suffix`` (a newline when the suffix is blank)."""
        suffix = self.spec.answer_suffix
        return (suffix,) if suffix.strip() else ("\n",)

    def finish_forced(self, generated: str) -> str:
        """``generated`` with ``answer_suffix`` restored when the stop string cut it."""
        suffix = self.spec.answer_suffix
        return generated if not suffix.strip() or suffix in generated else generated + suffix


__all__ = ["QUOTE_TAG", "Template"]
