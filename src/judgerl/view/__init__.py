"""A self-contained HTML viewer of judgerl runs (``judgerl view``; docs/viewer.md).

One static page (no network, works from ``file://``) for eval runs (summary with CIs, per-source
table, filterable pairs with both orders' judgments: thinking, code, interpreter output and the final
answer highlighted, and why an invalid one is invalid), two eval runs side by side (disagreements
first), arena leaderboards, audits (flagged responses with evidence spans) and policy studies
(train-judge vs gold curves with the rollouts behind each point).

Modules: :mod:`~judgerl.view.runs` (reading run directories, read-only), :mod:`~judgerl.view.pieces`
(splitting a judge output for display), :mod:`~judgerl.view.evalrun` (eval and comparison data),
:mod:`~judgerl.view.studies` (arena, audit, policy data), :mod:`~judgerl.view.page` (the HTML page
and the optional local server); the page's HTML / CSS / JS are package data in ``static/``.
"""

from judgerl.view.evalrun import FLAGS, compare_view, eval_view, pair_flags
from judgerl.view.page import build_views, render_page, serve_page, write_page
from judgerl.view.pieces import PIECE_KINDS, judgment_pieces
from judgerl.view.runs import RunDirError, run_kind
from judgerl.view.studies import arena_view, audit_view, marked_pieces, policy_view

__all__ = ["FLAGS", "PIECE_KINDS", "RunDirError", "arena_view", "audit_view", "build_views", "compare_view",
           "eval_view", "judgment_pieces", "marked_pieces", "pair_flags", "policy_view", "render_page", "run_kind",
           "serve_page", "write_page"]
