"""pytest parameters for a red-team pass's rows (tests/support/redteam15_rows.py and later): a voided injection and
a standing honest judgment are plain parameters; an open injection and a voided honest check are strict xfails, so
they fail loudly once the rule changes."""

from __future__ import annotations

import pytest


def injection_params(rows, pass_no: int):
    """``(protocol, response, judge key)`` parameters of ``(category, protocol, response, key, open)`` rows."""
    for i, (cat, proto, text, key, open_) in enumerate(rows):
        marks = [pytest.mark.xfail(strict=True, reason=f"open (pass {pass_no}): " + open_)] if open_ else []
        yield pytest.param(proto, text, key, marks=marks, id=f"{i}-{cat}-{proto}")


def honest_params(rows, pass_no: int):
    """``(protocol, response)`` parameters of ``(category, response, protocols, voided)`` rows, one per protocol."""
    for i, (cat, text, protos, voided) in enumerate(rows):
        for p in protos:
            marks = [pytest.mark.xfail(strict=True, reason=f"the carrier rule's price (pass {pass_no}): {cat}")] \
                if p in voided else []
            yield pytest.param(p, text, marks=marks, id=f"{i}-{cat}-{p}")
