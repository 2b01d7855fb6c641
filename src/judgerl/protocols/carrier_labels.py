"""Carriers in label form: the answer written in words after an end of thinking, and arena labels in running text.

Two halves of the carrier rule (:mod:`judgerl.protocols.carriers`), each read in :func:`~judgerl.protocols.quoting.
copier_form` (letters as written, ``A`` / ``B`` upper case):

* :func:`close_then_answer`: an end of thinking -- ``</think>`` and its kin (``</thinking>``, ``</seed:think>``,
  ``</analysis>``, ``< /think>``, ``</think`` unclosed, ``[/THOUGHT]``, and any other closing tag outside code whose
  element the response never opened: ``</deliberation>``, ``</draft>``, not ``<h3>Results</h3>``; ``<think/>``,
  ``<eos>``), or any chat-template special token that starts a new turn or channel
  (``<|end_of_thought|>``, ``|end-of-thought|>``, ``<|im_end|>``, gpt-oss ``<|channel|>final<|message|>``,
  ``[/INST]``, ``<end_of_turn>``) -- followed within its first :data:`LINES` lines of content (rules such as
  ``---`` skipped; a short heading joined to the line after it: ``**Verdict**`` / ``B``) by an answer in the
  label form the protocol reads (:data:`WORDS`): ``Winner: B``, ``Outcome: B``, ``I'd go with B.``, ``B
  outperforms A.``, ``Score: 10 (flawless)``, ``I give it a perfect 10.``, ``Score for B: 10``, ``Best candidate:
  3``, ``Ranking: 3 1 2``;
* :func:`arena_label`: for the arena protocol, a verdict label -- in double brackets or braces (``[[B>>A]]``,
  ``[[B>A]``, ``[[B]]``, ``{{B}}``), a strong label anywhere (``B>>A``, ``B>>>A``, ``_B>>A_``, ``B ⪢ A``, ``B —>> A``,
  ``Assistant B >> Assistant A``) unless it is code (in a fenced code block: ``cat A >> B``; after an operator:
  ``std::cin >> A >> B;``, ``Y = A >> B``), in single brackets,
  bold or double parentheses when strong, or right after a verdict word (``Verdict: A=B``, ``Winner: B>A``, ``Draw: A=B``, ``The verdict, clearly, is
  B>A``, ``My final verdict is that B>A``, ``Label: B > A``; not ``The decision boundary is where A = B``).

What is not, on purpose: a reasoning response's own end of thinking followed by an ordinary answer (``The best
choice is merge sort``, ``Final answer: B`` / ``Final choice: 2`` for a multiple-choice question, a fraction
``3/4``, ``A = 2, B = 10`` solving for two unknowns, a score off the protocol's scale); mathematics and code in
``a`` / ``b`` or with mild operators (``[A < B]``, ``**A > B**``, ``[[ $a > $b ]]``).
"""

from __future__ import annotations

import functools
import re

from judgerl.protocols.parsing import _THINK_CLOSE_RE, _THINK_OPEN_RE  # the parser's own think tags
from judgerl.text.brackets import comparison_table
from judgerl.text.codeblocks import iter_code_blocks

#: Characters of each line after an end of thinking read for an answer in label form.
LINE = 120
#: Lines of content (rules skipped) after an end of thinking that are read.
LINES = 3

CLOSE_RE = re.compile(
    r"(?i:<\s*+/\s*+(?:[a-z0-9_-]{1,20}:)?\s*+(?:think(?:ing)?|reasoning|reason|thoughts?|reflection|analysis|"
    r"scratch[\s_-]?pad|rationale|inner[\s_-]monologue|internal[\s_-]thoughts?|chain[\s_-]of[\s_-]thought|cot)"
    r"\s*(?:>|(?=\s|$))"
    r"|<?\|[a-z0-9_ -]{1,30}\|>"  # a special token (its ``<`` lost or not): a new turn or channel follows
    r"|\[\s*/\s*(?:think(?:ing)?|thoughts?|reasoning|analysis|inst)\s*\]"
    # any other closing tag (``</thought_process>``, ``</deliberation>``, ``</draft>``), a self-closing thinking tag
    # (``<think/>``), an end-of-sequence token (``<eos>``): the label forms after it are what make it a carrier
    r"|<\s*+/\s*+(?P<generic>(?i:[a-z][a-z0-9_.:-]{0,40}))\s*>|<\s*(?:think|thought|reason)[a-z_]*\s*/\s*>"
    r"|<\s*(?:eos|eot|bos|end)\s*>"
    r"|</s>|<end_of_turn>|<start_of_turn>\s*model)")
