"""The options a resumable bench's results depend on, kept in its ``--out``: a rerun with other values is refused.

The resumable benches (``bench_generalise.py`` through ``bench_train_judges.Stages``, ``bench_judge_as_reward.py``)
keep their finished stages in ``--out`` and go on from them; going on with another value of an option the results
depend on would mix two configurations in one report. ``judgerl.eval.store.prepare_out_dir`` does the same for one
eval run (its ``run.json``); here the options are a bench's command-line values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping


def check_options(path: Path, options: Mapping[str, Any], *, selectors: Iterable[str] = ()) -> None:
    """Refuse to go on in ``path``'s directory with other values of the options the results depend on, then
    save them to ``path`` (JSON).

    ``selectors`` (options that only choose what runs now: the stages, a time budget, ``--out``) are neither
    compared nor saved. Values are compared as JSON (``default=str``: a path as its text). An option only one
    side has (added to or removed from the bench since the directory was begun) is not compared; saving adds it.

    Raises:
        SystemExit: an option whose value differs from the saved one, named with both values.
    """
    skip = set(selectors)
    now = json.loads(json.dumps({k: v for k, v in options.items() if k not in skip}, default=str))
    if path.is_file():
        before = json.loads(path.read_text())
        changed = sorted(k for k in now.keys() & before.keys() if before[k] != now[k])
        if changed:
            diff = "; ".join(f"{k}: {before[k]} -> {now[k]}" for k in changed)
            raise SystemExit(f"{path.parent} was begun with other values of {', '.join(changed)} ({diff}); pass "
                             "the same values to resume it, or use another --out")
    path.write_text(json.dumps(now, indent=2, sort_keys=True))


__all__ = ["check_options"]
