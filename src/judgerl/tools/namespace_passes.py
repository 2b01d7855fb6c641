"""``passes(text, tests)``: how many test lines a response's code passes, with the tests **outside** its process.

The response's code runs in a **fresh interpreter** (``python -I -S``, a new process image: nothing of the
judge's memory, and so nothing of the tests, is in it), its stdin, stdout and stderr on ``/dev/null``.
The test lines run in **this** process, in fresh globals where each name the tests use that the response
defines is a *value* it sent back: plain data (numbers, strings, bytes, None and lists / tuples / sets /
frozensets / dicts of them) arrives as that data; anything else (its functions, classes, objects) arrives
as a :class:`_Remote` handle whose calls, attributes, items, ``len`` and iteration are requests to the
response's process, answered with values of the same two kinds. Every comparison, ``assert`` and
``math.isclose`` of a test is computed here on values the response's process only ever *returned*: a
trace hook, a rebound harness function, a patched builtin or module, a forged reply (names not asked
for, ``__builtins__`` among them, are dropped) or an early exit there changes what its own functions
return and never how a test is counted. A handle refuses ``==``, ``<``, ``bool``, ``hash`` and arithmetic
(``TypeError``). A ``StopIteration`` of the response is a ``RuntimeError`` here (it would end a ``map`` inside
``all(...)`` early), and a test line that catches the process leaving or running late (a bare ``except``)
fails. The response's process never sees a test's expected values; this process is non-dumpable for the
time of the call (``prctl(PR_SET_DUMPABLE, 0)`` where :mod:`ctypes` is available: no ``/proc/<pid>/mem``
read). On Linux the response's process installs a seccomp filter before it reads its code (bound to all it
starts): no signal to any process but its own group (``kill(0, ...)``; no ``tkill`` / ``tgkill`` /
``sigqueue`` / ``pidfd_send_signal``, no ``F_SETOWN`` / ``FIOSETOWN`` owner for ``SIGIO``), no leaving its
process group (``setsid``, ``setpgid``, ``CLONE_PARENT``: all it starts dies with it), no ``ptrace`` /
``process_vm_*``; with uid 0 it drops every capability first. Where that fails it exits and nothing passes.

A test name the response defines that is also a builtin (``abs = lambda x: 0``) is tried both ways: the
test passes only with the response's binding *and* with the builtin. A name bound to a module of the
standard library is this process's own module (rebinding ``math.isclose`` changes the response's only).

This module is **standard-library only and self-contained**: the sandbox executes its source after
:mod:`judgerl.tools.namespace_helpers` in the same globals (``code_of`` comes from there), and the host
imports it. The wire between the two processes: frames of an 8-hex-digit length and JSON (:data:`_CODEC`,
the one encoder / decoder both sides run); this side's end is non-blocking (a stalled reader cannot hang it).
"""

import sys as _sys

try:
    from judgerl.tools.namespace_helpers import code_of
except ImportError:  # inside the sandbox: namespace_helpers' source ran first in these globals
    code_of = globals()["code_of"]

#: Longest reply frame read from the response's process (bytes of JSON); a longer one fails the test.
MAX_REPLY_BYTES = 1 << 20
#: Most items one iteration of a response's object may yield.
MAX_ITEMS = 100_000

