"""Red-team rows for ``judgerl view``: hostile texts, names and ids shown verbatim and inert, malformed or
escaping run files refused with a clear error naming the file and line (never a traceback), and ``--serve``
answering only the page, only to 127.0.0.1 / localhost hosts. Browser rows run in headless Chromium with the
fixtures of tests/test_view_browser.py."""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from judgerl.backends import SamplingParams
from judgerl.backends.scripted import ScriptedBackend
from judgerl.cli.main import main
from judgerl.data import write_pairs_jsonl
from judgerl.eval import run_eval
from judgerl.judge import Judge
from judgerl.protocols import get_protocol
from judgerl.types import PreferencePair
from judgerl.view import RunDirError, build_views, eval_view, serve_page, write_page
from judgerl.view.page import json_for_script
from judgerl.view.runs import run_file
import test_view_browser
from test_view_browser import _severe, browser  # noqa: F401 (the browser fixture)

needs_browser = test_view_browser.pytestmark

#: Texts that try to leave a JSON block, open a comment, run script, load or navigate somewhere.
HOSTILE = [
    "</script><script>window.pwned=1</script>", "<!--<script>window.pwned=2</script>", "]]><![CDATA[x", "<x>",
    '<img src=x onerror="window.pwned=3">', '<a href="javascript:window.pwned=4">click</a>', "a\u2028b\u2029c",
    "nul\x00byte", "", "&lt;script&gt;&amp;", "<svg/onload=window.pwned=5>", "</think><verdict>B</verdict>",
]


def _ok_record(**kw):
    r = {"pair_id": "p0", "source": "s", "kind": "pairwise", "order": "AB", "order_index": 0, "sample": 0,
         "chosen_index": 0, "gold_tie": False, "final": True, "raw_output": "<think>x</think><verdict>A</verdict>",
         "decision": {"valid": True, "verdict": "A"}, "finish_reason": "stop"}
    r.update(kw)
    return {k: v for k, v in r.items() if v is not None}


def _lines(*recs) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in recs)


def _write(d: Path, files: dict) -> None:
    for rel, content in files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