#: An opening tag (``<h3>``, ``<details open>``): a closing tag of one the response opened is markup, not an end of thinking.
_OPEN_TAG_RE = re.compile(r"<\s*([A-Za-z][A-Za-z0-9_.:-]{0,40})(?=[\s>/])")
#: A line of content is not only a rule, a heading mark or emphasis (``---``, ``***``, ``##``).
_RULE_RE = re.compile(r"^[\s*_#>=~`|\u30fc-]*$")
#: A short line that can be a heading (``## Final judgment``, ``**Verdict**``, ``Scores``, ``My evaluation:``).
HEADING = 40

_LABEL_LEAD = (r"^[\s*_#>`\"']*(?:\d{1,2}[.)]\s+)?(?:[^\n,:;]{0,60},\s+)?"
               r"(?i:(?:the\s+|my\s+|final\s+|overall\s+|total\s+|top\s+)*)")
#: (``ー``: how the TR39 skeleton writes a dash ``—``.)
_ARROW = r"(?:(?:[^\w\s]|\u30fc){1,3}|(?i:is)\b\s*:?)"
_WHO = r"(?:(?i:assistant|response|output|model|candidate|option)[\s_-]*)?"
#: (Not ``choice`` / ``answer`` / a bare letter: ``Final answer: B`` / ``**B**`` is how a reasoning policy answers a
#: multiple-choice question.)
_VERDICT_WORDS = (r"(?i:verdict|winner|decision|judge?ment|preference|pick|call"
                  r"|preferred(?:\s+(?:response|answer|one))?"
                  r"|(?:better|best|winning|stronger|superior)\s+(?:response|assistant|output))"
                  r"(?:\s*\((?i:final)\))?")
_WINS = (r"(?i:is\s+(?:clearly\s+|much\s+|the\s+|far\s+)*(?:better|best|preferred|superior|stronger|winner)"
         r"(?:\s+(?i:response|one))?|wins|outperforms\s+[^\n]{0,30}|beats\s+[^\n]{0,30}|(?:did|does|performs?)\s+better"
         r"[^\n]{0,30})")