#: The value codec, run by both processes (this one executes it at import; the child's program starts with it).
#: ``_enc(value, ref)`` -> JSON-able tree; ``_dec(tree, handle)`` -> value. Plain data is encoded by exact type
#: (a subclass of int or list is not plain); anything else becomes ``["r", ref(value)]``.
_CODEC = r'''
def _enc(v, ref, depth=0):
    t = type(v)
    if v is None or t is bool:
        return v
    if t is int:
        return ["i", hex(v)]
    if t is float:
        return ["f", v.hex()]
    if t is complex:
        return ["c", v.real.hex(), v.imag.hex()]
    if t is str:
        return ["s", v]
    if t is bytes:
        return ["b", v.hex()]
    if depth < 200:
        if t is list or t is tuple or t is set or t is frozenset:
            tag = "l" if t is list else "t" if t is tuple else "S" if t is set else "F"
            return [tag, [_enc(x, ref, depth + 1) for x in v]]
        if t is dict:
            return ["d", [[_enc(k, ref, depth + 1), _enc(x, ref, depth + 1)] for k, x in v.items()]]
    return ["r", ref(v)]


def _dec(tree, handle):
    if tree is None or tree is True or tree is False:
        return tree
    tag, body = tree[0], tree[1]
    if tag in ("l", "t", "S", "F"):
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag]([_dec(x, handle) for x in body])
    if tag == "d":
        return {_dec(k, handle): _dec(x, handle) for k, x in body}
    if tag == "s" and type(body) is str:
        return body
    if tag == "r":
        return handle(int(body))
    if tag == "c":
        return complex(float.fromhex(body), float.fromhex(tree[2]))
    if tag not in ("i", "f", "b"):
        raise ValueError("unknown value tag")
    return int(body, 16) if tag == "i" else float.fromhex(body) if tag == "f" else bytes.fromhex(body)
'''
exec(_CODEC)  # noqa: S102 -- defines _enc / _dec here, from the one text the child runs too

#: The response's process: reads its code, runs it, then answers requests until its input closes.
_SERVE = r'''
import json, os, sys
_R, _W = int(sys.argv[1]), int(sys.argv[2])
_objs = []


def _confine():  # Linux: a seccomp filter on this process and all it starts, installed before the code is read
    import ctypes, struct  # (the module docstring says what it refuses)
    arch, nrs, kill, fcntl, ioctl, clone = {  # ptrace, process_vm_*v, setsid, setpgid, tkill, tgkill, rt_*sigqueueinfo
        "x86_64": (0xC000003E, (101, 310, 311, 112, 109, 200, 234, 129, 297, 424), 62, 72, 16, 56),
        "aarch64": (0xC00000B7, (117, 270, 271, 157, 154, 130, 131, 138, 240, 424), 129, 25, 29, 220)}[os.uname().machine]
    ins = [(0x20, 0, 0, 4), (0x15, 0, "D", arch), (0x20, 0, 0, 0), (0x35, "D", 0, 0x40000000)]
    ins += [(0x15, "D", 0, nr) for nr in nrs] + [(0x15, "N", 0, 435)]  # clone3: ENOSYS (glibc falls back to clone)
    # below: kill(0, sig) only (its own group), no F_SETOWN(_EX) (SIGIO / SIGURG to another process),
    ins += [(0x15, 0, 4, kill), (0x20, 0, 0, 20), (0x15, 0, "D", 0), (0x20, 0, 0, 16), (0x15, "A", "D", 0),
            (0x15, 0, 4, fcntl), (0x20, 0, 0, 24), (0x15, "D", 0, 8), (0x15, "D", 0, 15), (0x05, 0, 0, "A"),
            (0x15, 0, 4, ioctl), (0x20, 0, 0, 24), (0x15, "D", 0, 0x8901), (0x15, "D", 0, 0x8902), (0x05, 0, 0, "A"),
            (0x15, 0, 2, clone), (0x20, 0, 0, 16), (0x45, "D", 0, 0x8000),  # FIOSETOWN, SIOCSPGRP, CLONE_PARENT
            (0x06, 0, 0, 0x7FFF0000), (0x06, 0, 0, 0x50001), (0x06, 0, 0, 0x50026)]  # A: allow; D: EPERM; N: ENOSYS
    at = {"A": len(ins) - 3, "D": len(ins) - 2, "N": len(ins) - 1}
    prog = b"".join(struct.pack("=HBBI", c, *(at[x] - i - 1 if type(x) is str else x for x in (t, f)),
                                (at[k] - i - 1) if type(k) is str else k) for i, (c, t, f, k) in enumerate(ins))
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = ctypes.create_string_buffer(struct.pack("@HP", len(ins), ctypes.addressof(buf)))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or (os.geteuid() == 0 and libc.capset(  # uid 0: no capability either
            (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()) != 0) or libc.prctl(22, 2, fprog, 0, 0):
        os._exit(3)


try:
    if sys.platform == "linux":
        _confine()
except Exception:
    os._exit(3)


def _ref(v):
    _objs.append(v)
    return len(_objs) - 1


def _read(n):
    out = b""
    while len(out) < n:
        chunk = os.read(_R, n - len(out))
        if not chunk:
            os._exit(0)
        out += chunk
    return out


def _recv():
    return json.loads(_read(int(_read(8), 16)).decode("utf-8", "surrogatepass"))


def _send(obj):
    data = json.dumps(obj).encode("utf-8", "surrogatepass")
    data = b"%08x" % len(data) + data
    while data:
        data = data[os.write(_W, data):]


_obj = _objs.__getitem__


def _answer(req):
    op = req[0]
    if op == "names":
        return {n: _enc(_ns[n], _ref) for n in req[1] if n in _ns and n != "__builtins__"}
    target = _objs[req[1]]
    if op == "attr":
        return _enc(getattr(target, req[2]), _ref)
    if op == "call":
        args = [_dec(a, _obj) for a in req[2]]
        kwargs = {k: _dec(a, _obj) for k, a in req[3]}
        return _enc(target(*args, **kwargs), _ref)
    if op == "item":
        return _enc(target[_dec(req[2], _obj)], _ref)
    if op == "len":
        return _enc(len(target), _ref)
    if op == "iter":
        items = []
        for x in target:
            items.append(x)
            if len(items) > int(req[2]):
                raise OverflowError("more items than a test may iterate")
        return _enc(items, _ref)
    raise ValueError("unknown request")


_ns = {"__name__": "response"}
try:
    exec(compile(_recv(), "<response>", "exec"), _ns)
    _send(["ok", None])
except BaseException as e:
    _send(["err", type(e).__name__, str(e)[:500]])
while True:
    _req = _recv()
    try:
        _send(["ok", _answer(_req)])
    except BaseException as e:
        _send(["err", type(e).__name__, str(e)[:500]])
'''


