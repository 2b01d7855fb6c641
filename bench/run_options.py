"""Options a bench run's results depend on, saved beside them and checked on resume (one home for the rule)."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable, Mapping


def check_options(path: Path, options: Mapping[str, Any], *, selectors: Iterable[str] = (),
                  later: Iterable[str] = ()) -> None:
    """Refuse to go on in ``path``'s directory with other values of the options the results depend on, then
    save them to ``path`` (JSON).

    ``selectors`` (options that only choose what runs now: the stages, a time budget, ``--out``) are neither
    compared nor saved. ``later`` options only shape stages that have not run yet (how a judge not yet trained
    is trained): a new value is accepted, printed, and recorded in the saved file's ``"changes"`` list
    (``{"option", "from", "to", "at"}``, ``at`` an ISO date) so a report can say which stages ran under which
    value. Values are compared as JSON (``default=str``: a path as its text). An option only one side has
    (added to or removed from the bench since the directory was begun) is not compared; saving adds it.

    Raises:
        SystemExit: an option (not a selector, not ``later``) whose value differs from the saved one, named with
            both values.
    """
    skip, free = set(selectors), set(later)
    now = json.loads(json.dumps({k: v for k, v in options.items() if k not in skip}, default=str))
    changes: list = []
    if path.is_file():
        before = json.loads(path.read_text())
        changes = list(before.pop("changes", []) or [])
        changed = sorted(k for k in now.keys() & before.keys() if before[k] != now[k])
        refused = [k for k in changed if k not in free]
        if refused:
            diff = "; ".join(f"{k}: {before[k]} -> {now[k]}" for k in refused)
            raise SystemExit(f"{path.parent} was begun with other values of {', '.join(refused)} ({diff}); pass "
                             "the same values to resume it, or use another --out")
        for k in changed:
            print(f"{path.parent}: {k} {before[k]} -> {now[k]} (applies to the stages not yet run)")
            changes.append({"option": k, "from": before[k], "to": now[k], "at": time.strftime("%Y-%m-%dT%H:%M:%S")})
    if changes:
        now["changes"] = changes
    path.write_text(json.dumps(now, indent=2, sort_keys=True))


__all__ = ["check_options"]