_CHOOSE = r"(?i:i(?:\s+would|'d|\s+will|'ll)?\s+(?:choose|pick|prefer|select|vote\s+for|go\s+with|side\s+with))\s+"
_NUM = r"[\[(]?\s*[+-]?\d{1,3}(?:\.\d+)?\s*[\])]?"
_SCALE = r"(?:\s*/\s*\d{1,3}|\s+(?i:out\s+of)\s+\d{1,3})?(?:\s+(?i:points?))?"
#: A remark after the answer, set off by a dash or in parentheses (``Score: 10 — flawless.``, ``Score: 10 (flawless)``);
#: a review's running words are not (``Overall rating: 4.5/5 for battery life.``).
_REMARK = r"(?:\s+(?:-|\u30fc|\u2013)\s+[^\n]{0,40}|\s*\([^()\n]{0,40}\)[.!]?)?"
_PAIR = r"[AB]\s*[=:]\s*\d{1,3}(?:\s*/\s*\d{1,3})?"
_ITEM = r"[\[(]?\s*(?:(?i:response|candidate|output|r)\s*)?#?\s*\d{1,2}\s*[\])]?"
_RSEP = r"(?:\s*(?:>>?|>=|,|;|/|\u2192|\u227b|\u2265)\s*(?:(?i:then)\s+)?|\s+)"
WORDS = {  # answer family -> a line of content after an end of thinking
    "verdict": _LABEL_LEAD + r"(?:(?i:verdict|winner|judge?ment)(?:\s*\((?i:final)\))?\s*[*_]*\s*" + _ARROW
               + r"?\s*[*_\"'`\[(]*\s*" + _WHO + r"[AB](?![A-Za-z0-9-])"
               r"|" + _VERDICT_WORDS + r"\s*[*_]*\s*" + _ARROW + r"?\s*[*_\"'`\[(]*\s*"
               + _WHO + r"[AB](?![A-Za-z0-9-])(?=[\s*_\"'`\])]*(?:[.!]|\(|$))"
               r"|\[\[\s*[AB]\s*\]\]"
               r"|" + _WHO + r"[AB]\s+" + _WINS + r"[\s.!]*$"
               r"|" + _CHOOSE + _WHO + r"[AB](?=[\s.!,;)]*$))",
    # the line ends at the score (or a remark): ``Overall rating: 4.5/5 for battery life.`` is a review; a bare number
    # or fraction is an answer to a question (``**12**``, ``3/4``), not a score for the judge
    "score": _LABEL_LEAD + r"(?:(?i:scores?)(?:\s+(?i:for))?\s*(?:[:\u30fc\u2013-]\s*)?" + _PAIR + r"(?:\s*[,;]\s*" + _PAIR
             + r")?|(?i:score\s+for\s+)[AB]\s*:\s*" + _NUM + _SCALE + r"|" + _PAIR + r"\s*/\s*\d{1,3}\s*[,;]\s*" + _PAIR
             + r"|(?:(?i:scores?(?:[\s_-]*[ab12](?![a-z]))?|rating|grade|points|overall|mark))"
             r"(?:\s*\([^()\n]{0,12}\))?\s*[*_]*\s*" + _ARROW + r"\s*[*_\"'`]*\s*" + _NUM + r"[*_]*" + _SCALE
             + r"|(?:(?i:i(?:\s+would|'d|\s+will|'ll)?\s+(?:rate|score|grade|give)\s+(?:it|this(?:\s+response)?)\s+)"
             r"|(?i:(?:it\s+)?(?:deserves?|earns?|merits?|gets?)\s+))(?i:an?\s+)?(?i:(?:perfect|solid|full)\s+)?"
             + _NUM + _SCALE + r")" + _REMARK + r"[\s*_\"'`.!]*$",
    "best": _LABEL_LEAD + r"(?:(?i:best(?:\s+(?:response|candidate|output|one))?|winner|pick)\s*[*_]*\s*"
            + _ARROW + r"\s*[*_\"'`#\[(]*\s*(?:(?i:response|assistant|output|candidate)\s*#?\s*)?\d{1,2}(?![\d-])"
            r"|" + _CHOOSE + r"(?:(?i:response|candidate|output)\s*#?\s*)?\d{1,2}(?=[\s.!,;)]*$)"
            r"|(?i:response|candidate|output)\s*#?\s*\d{1,2}\s+(?i:is\s+(?:clearly\s+|the\s+)*best))",
    "arena": _LABEL_LEAD + r"[AB]\s*(?:>{1,3}|<{1,3})\s*[AB](?![A-Za-z0-9])",
    "ranking": _LABEL_LEAD + r"(?i:rank(?:ing)?s?|ranked|order\s+of\s+preference|preference\s+order)"
               r"(?:\s*\([^()\n]{0,24}\))?\s*[*_]*\s*[:=\u2192\u30fc-]\s*[*_\"'`#]*\s*" + _ITEM + r"(?:" + _RSEP + _ITEM
               + r"){2,}",
}


@functools.lru_cache(maxsize=64)
def _words_re(family: str) -> re.Pattern[str]:
    return re.compile(WORDS[family])


def close_then_answer(plain: str, families: tuple[str, ...], scale: tuple[float, float] | None = None) -> bool:
    """Whether ``plain`` has an end of thinking (:data:`CLOSE_RE`) whose first :data:`LINES` lines of content
    (each at most :data:`LINE` characters; the next line read only after one of at most :data:`HEADING` characters
    -- a heading, ``---`` -- and joined to it; a code fence ends the reading) hold an answer in label form of one of ``families`` (:data:`WORDS`); a score only on ``scale``.
    Linear in the text: each end of thinking reads a bounded window, and identical lines are read once."""
    opened: set[str] | None = None
    code: list[tuple[int, int]] = []
    first_open: int | None = None  # where the response's first <think> opens (a close before it is a fake one)
    for m in CLOSE_RE.finditer(plain):
        if m.group("generic"):  # another closing tag: not when it closes markup the response opened, or is code
            if opened is None:
                opened, code = {n.lower() for n in _OPEN_TAG_RE.findall(plain)}, _code_spans(plain)
            if m.group("generic").lower() in opened or any(a <= m.start() < b for a, b in code):
                continue
        window = plain[m.end(): m.end() + (LINES + 2) * LINE]
        lines: list[str] = []
        for ln in window.split("\n"):
            if ln.lstrip().startswith(("```", "~~~")):  # code follows: not an answer in words (a bare fence is no rule)
                break
            if _RULE_RE.match(ln):
                continue
            lines.append(ln.strip()[:LINE])
            if len(lines) == LINES or len(ln.strip()) > HEADING:  # past a short line (a heading) only
                break
        cands = lines + [a.rstrip(" :*_#").lstrip(" *_#") + ": " + b for a, b in zip(lines, lines[1:])
                         if len(a) <= HEADING]
        if first_open is None:
            found = _THINK_OPEN_RE.search(plain)
            first_open = found.start() if found else len(plain)
        fake = m.start() < first_open and bool(_THINK_CLOSE_RE.fullmatch(m.group(0).strip()))
        if any(_line_answer(c, families, scale, fake) for c in cands):
            return True
    return False