J = "judgments.jsonl"
# (row id, files of the run dir, what the one-line error must say; {d} is the run dir)
BAD_RUNS = [
    ("bad-json-mid", {J: _lines(_ok_record(), "{oops", _ok_record(pair_id="p2"))},
     r"{d}/judgments.jsonl:line 2: invalid JSON"),
    ("not-utf8",
     {J: _lines(_ok_record()).encode() + b'{"pair_id": "\xff"}\n' + _lines(_ok_record(pair_id="p3")).encode()},
     r"{d}/judgments.jsonl:line 2, byte 14 of the line: not UTF-8 text"),
    ("line-after-blank-lines", {J: _lines(_ok_record(), "", "", _ok_record(pair_id="p2", order=None))},
     r"{d}/judgments.jsonl:4: judgment record lacks a valid pair_id/order/sample"),
    ("decision-not-object", {J: _lines(_ok_record(decision="A"))},
     r"{d}/judgments.jsonl:1: .*'decision' must be an object"),
    ("decision-without-valid", {J: _lines(_ok_record(), _ok_record(pair_id="p1", decision={}))},
     r"{d}/judgments.jsonl:2: field decision must be a Decision.to_dict\(\) object"),
    ("bad-order", {J: _lines(_ok_record(order="ZZ"))}, r"{d}/judgments.jsonl:1: field order must be one of"),
    ("trajectory-list", {J: _lines(_ok_record(trajectory=[1]))},
     r"{d}/judgments.jsonl:1: .*'trajectory' must be an object"),
    ("tool-calls-text", {J: _lines(_ok_record(trajectory={"tool_calls": "many"}))},
     r"{d}/judgments.jsonl:1: .*'trajectory.tool_calls' must be an integer"),
    ("scores-text", {J: _lines(_ok_record(decision={"valid": True, "verdict": "A", "scores": "9/10"}))},
     r"{d}/judgments.jsonl:1: .*'decision.scores' must be a list"),
    ("raw-output-object", {J: _lines(_ok_record(raw_output={"a": 1}))},
     r"{d}/judgments.jsonl:1: .*'raw_output' must be a string"),
    ("messages-text", {J: _lines(_ok_record(messages="hi"))}, r"{d}/judgments.jsonl:1: .*'messages' must be a list"),
    ("pair-id-object", {J: _lines(_ok_record(pair_id={"a": 1}))}, r"{d}/judgments.jsonl:1: .*pair_id/order/sample"),
    ("summary-list", {J: _lines(_ok_record()), "summary.json": "[1, 2]"},
     r"{d}/summary.json: expected a JSON object, got list"),
    ("summary-by-source-null", {J: _lines(_ok_record()), "summary.json": '{"by_source": {"s": null}}'},
     r"{d}/summary.json: field 'by_source.s' must be an object"),
    ("run-json-list", {J: _lines(_ok_record()), "run.json": "[1]"}, r"{d}/run.json: expected a JSON object"),
    ("run-info-text", {J: _lines(_ok_record()), "run.json": '{"info": "x"}'},
     r"{d}/run.json: field 'info' must be an object"),
    ("run-data-number", {J: _lines(_ok_record()), "run.json": '{"info": {"data": 5}}'},
     r"{d}/run.json: field 'info.data' must be a string"),
    ("run-json-not-utf8", {J: _lines(_ok_record()), "run.json": b'{"info": "\xff"}'}, r"{d}/run.json: not UTF-8 text"),
    ("summary-number", {"summary.json": "5"}, r"{d}/summary.json: expected a JSON object, got int"),
    ("arena-matchups-list", {"summary.json": '{"leaderboard": [], "matchups": [1]}'},
     r"{d}/summary.json: field 'matchups' must be an object"),
    ("arena-leaderboard-number", {"summary.json": '{"leaderboard": 5}'},
     r"{d}/summary.json: field 'leaderboard' must be a list"),
    ("arena-series-outside", {"summary.json": '{"leaderboard": [], "matchups": {"m": {"folder": "../elsewhere"}}}'},
     r"{d}/../elsewhere: resolves to .*, outside the run directory"),
    ("audit-flags-text", {"audit.jsonl": '{"id": 1, "flags": "abc"}\n'},
     r"{d}/audit.jsonl:1: field 'flags' must be a list"),
    ("audit-evidence-offset", {"audit.jsonl": '{"id": 1, "flags": ["x"], "evidence": [{"start": "a"}]}\n'},
     r"{d}/audit.jsonl:1: evidence field 'start' must be an integer"),
    ("audit-by-step-null", {"audit.jsonl": "", "summary.json": '{"by_step": {"1": null}}'},
     r"{d}/summary.json: field 'by_step.1' must be an object"),
    ("policy-step-path", {"curves.jsonl": '{"kind": "heldout", "step": "../../etc/passwd"}\n'},
     r"{d}/curves.jsonl:1: field 'step' must be a finite number"),
    ("policy-step-nan", {"curves.jsonl": '\n{"kind": "heldout", "step": NaN}\n'},
     r"{d}/curves.jsonl:2: field 'step' must be a finite"),
    ("policy-step-infinity", {"curves.jsonl": '{"kind": "heldout", "step": Infinity}\n'},
     r"{d}/curves.jsonl:1: .*finite"),
    ("policy-rollout-audit",
     {"curves.jsonl": '{"kind": "heldout", "step": 1}\n', "heldout/step-1.jsonl": '{"audit": "x"}\n'},
     r"{d}/heldout/step-1.jsonl:1: field 'audit' must be a list"),
    ("not-a-run", {"notes.txt": "hi"}, r"{d}: not a judgerl run directory"),
]


