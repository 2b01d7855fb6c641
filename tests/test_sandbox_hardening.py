"""Seccomp hardening and limit validation of issue 22: socket families other than AF_UNIX
(AF_VSOCK reaches the host's vsock port space), ``modify_ldt``, ``memfd_secret`` and seccomp
user-notification listeners are refused inside runs; non-finite limits are refused up front."""

from __future__ import annotations

import errno
import math
import platform
import textwrap

import pytest

from judgerl.tools import SandboxLimits, bwrap_available, get_sandbox

EAFNOSUPPORT, EPERM = errno.EAFNOSUPPORT, errno.EPERM
X86_64 = platform.machine() == "x86_64"
# Raw syscalls through ctypes: prints "<label> <return value> <errno>".
SYSCALL = textwrap.dedent("""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    def sc(label, nr, *args):
        ctypes.set_errno(0)
        rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a) for a in args])
        print(label, rc, ctypes.get_errno(), flush=True)
""")
NR = {"x86_64": {"socket": 41, "socketpair": 53, "modify_ldt": 154, "seccomp": 317,
                 "memfd_secret": 447},
      "aarch64": {"socket": 198, "socketpair": 199, "seccomp": 277, "memfd_secret": 447}}


@pytest.fixture(scope="module")
def sb():
    if not bwrap_available():
        pytest.skip("bubblewrap is not usable here (the fallback refuses ctypes before seccomp)")
    with get_sandbox("bwrap", pool_size=1, timeout_s=10) as sandbox:
        yield sandbox


def _lines(stdout: str) -> dict[str, tuple[int, int]]:
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = (int(parts[1]), int(parts[2]))
    return out


FAMILIES = ["AF_VSOCK", "AF_INET", "AF_INET6", "AF_NETLINK", "AF_PACKET", "AF_ALG", "AF_BLUETOOTH",
            "AF_CAN", "AF_TIPC", "AF_RDS", "AF_XDP", "AF_KEY", "AF_LLC", "AF_QIPCRTR"]


def test_socket_families_other_than_af_unix_are_refused(sb) -> None:
    r = sb.run(textwrap.dedent(f"""
        import socket
        numbers = {{"AF_VSOCK": 40, "AF_XDP": 44, "AF_QIPCRTR": 42, "AF_KEY": 15, "AF_LLC": 26,
                   "AF_RDS": 21, "AF_TIPC": 30, "AF_CAN": 29, "AF_BLUETOOTH": 31, "AF_ALG": 38,
                   "AF_PACKET": 17, "AF_NETLINK": 16, "AF_INET6": 10, "AF_INET": 2}}
        for name in {FAMILIES!r}:
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW):
                try:
                    socket.socket(numbers[name], kind, 0)
                    print(name, kind, "OPENED")
                except OSError as e:
                    print(name, kind, e.errno)
            try:
                socket.socketpair(numbers[name], socket.SOCK_STREAM)
                print(name, "pair", "OPENED")
            except OSError as e:
                print(name, "pair", e.errno)
    """))
    assert r.ok, r
    rows = [line.split() for line in r.stdout.splitlines()]
    assert len(rows) == len(FAMILIES) * 4
    assert all(row[-1] == str(EAFNOSUPPORT) for row in rows), r.stdout


def test_af_unix_still_works_for_what_the_stdlib_needs(sb) -> None:
    r = sb.run(textwrap.dedent("""
        import asyncio, socket
        a, b = socket.socketpair()
        a.sendall(b"ping"); print(b.recv(4).decode())
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.close()
        async def main():
            await asyncio.sleep(0)
            return "asyncio ok"
        print(asyncio.run(main()))
    """))
    assert r.stdout == "ping\nasyncio ok\n", r


def test_socket_domain_with_junk_in_the_upper_bits_is_refused(sb) -> None:
    nr = NR.get(platform.machine())
    if nr is None:
        pytest.skip(f"no syscall numbers for {platform.machine()}")
    r = sb.run(SYSCALL + textwrap.dedent(f"""
        sc("vsock_hi", {nr['socket']}, (1 << 32) | 40, 1, 0)
        sc("unix_hi", {nr['socket']}, (1 << 32) | 1, 1, 0)
        sc("unix", {nr['socket']}, 1, 1, 0)
        pair = (ctypes.c_int * 2)()
        sc("pair_vsock", {nr['socketpair']}, 40, 1, 0, ctypes.addressof(pair))
    """))
    got = _lines(r.stdout)
    assert got["vsock_hi"] == (-1, EAFNOSUPPORT), r
    assert got["unix_hi"] == (-1, EAFNOSUPPORT), r  # fail closed: only exactly AF_UNIX passes
    assert got["unix"][0] >= 0, r
    assert got["pair_vsock"] == (-1, EAFNOSUPPORT), r


def test_modify_ldt_memfd_secret_and_seccomp_listeners_are_refused(sb) -> None:
    nr = NR.get(platform.machine())
    if nr is None:
        pytest.skip(f"no syscall numbers for {platform.machine()}")
    code = SYSCALL + textwrap.dedent(f"""
        buf = ctypes.create_string_buffer(64)
        sc("memfd_secret", {nr['memfd_secret']}, 0)
        # SECCOMP_SET_MODE_FILTER (1) with SECCOMP_FILTER_FLAG_NEW_LISTENER (8): a listener fd
        ret_allow = (ctypes.c_uint64 * 1)(0x7fff0000 << 32 | 0x06)
        class Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
        prog = Prog(1, ctypes.addressof(ret_allow))
        sc("seccomp_listener", {nr['seccomp']}, 1, 8, ctypes.addressof(prog))
        sc("seccomp_actions", {nr['seccomp']}, 2, 0, ctypes.addressof(buf))
    """)
    if "modify_ldt" in nr:
        code += f'sc("modify_ldt", {nr["modify_ldt"]}, 0, ctypes.addressof(buf), 16)\n'
    r = sb.run(code)
    got = _lines(r.stdout)
    assert got["memfd_secret"] == (-1, EPERM), r
    assert got["seccomp_listener"] == (-1, EPERM), r
    assert got["seccomp_actions"] == (-1, EPERM), r
    if X86_64:
        assert got["modify_ldt"] == (-1, EPERM), r


# --------------------------------------------------------------------------- limits
NON_FINITE = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("name", ["timeout_s", "cpu_time_s", "memory_bytes", "output_bytes",
                                  "max_processes", "max_open_files", "file_bytes", "disk_bytes"])
@pytest.mark.parametrize("value", NON_FINITE + [-1, 0, -0.5])
def test_non_finite_or_non_positive_limits_are_refused(name: str, value: float) -> None:
    with pytest.raises(ValueError, match=f"SandboxLimits.{name} must be a positive, finite number"):
        SandboxLimits(**{name: value})
    with pytest.raises(ValueError, match=f"SandboxLimits.{name}"):
        get_sandbox("fallback", **{name: value})


@pytest.mark.parametrize("value", NON_FINITE + [0, -1.0])
def test_run_refuses_non_finite_timeouts(value: float) -> None:
    with get_sandbox("fallback", pool_size=1) as sandbox:
        with pytest.raises(ValueError, match="timeout_s must be a positive, finite number"):
            sandbox.run("print(1)", timeout_s=value)