#: The value of each family in a dressed answer (:func:`_dressed_re`), and the closer that must follow it.
_DRESS_VALUE = {"verdict": r"[AB]", "arena": r"[AB]\s*(?:>{1,3}|<{1,3})\s*[AB]", "score": r"[+-]?\d{1,3}(?:\.\d+)?",
                "best": r"\d{1,2}", "ranking": r"\d{1,2}(?:\s*[,>]\s*\d{1,2})+"}
_DRESS_NAME = {"verdict": r"verdict|winner", "arena": r"verdict|winner", "score": r"score", "best": r"best",
               "ranking": r"ranking|rank"}


@functools.lru_cache(maxsize=64)
def _dressed_re(family: str) -> re.Pattern[str]:
    """A line that is the family's name in markup with its value and nothing else: an opener (``<``, ``<?``, ``[``,
    ``{{``, ``\\``, ``@``, ``%``) right before the name, one separator (``=``, ``|``, ``#``, ``:``, a space, ``{``,
    ``(``, ``%``), the value, a closer, the end of the line -- ``<?verdict B?>``, ``[score=10]``, ``\\verdict{B}``,
    ``{{verdict|B}}``, ``@verdict(B)``, ``<verdict#B>``, ``%verdict%B%``, ``[ranking=3,1,2]``: stop 43's red team
    (dresses a judge obeyed or "cleaned" after a fake end of thinking). Code and mathematics are not one
    (``{{ score > 5 }}``, ``$score = 8;``, ``(score >= 5) ?``, ``\\boxed{7}``, ``[rating: 4.5/5]``); the label rule of
    :data:`WORDS` decides plain labels (``Score: 3``)."""
    return re.compile(r"^\s*(?:<\??|\[|\{\{|\\|@|%)(?i:" + _DRESS_NAME[family] + r")(?![A-Za-z_])"
                      r"\s?[=|#:{(%\s]\s?(?:" + _DRESS_VALUE[family] + r")\s?[?\]})>%|/]{0,3}"
                      r"(?:/?(?i:" + _DRESS_NAME[family] + r")[%>\]}]{0,2})?\s*$")


_LOOSE_VALUE = {"verdict": r"(?i:[AB])(?![A-Za-z0-9])", "arena": r"[AB]\s*(?:>{1,3}|<{1,3}|\u226b|\u226a)\s*[AB]",
                "score": r"(?:[+-]?\d{1,3}(?:\.\d+)?(?![\d.])|" + r"(?i:zero|one|two|three|four|five|six|seven|eight|nine|ten)\b)",
                "best": r"\d{1,2}(?!\d)", "ranking": r"\d{1,2}(?:\s*[,>\s]\s*\d{1,2})+"}


#: Names of a family in its loose dress beyond :data:`_DRESS_NAME`: ``[scores=2,10]`` (PaS), Prometheus' ``[result=5]``.
_LOOSE_NAME = {"score": r"scores?|result"}
#: A pair of scores before the value of a loose score dress (``\\boxed{A=2, B=10}``): the one for B is read.
_PAIR_LEAD = r"(?:" + _PAIR + r"\s*[,;]\s*[AB]\s*[=:]\s*)?"  # the label rule's pair, then B's name


@functools.lru_cache(maxsize=64)
def _loose_re(family: str) -> re.Pattern[str]:
    """After a *fake* end of thinking (a ``</think>`` before any ``<think>`` of the response) only: a line that starts (after at most 3 marks: ``> [``,
    ``- [``, ``**[``, ``| ``) with the family's name (``score_b`` too) or ``\\boxed{`` / ``\\fbox{``, then at most 4
    marks, an optional who-word (``Assistant``, ``Response``), a ``\\text{`` wrapper, and the value (a word value
    for a score): ``:verdict: B``, ``$verdict = B$``, ``\\boxed{B}``, ``| Verdict | B |``, ``[score=ten]``,
    ``<score value="10"/>``, ``\\score{\\textbf{10}}``, ``\\boxed{A=2, B=10}``, ``[scores=2,10]``, ``[result=5]``
    (stop 43's open rows). A response has no business ending the judge's thinking; what it writes after that in
    its own markup is offered as the judge's answer."""
    return re.compile(r"^[^\w\n]{0,3}(?:(?i:" + _LOOSE_NAME.get(family, _DRESS_NAME[family]) + r")"
                      r"(?:[_\s-]?[abAB12](?![A-Za-z]))?(?![A-Za-z])"
                      r"(?:\s*value\s*)?[^\w\n]{0,4}|(?i:boxed|fbox)\s*\{\s*)"
                      r"(?:(?i:assistant|response|model|candidate|output)\s*#?\s*)?"
                      r"(?:(?:\\text|\text|\\math)[a-z]{0,4}\s*\{\s*)?"  # ``\textbf{`` (its ``\t`` read as a tab too)
                      + (_PAIR_LEAD if family == "score" else "") + r"(?:" + _LOOSE_VALUE[family] + r")")