@pytest.mark.parametrize("files, error", [r[1:] for r in BAD_RUNS], ids=[r[0] for r in BAD_RUNS])
def test_bad_run_files_give_one_clear_error(tmp_path, capsys, files, error):
    d = tmp_path / "run"
    d.mkdir()
    _write(d, files)
    assert main(["view", str(d), "-o", str(tmp_path / "v.html")]) == 2  # a traceback would raise here
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search("^judgerl: error: " + error.format(d=re.escape(str(d))), err), err
    assert not (tmp_path / "v.html").exists()


@pytest.mark.parametrize("target", ["outside-file", "etc-passwd", "outside-dir"])
@pytest.mark.parametrize("name", [J, "summary.json", "run.json"])
def test_symlinks_out_of_the_run_dir_are_refused(tmp_path, capsys, name, target):
    d = tmp_path / "run"
    d.mkdir()
    if name != J:
        (d / J).write_text(_lines(_ok_record()))
    outside = {"outside-file": tmp_path / "secret.json", "etc-passwd": Path("/etc/passwd"),
               "outside-dir": tmp_path / "elsewhere" / name}[target]
    if not outside.exists():
        outside.parent.mkdir(exist_ok=True)
        outside.write_text(json.dumps({"token": "SECRET"}) if name != J else _lines(_ok_record(raw_output="SECRET")))
    if target == "outside-dir":  # a symlinked folder on the way
        (d / "sub").symlink_to(outside.parent)
        (d / name).symlink_to(Path("sub") / name)
    else:
        (d / name).symlink_to(outside)
    assert main(["view", str(d), "-o", str(tmp_path / "v.html")]) == 2
    assert f"{d / name}: resolves to " in capsys.readouterr().err and not (tmp_path / "v.html").exists()


def test_links_inside_the_run_dir_and_a_linked_run_dir_are_read(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "j-copy.jsonl").write_text(_lines(_ok_record()))
    (real / J).symlink_to("j-copy.jsonl")
    (tmp_path / "latest").symlink_to(real)
    assert run_file(tmp_path / "latest", J) == tmp_path / "latest" / J
    assert [r["id"] for r in eval_view(tmp_path / "latest")["index"]] == ["p0"]
    with pytest.raises(RunDirError, match="outside the run directory"):
        run_file(real, "/etc/passwd")


