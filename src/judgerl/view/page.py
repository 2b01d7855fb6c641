"""Assemble the viewer page: one self-contained HTML file (no network, works from ``file://``).

The page is ``static/viewer.html`` with ``viewer.css`` and ``viewer.js`` inlined and the data
embedded as ``<script type="application/json">`` blocks: one block with every view but the pairs'
details, and one block per chunk of :data:`judgerl.view.evalrun.CHUNK` pairs that the script parses
the first time it shows one of them (a 10,000-judgment run opens without decoding every text).

Untrusted text (responses, judge outputs, file names) only reaches the page inside those JSON blocks,
with ``<``, ``>`` and ``&`` written as ``\\u003c`` / ``\\u003e`` / ``\\u0026`` so no text can close a
block; the script shows it with ``textContent`` only. A Content-Security-Policy allows the page's own
script and style (by SHA-256) and nothing else: no other script runs, nothing is fetched.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

from judgerl.view.evalrun import compare_view, eval_view
from judgerl.view.runs import run_kind
from judgerl.view.studies import arena_view, audit_view, policy_view

_PLACEHOLDER = re.compile(r"\{\{(CSP|CSS|JS|TITLE|DATA)\}\}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def build_views(paths: Sequence[Path], data: Path | None = None) -> list[dict[str, Any]]:
    """The views of the page for run directories ``paths``, in order (an arena's series after it).

    With exactly two eval runs among ``paths`` a comparison view comes first.

    Args:
        paths: Run directories (eval, arena, audit or policy; :func:`judgerl.view.runs.run_kind`).
        data: The preference-data file of the eval runs (default: each run.json's).

    Raises:
        RunDirError: a path is not a run directory, or a file in it is malformed.
        ValueError: ``paths`` is empty.
    """
    if not paths:
        raise ValueError("no run directories to view")
    views: list[dict[str, Any]] = []
    evals: list[int] = []
    names = _names(paths)
    for path, name in zip(paths, names):
        kind = run_kind(path)
        if kind == "eval":
            evals.append(len(views))
            views.append(eval_view(path, data=data, name=name))
        elif kind == "arena":
            arena, series = arena_view(path, name)
            views += [arena, *series]
        elif kind == "audit":
            views.append(audit_view(path, name))
        else:
            views.append(policy_view(path, name))
    if len(evals) == 2:
        a, b = (views[i] for i in evals)
        return [compare_view(a, b, evals[0] + 1, evals[1] + 1), *views]
    return views


def _names(paths: Sequence[Path]) -> list[str]:
    """Tab names: directory names, with their parent where two are equal."""
    names = [p.resolve().name or str(p) for p in paths]
    return [f"{p.resolve().parent.name}/{n}" if names.count(n) > 1 else n for p, n in zip(paths, names)]


def json_for_script(value: Any) -> str:
    """``value`` as JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&``
    characters (escaped as ``\\u003c`` …), so no text can end the block or open a comment."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    except ValueError:  # NaN / infinity (e.g. a curve record's mean of nothing): not JSON, shown as missing
        text = json.dumps(_finite(value), ensure_ascii=False, allow_nan=False, default=str)
    text = (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    # A lone surrogate (a JSON "\\ud800" escape read back, or a non-UTF-8 file name) has no UTF-8 form:
    # kept as its JSON escape, the page's string holds the same code unit.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _finite(value: Any) -> Any:
    """``value`` with every NaN / infinite float replaced by None (recursively)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _static(name: str) -> str:
    return resources.files("judgerl.view").joinpath("static", name).read_text(encoding="utf-8")


def render_page(views: Sequence[Mapping[str, Any]], title: str = "judgerl view") -> str:
    """The page's HTML for ``views`` (from :func:`build_views`).

    NaN and infinite numbers (not JSON) are shown as missing.
    """
    main = []
    blocks = []
    for v, view in enumerate(views):
        chunks = view.get("chunks") or []
        main.append({**{k: x for k, x in view.items() if k != "chunks"}, "n_chunks": len(chunks)})
        for c, chunk in enumerate(chunks):
            blocks.append(f'<script type="application/json" id="judgerl-chunk-{v}-{c}">{json_for_script(chunk)}'
                          "</script>")
    data = f'<script type="application/json" id="judgerl-data">{json_for_script(main)}</script>\n' + "\n".join(blocks)
    css, js = _static("viewer.css"), _static("viewer.js")
    csp = (f"default-src 'none'; script-src '{_sha256(js)}'; style-src '{_sha256(css)}'; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    title = html.escape(_SURROGATE.sub("\ufffd", title))  # a non-UTF-8 folder name
    parts = {"CSP": html.escape(csp), "CSS": css, "JS": js, "TITLE": title, "DATA": data}
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], _static("viewer.html"))


def write_page(paths: Sequence[Path], out: Path, data: Path | None = None) -> Path:
    """Write the viewer page of run directories ``paths`` to ``out`` (its folder is created).

    Returns:
        ``out``.

    Raises:
        RunDirError, ValueError: as :func:`build_views`.
    """
    views = build_views(paths, data=data)
    title = "judgerl view: " + ", ".join(str(v["name"]) for v in views if v["type"] != "compare")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_page(views, title=title[:200]), encoding="utf-8")
    return out


def serve_page(page: Path, port: int = 8000) -> Any:
    """An HTTP server on 127.0.0.1:``port`` serving ``page`` (and nothing else) at ``/``.

    Requests whose ``Host`` header is not ``127.0.0.1:PORT`` / ``localhost:PORT`` get 403, so a web
    page that rebinds its own name to 127.0.0.1 cannot read the run's texts.

    Uses the standard library's :class:`http.server.ThreadingHTTPServer`; call ``serve_forever()``
    on the result and ``server_close()`` when done. ``port`` 0 picks a free port
    (``server.server_address[1]``).

    Raises:
        OSError: the port is taken.
    """
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            # Another Host is a page elsewhere reaching this port through DNS rebinding: refused.
            port_s = str(self.server.server_address[1])
            if self.headers.get("Host", "") not in (f"127.0.0.1:{port_s}", f"localhost:{port_s}"):
                self.send_error(403, "Host must be 127.0.0.1 or localhost")
                return
            if self.path.split("?")[0] not in ("/", "/" + page.name):
                self.send_error(404)
                return
            body = page.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)