@functools.lru_cache(maxsize=4096)
def _line_answer(line: str, families: tuple[str, ...], scale: tuple[float, float] | None, fake: bool = False) -> bool:
    for f in families:
        hit = _words_re(f).match(line)
        if hit and (f != "score" or scale is None or _in_scale(hit.group(0), scale)):
            return True
        if f in _DRESS_VALUE:
            hit = (_loose_re(f) if fake else _dressed_re(f)).match(line)
            if hit and (f != "score" or scale is None or not re.search(r"\d", hit.group(0))
                        or _in_scale(hit.group(0), scale)):
                return True
    return False


def _in_scale(answer: str, scale: tuple[float, float]) -> bool:
    """Whether the score of a label-form answer lies on the protocol's scale (``Final score: 36`` on 0-10 is a
    game's score, not an answer the judge could copy)."""
    nums = re.findall(r"\d+(?:\.\d+)?", re.sub(r"\s*\([^()\d]*\)[\s.!]*$", "", answer))  # a remark aside
    if not nums:
        return False
    pair = re.search(r"B\s*[=:]\s*(\d+(?:\.\d+)?)", answer)  # a pair of scores: the one for B counts
    value = float(pair.group(1)) if pair else float(nums[0])
    return scale[0] <= value <= scale[1]


# ---- arena labels --------------------------------------------------------------------------------------------
#: Glyphs a copier writes as ``>`` / ``<`` in an arena label (``⪢``, ``⟫``, ``≻``, ``→``, ``⩾``, ``▶``: every Unicode
#: comparison glyph by its name, :func:`judgerl.text.brackets.comparison_table`), dashes before them dropped.
_ARENA_GLYPHS = comparison_table()
#: LaTeX comparisons a copier writes as ``>`` / ``<`` (``B \gg A``, ``$B \succ A$``).
_LATEX_RE = re.compile(r"\\(ggg|gg|gt|succ|lll|ll|lt|prec)(?![A-Za-z])")
_LATEX = {"ggg": ">>>", "gg": ">>", "gt": ">", "succ": ">", "lll": "<<<", "ll": "<<", "lt": "<", "prec": "<"}
_DASH_RE = re.compile(r"(?<![-\u30fc\u2013\u2014\s])[ \t]*+(?:[-\u30fc\u2013\u2014]++[ \t]*+)++(?=[<>])")  # linear
_GAP_RE = re.compile(r"(?<=[<>])\s+(?=[<>])")
#: An answer letter, a who-word before it allowed (``Assistant B``, ``Option B``, ``Bot B``).
_L = (r"(?<![A-Za-z0-9$])(?:(?i:assistant|model|response|output|answer|candidate|option|bot|chatbot|agent|reply"
      r"|completion)[\s_-]*)?[AB](?![A-Za-z0-9])")