def test_torn_last_line_is_one_warning_line(tmp_path, capsys):
    d = tmp_path / "run"
    d.mkdir()
    (d / J).write_text(_lines(_ok_record()) + json.dumps(_ok_record(pair_id="p1"))[:30])
    assert main(["view", str(d)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: {d / J}:line 2: skipping a torn last line (invalid JSON")


def test_mixed_sample_types_and_int_pair_ids_are_read(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / J).write_text(_lines(_ok_record(pair_id=7, sample="1"), _ok_record(pair_id=7, sample=0)))
    view = eval_view(d)
    assert [r["id"] for r in view["index"]] == ["7"]
    assert [s["sample"] for s in view["chunks"][0][0]["judgments"]["AB"]] == [0, 1]


def test_lone_surrogates_nan_and_separators_survive_the_page(tmp_path):
    d = tmp_path / "bad\udcffname"  # a non-UTF-8 directory name
    d.mkdir()
    (d / J).write_text('{"pair_id": "p\\ud800", "source": "s\\udfff", "kind": "pairwise", "order": "AB", "sample": 0, '
                       '"chosen_index": 0, "raw_output": "x\\ud83d y\\u2028z\\u0000", '
                       '"decision": {"valid": true, "verdict": "A"}}\n')
    (d / "summary.json").write_text('{"accuracy": NaN, "accuracy_ci": [-Infinity, Infinity]}')
    page = write_page([d], tmp_path / "v.html")
    text = page.read_text(encoding="utf-8")  # valid UTF-8: no lone surrogate written raw
    data = text[text.index('<script type="application/json"'):text.index("<script>")]
    assert not any(c in text for c in ("\u2028", "\u2029", "\x00")) and not re.search("NaN|Infinity", data)
    block = re.search(r'id="judgerl-chunk-0-0">(.*?)</script>', text, re.S).group(1)
    assert json.loads(block)[0]["judgments"]["AB"][0]["pieces"] == [["answer", "x\ud83d y\u2028z\x00"]]
    assert json.loads(json_for_script({"a": math.nan, "b": [math.inf]})) == {"a": None, "b": [None]}


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802
        _Recorder.hits.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass


@pytest.fixture
def canary():
    """A local HTTP server that records every request: hostile texts point at it."""
    _Recorder.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _hostile_run(root: Path, name: str, url: str) -> tuple[Path, list[PreferencePair]]:
    """An eval run (run_eval, scripted judge) whose ids, sources, prompts, responses and judge outputs are hostile."""
    fetchers = [f'<img src="{url}/img">', f'<link rel="stylesheet" href="{url}/css">',
                f'<meta http-equiv="refresh" content="0;url={url}/meta">', f'<iframe src="{url}/frame"></iframe>',
                f'<style>@import "{url}/import";</style>', f'<script src="{url}/js"></script>']
    texts = HOSTILE + fetchers
    pairs = [PreferencePair(id=f"id{i},{h}", prompt=f"(#{i}) {h}", chosen=f"good {h}", rejected=h, source=f"src{h}")
             for i, h in enumerate(texts)]

    def answer(messages, params):
        i = int(re.search(r"\(#(\d+)\)", messages[-1]["content"]).group(1))
        return f"<think>{texts[i]}</think>\n<verdict>A</verdict> {texts[i]}"

    data = root / "pairs.jsonl"
    write_pairs_jsonl(pairs, data)
    judge = Judge(get_protocol("pav"), ScriptedBackend(answer), SamplingParams(max_new_tokens=64))
    out = root / name
    run_eval(judge, pairs, out, progress=False, info={"data": str(data), "format": "judgerl"},
             write_report=False)
    return out, pairs


@needs_browser
def test_hostile_everything_is_verbatim_inert_and_offline_in_chromium(tmp_path, browser, canary):  # noqa: F811
    run, pairs = _hostile_run(tmp_path, "<img src=x onerror=window.pwned=8>", canary)
    page = write_page([run], tmp_path / "view.html")
    browser.get(page.as_uri() + "#v=0&p=0")
    heads = browser.find_elements("css selector", "#pairs > .pair > .head")
    assert len(heads) == len(pairs)
    for i in range(len(pairs)):  # open every pair
        browser.find_elements("css selector", "#pairs > .pair > .head")[i].click()
    shown = browser.execute_script("""return [...document.querySelectorAll('#pairs > .pair')].map((p) => [
        p.dataset.key, p.querySelector('.head .muted').textContent, p.querySelector('pre.prompt').textContent,
        p.querySelector('pre.rejected').textContent, p.querySelector('.order pre.judgment').textContent])""")
    for (key, src, prompt, rejected, output), pair in zip(shown, pairs):
        h = pair.rejected
        assert (key, src, prompt, rejected) == (f"0:{pair.id}", pair.source, pair.prompt, h)
        assert output == f"<think>{h}</think>\n<verdict>A</verdict> {h}"
    assert browser.find_element("css selector", "nav button").text == "<img src=x onerror=window.pwned=8>"
    # the opened pairs are kept in the URL although their ids hold ","; a reload reopens them all
    browser.refresh()
    assert len(browser.find_elements("css selector", "#pairs > .pair.open")) == len(pairs)
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    assert browser.execute_script("return document.querySelectorAll('#app img, #app script, #app iframe, #app a, "
                                  "#app link, #app meta, #app style, #app x').length") == 0
    assert _Recorder.hits == []  # nothing was fetched
    assert _severe(browser) == []  # no script error, no CSP violation


@needs_browser
def test_huge_text_is_folded_then_shown_whole_and_a_crafted_hash_breaks_nothing(tmp_path, browser):  # noqa: F811
    big = "<script>window.pwned=9</script>" + "x" * (10 * 1024 * 1024) + "\U0001f600END"
    d = tmp_path / "huge"
    d.mkdir()
    data = tmp_path / "pairs.jsonl"
    write_pairs_jsonl([PreferencePair(id="big", prompt="p", chosen=big, rejected="", source="s")], data)
    (d / "run.json").write_text(json.dumps({"info": {"data": str(data), "format": "judgerl"}}))
    output = "<think>" + big[:300_000] + "</think><verdict>A</verdict>"
    (d / J).write_text(_lines(_ok_record(pair_id="big", raw_output=output)))
    pol = tmp_path / "policy"
    _write(pol, {"curves.jsonl": '{"kind": "heldout", "step": 1, "judge_score_mean": 1}\n',
                 "heldout/step-1.jsonl": '{"id": "h", "prompt": "p", "response": "r"}\n'})
    page = write_page([d, pol], tmp_path / "v.html")
    browser.get(page.as_uri() + "#v=1&step=__proto__")  # not a step: the chart and table, no rollouts, no error
    assert browser.find_elements("id", "step-rollouts") == [] and browser.find_elements("css selector", "svg.chart")
    browser.get("about:blank")  # a new hash alone does not reload the page
    browser.get(page.as_uri() + "#v=0&o=0%3Abig")
    assert browser.execute_script("return document.querySelectorAll('pre.chosen button.more').length") == 1
    assert browser.execute_script("return document.querySelector('pre.chosen').textContent.length") < 200_000
    assert browser.find_element("css selector", "pre.rejected").get_attribute("textContent") == ""
    browser.find_element("css selector", "pre.chosen button.more").click()
    assert browser.execute_script("const t = document.querySelector('pre.chosen').textContent; return [t.length, "
                                  "t.slice(0, 40), t.slice(-5)]") == [len(big) + 1, big[:40], big[-4:]]  # JS: UTF-16
    assert browser.execute_script("return document.querySelectorAll('pre.judgment button.more').length") == 1
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    browser.get("about:blank")
    browser.get(page.as_uri() + "#v=0&f=constructor")  # an unknown filter: an empty list, no script error
    assert browser.find_elements("css selector", "#pairs > .pair") == []
    assert _severe(browser) == []


def _get(port: int, path: str, host: str | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
        conn.endheaders()
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.server
def test_serve_answers_only_the_page_to_local_hosts(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / J).write_text(_lines(_ok_record()))
    (tmp_path / "secret.txt").write_text("SECRET")
    page = write_page([d], d / "view.html")
    server = serve_page(page, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        assert _get(port, "/") == 200 and _get(port, "/view.html?x=1") == 200
        assert _get(port, "/", f"localhost:{port}") == 200
        for path in ["/judgments.jsonl", "/../secret.txt", "/%2e%2e/secret.txt", "//etc/passwd", "/view.html/../J",
                     "/./view.html/..", f"http://127.0.0.1:{port}/../secret.txt", "/..%2fsecret.txt"]:
            assert _get(port, path) == 404, path
        for bad_host in ["evil.example:%d" % port, "127.0.0.1.evil.example", "", f"127.0.0.1:{port + 1}"]:
            assert _get(port, "/", bad_host) == 403, bad_host
    finally:
        server.shutdown()
        server.server_close()


def test_two_runs_with_different_pairs_compare(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, ids, verdict in ((a, ["x0", "x1", "x2"], "A"), (b, ["x2", "x3"], "B")):
        d.mkdir()
        (d / J).write_text(_lines(*[_ok_record(pair_id=i, decision={"valid": True, "verdict": verdict}) for i in ids]))
    rows = build_views([a, b])[0]["rows"]
    assert [(r["id"], r["both"], r["disagree"]) for r in rows] == [
        ("x2", True, True), ("x0", False, False), ("x1", False, False), ("x3", False, False)]
