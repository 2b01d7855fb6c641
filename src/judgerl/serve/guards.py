"""Checks the reward server makes on request bodies before parsing them.

:func:`check_body`: a request body must be valid UTF-8 and nested at most ``max_depth`` levels (a
50,000-deep JSON array would otherwise exhaust the parser's recursion); violations are answered
with the server's documented error shape ``{"error": "..."}`` and status 400.
"""

from __future__ import annotations


def check_body(body: bytes, max_depth: int) -> str | None:
    """The problem with a request body, or None when it is valid UTF-8 nested <= ``max_depth``.

    Depth counts ``[`` / ``{`` outside JSON strings (escapes honoured); it is a linear scan, so a
    hostile body costs O(len) and never recursion.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"request body is not valid UTF-8 (byte {e.start}: {e.reason})"
    depth, in_str, esc = 0, False, False
    for i, c in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            if depth > max_depth:
                return f"JSON nested deeper than {max_depth} levels (at character {i})"
        elif c in "]}":
            depth -= 1
    return None