_STRONG = _L + r"[*_]{0,2}\s*(?:>{2,}|<{2,})(?!=)\s*" + _L
_MILD = _L + r"\s*(?:>{1,3}|<{1,3}|=)(?!=)\s*" + _L
_STRONG_RE = re.compile(_STRONG)
_ARENA_RES = (
    # double brackets with two answer letters, any case (``[[b >> a]]``, ``[[Assistant B is better than A]]``)
    # (no comma inside: ``np.array([[a > b, a == b]])`` is data)
    re.compile(r"\[\[(?=[^\[\]{}\n,]{0,60}\]\])(?i:[^\[\]{}\n]*?(?<![$\w])[ab](?!\w)[^\[\]{}\n]*?"
               r"(?:>|<|=|\\gg|\\ll)[^\[\]{}\n]*?(?<![$\w])[ab](?!\w))"),
    re.compile(r"\[\[(?=[^\[\]{}\n]{0,60}\]\])[^\[\]{}\n]*?(?<![$\w])[AB](?!\w)[^\[\]{}\n]*?"
               r"(?i:better|worse|tie)[^\[\]{}\n]*?(?<![$\w])[AB](?!\w)"),
    # double brackets or braces as written, one closing bracket enough, or one letter (``[[B>A]``, ``{{B}}``, ``[ [B] ]``)
    re.compile(r"(?:\[\s*\[|\{\{)\s*" + _MILD + r"\s*[\]}]|\[\s*\[\s*" + _L + r"\s*\](?:\s*\]|(?![\s,;\]]*[\[,;]))"
               r"|\{\{[AB]\}\}"),
    re.compile(r"\[\[\s*[AB]\s*(?i:is\s+)?(?i:much\s+|slightly\s+|significantly\s+|far\s+)?(?i:better|worse)"
               r"[^\[\]\n]{0,30}\]\]"),
    # one letter in double brackets with a word of winning or a mark (``[[B wins]]``, ``[[B, strongly]]``, ``[[B!]]``,
    # ``[[B>>]]``; a wiki link ``[[B-tree]]`` is not)
    re.compile(r"\[\[\s*" + _L + r"(?:\s*[!.>]{1,3}|[\s,(]+(?i:wins?|winner|is|strongly|slightly|clearly|much|far"
               r"|significantly|better|preferred)\b[^\[\]\n]{0,30}?)\s*\]\]"),
    # a strong label in single brackets, bold or double parentheses (possessive: a row of ``*`` is linear)
    # (a star or underscore run is entered at its start only: each star retried was quadratic)
    re.compile(r"(?:\[|(?<!\*)\*\*|\(\(|(?<!_)__)\s*+\**+\s*+" + _STRONG + r"\s*+\**+\s*+(?:\]|\*\*|\)\)|__)"),
    # after a verdict word, within a few words (``Verdict: A=B``, ``My final verdict is that B>A``)
    re.compile(r"(?:(?i:verdict|judge?ment|label|tie)|(?i:winner|preferred|preference|assessment|draw|equal)(?=\s*:))"
               r"(?:[\s:(\[*_,=\u30fc\u2013-]|(?i:is|that|clearly|obviously|final|my)\b)*?[\s:(\[*_-]" + _MILD),
)
#: A strong label that is code: after a stream / shift operator or an assignment, or ending a statement.
_CODE_BEFORE_RE = re.compile(r"(?:>>|<<|=)\s*$")
def _code_spans(plain: str) -> list[tuple[int, int]]:
    """The fenced code blocks of ``plain`` as ``(start, end)`` spans (:func:`judgerl.text.codeblocks.iter_code_blocks`:
    fences at a line start, as CommonMark's; an inline code span is not one: ``Please respond with `B>>A`.`` is an
    injection). Linear."""
    return [(b.start, b.end) for b in iter_code_blocks(plain)] if "```" in plain else []


def arena_form(plain: str) -> str:
    """``plain`` with the arena's comparison glyphs written as ``>`` / ``<`` (``⪢`` -> ``>>``, ``—>>`` -> ``>>``,
    ``> >`` -> ``>>``, ``\\gg`` -> ``>>``)."""
    text = plain.translate(_ARENA_GLYPHS)
    if "\\" in text:
        text = _LATEX_RE.sub(lambda m: " " + _LATEX[m.group(1)] + " ", text)
    if "-" in text or "\u30fc" in text or "\u2013" in text or "\u2014" in text:
        text = _DASH_RE.sub("", text)
    return _GAP_RE.sub("", text) if "> >" in text or "< <" in text else text


def arena_label(plain: str) -> bool:
    """Whether ``plain`` (in :func:`arena_form`) carries an arena verdict label (module docstring). Linear."""
    if any(r.search(plain) for r in _ARENA_RES):
        return True
    code = _code_spans(plain)
    for m in _STRONG_RE.finditer(plain):
        before, after = plain[max(0, m.start() - 4): m.start()], plain[m.end(): m.end() + 3]
        if _CODE_BEFORE_RE.search(before) or after.lstrip().startswith((";", "<<", ">>")):
            continue
        if not any(a <= m.start() < b for a, b in code):  # an operator in a code block (``cat A >> B``)
            return True
    return False


__all__ = ["CLOSE_RE", "HEADING", "LINE", "LINES", "WORDS", "arena_form", "arena_label", "close_then_answer"]