class ResponseError(Exception):
    """An exception the response's code raised that is not a builtin ``Exception`` class (or a
    ``BaseException`` such as ``SystemExit``): it fails the test that called it, never this process."""


class _Gone(BaseException):
    """The response's process left, sent a frame that is not one, or ran past the time limit (a
    ``BaseException``, so that a test line's ``except Exception`` cannot hide it)."""


class _Child:
    """The response's process and its two pipes (see the module docstring). Every method raises
    :class:`_Gone` once the process is gone or late; the deadline is ``time.monotonic()`` seconds."""

    def __init__(self, program, deadline):
        import os
        import subprocess
        import time

        self._time, self.deadline = time.monotonic, deadline
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()
        try:
            if not _sys.executable:
                raise RuntimeError("passes() needs a Python interpreter to run the response in: sys.executable is empty")
            self.proc = subprocess.Popen(
                [_sys.executable, "-I", "-S", "-c", _CODEC + _SERVE, str(to_child), str(from_child)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(to_child, from_child), env={}, process_group=0)
        finally:
            os.close(to_child)
            os.close(from_child)
        self.dead = False
        os.set_blocking(self._w, False)  # a child that reads part of a request and stops cannot block a write
        self.ready = self.request(program)

    def request(self, payload):
        import json
        import os
        import select

        if self.dead:
            raise _Gone("the response's process is gone")
        try:
            data = json.dumps(payload).encode("utf-8", "surrogatepass")
            data = b"%08x" % len(data) + data
            while data:
                if not self._wait(self._w, select.POLLOUT):
                    raise _Gone("past the time limit")
                try:
                    data = data[os.write(self._w, data[:65536]):]
                except BlockingIOError:
                    pass
            size = int(self._read(8), 16)
            if size > MAX_REPLY_BYTES:
                raise _Gone("a reply over the size limit")
            reply = json.loads(self._read(size).decode("utf-8", "surrogatepass"))
            if type(reply) is not list or not reply or reply[0] not in ("ok", "err"):
                raise _Gone("a reply that is not one")
            return reply
        except (OSError, ValueError, TypeError, RecursionError, MemoryError) as e:
            self.close()
            raise _Gone(str(e)) from None
        except _Gone:
            self.close()
            raise

    def _wait(self, fd, event):
        """Whether ``fd`` is ready for ``event`` (or hung up) before the deadline (poll: any fd number)."""
        import select

        left, poller = self.deadline - self._time(), select.poll()
        poller.register(fd, event)
        return left > 0 and bool(poller.poll(left * 1000.0))

    def _read(self, n):
        import os
        import select

        out = b""
        while len(out) < n:
            if not self._wait(self._r, select.POLLIN):
                raise _Gone("past the time limit")
            chunk = os.read(self._r, n - len(out))
            if not chunk:
                raise _Gone("the response's process left")
            out += chunk
        return out

    def close(self):
        import contextlib
        import os

        if self.dead:
            return
        self.dead = True
        for undo in (lambda: os.close(self._w), lambda: os.close(self._r), lambda: os.killpg(self.proc.pid, 9)):
            with contextlib.suppress(OSError):  # SIGKILL to its group: all it started (it cannot leave the group)
                undo()
        self.proc.kill()
        self.proc.wait()


class _Remote:
    """A handle on one object of the response's process: calls, attributes, items, ``len`` and iteration
    are requests; comparisons, truth, hashing and arithmetic raise ``TypeError`` (no test passes on them)."""

    __slots__ = ("_child", "_id")

    def __init__(self, child, ident):
        object.__setattr__(self, "_child", child)
        object.__setattr__(self, "_id", ident)

    def _ask(self, *req):
        return _value(self._child, self._child.request([req[0], self._id, *req[1:]]))

    def __call__(self, *args, **kwargs):
        return self._ask("call", [_enc(a, _sent) for a in args], [[k, _enc(a, _sent)] for k, a in kwargs.items()])

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._ask("attr", name)

    def __getitem__(self, key):
        return self._ask("item", _enc(key, _sent))

    def __len__(self):
        n = self._ask("len")
        if type(n) is not int or n < 0:
            raise TypeError("len() of a response's object is not a non-negative int")
        return n

    def __iter__(self):
        return iter(self._ask("iter", MAX_ITEMS))

    def _refuse(self, *args):
        raise TypeError("a value of the response's own type is not plain data: no test passes on it")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __hash__ = __contains__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = __abs__ = _refuse
    __index__ = __int__ = __float__ = __complex__ = __round__ = _refuse

    def __setattr__(self, name, value):
        raise TypeError("a response's object is read-only here")

    def __repr__(self):
        return "<an object of the response>"


def _sent(value):
    """The reference of a value this process sends to the response's process: only its own handles."""
    if type(value) is _Remote:
        return value._id
    raise TypeError("only plain data and the response's own objects can be passed to its code")


def _value(child, reply):
    """The value of one ``["ok", tree]`` reply, or the exception of an ``["err", name, message]`` one raised."""
    import builtins

    if reply[0] == "err":
        kind = getattr(builtins, str(reply[1]), None)
        if isinstance(kind, type) and issubclass(kind, (StopIteration, StopAsyncIteration)):
            raise RuntimeError(f"the response raised {kind.__name__}")  # would end map() / all() early: a pass
        if isinstance(kind, type) and issubclass(kind, Exception):
            raise kind(str(reply[2])[:500])
        raise ResponseError(f"{str(reply[1])[:80]}: {str(reply[2])[:500]}")
    return _dec(reply[1], lambda i: _Remote(child, i))


def _test_names(code):
    """The names a compiled test reads (``co_names`` of it and its nested code objects)."""
    out, todo = set(), [code]
    while todo:
        c = todo.pop()
        out.update(c.co_names, c.co_varnames, c.co_freevars)
        todo.extend(k for k in c.co_consts if type(k) is type(code))
    return out


def _namespaces(child, names):
    """The globals the tests run in: ``[ns]``, or ``[with the response's bindings, with the builtins]`` when the
    response defines a test name that is also a builtin. A name bound to a standard-library module there is
    this process's own module."""
    import builtins
    import importlib

    ns = {"__name__": "test", "__builtins__": builtins}
    reply = child.request(["names", sorted(names)])
    if reply[0] != "ok" or type(reply[1]) is not dict:
        raise _Gone("no names")
    shadowed = {}
    for name, tree in reply[1].items():
        if name not in names or name.startswith("__"):  # only what was asked; never __builtins__ or __name__
            continue
        value = _dec(tree, lambda i: _Remote(child, i))
        if type(value) is _Remote and name in getattr(_sys, "stdlib_module_names", ()) \
                and name not in ("this", "antigravity"):
            try:
                value = importlib.import_module(name)
            except Exception:  # noqa: BLE001 -- not importable here: the response's own object
                pass
        if hasattr(builtins, name):
            shadowed[name] = value
        else:
            ns[name] = value
    return [{**ns, **shadowed}, ns] if shadowed else [ns]


def _not_dumpable():
    """Make this process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): its memory cannot be read through
    ``/proc`` by a same-uid process. Returns the previous value to restore, or None where ctypes is missing."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        before = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
        return libc, before
    except Exception:  # noqa: BLE001 -- no ctypes (a fallback sandbox): the fresh process image still holds
        return None


def passes(text, tests, timeout_s=3.0):
    """How many of ``tests`` pass against the Python code of ``text`` (:func:`code_of`).

    The code runs in a fresh interpreter apart from this process; each test line runs here, in globals
    where the names it uses that the response defines are the values (or handles on the objects) the
    response's process returns (see the module docstring for what that guarantees). A test passes when it
    runs to its end without an exception: a failed ``assert``, an exception of the response's code, a
    comparison with a response's object or the response's process leaving or running late fails it.

    Args:
        text: A response (its code is :func:`code_of` ``(text)``); a non-str passes nothing.
        tests: Test lines (``assert f(1) == 2``; a line may be any statements), compiled here before the
            response's code runs, executed in order in one shared globals dict.
        timeout_s: Seconds the response's process may take in all (start, its code, every call of the
            tests); past it, it is killed and the tests not yet finished fail.

    Returns:
        The number of tests that passed (``0 .. len(tests)``); 0 when the code does not compile or raises.

    Raises:
        SyntaxError: a test line is not Python. TypeError: ``tests`` is not a list of str.
        ValueError: ``timeout_s`` is not a finite positive number of seconds.
    """
    import math
    import time

    if not isinstance(tests, (list, tuple)) or not all(isinstance(t, str) for t in tests):
        raise TypeError("passes(text, tests): tests must be a list of str (test lines)")
    if not isinstance(timeout_s, (int, float)) or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"passes(text, tests, timeout_s): timeout_s must be finite seconds > 0, got {timeout_s!r}")
    checks = [compile(t, "<test>", "exec") for t in tests]
    try:
        code = code_of(text) if isinstance(text, str) else None
        if code is not None:
            compile(code, "<response>", "exec")
    except (SyntaxError, ValueError):
        code = None
    if code is None or not checks:
        return 0
    names = set().union(*(_test_names(c) for c in checks))
    dumpable = _not_dumpable()
    child = None
    try:
        child = _Child(code, time.monotonic() + float(timeout_s))
        if child.ready[0] != "ok":
            return 0
        try:
            spaces = _namespaces(child, names)
        except Exception:  # noqa: BLE001 -- names the response sent that are not values: nothing passes
            return 0
        passed = 0
        for check in checks:
            ok = True
            for ns in spaces:
                try:
                    exec(check, ns)  # noqa: S102 -- the judge's own test line, in this process
                except _Gone:
                    return passed
                except Exception:  # noqa: BLE001 -- any failure of a test line fails that test
                    ok = False
                if child.dead:  # a test line that caught _Gone (a bare except): the process left or ran late
                    return passed
            passed += ok
        return passed
    except _Gone:
        return 0
    finally:
        if child is not None:
            child.close()
        if dumpable is not None:
            dumpable[0].prctl(4, dumpable[1], 0, 0, 0)


__all__ = ["MAX_ITEMS", "MAX_REPLY_BYTES", "ResponseError", "passes"]
