"""Process-wide runtime settings judgerl applies before torch is imported.

**OpenMP wait policy.** GNU OpenMP's default (``OMP_WAIT_POLICY`` unset = active) makes idle
worker threads spin; when the CPU cores are shared (CI machines, a reward server next to a
trainer, two jobs on a laptop) the spinning threads steal the cores the busy ones need, and
decode-shaped matrix products run 6-10x slower (measured on 2 shared cores: 16x576x1536 GEMM
32.6 ms active vs 3.3-5.1 ms passive). judgerl therefore sets ``OMP_WAIT_POLICY=PASSIVE`` when it
is imported before torch and the user has not chosen a policy; ``JUDGERL_OMP_POLICY=keep`` (or
setting ``OMP_WAIT_POLICY`` yourself) leaves it alone. :func:`omp_policy` says what is in force.
"""

from __future__ import annotations

import os
import sys

#: How the OpenMP wait policy was decided: "set by judgerl", "user", "torch already imported".
OMP_POLICY_SOURCE = "unset"


def apply_omp_policy() -> str:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the user chose a policy or torch is already loaded.

    Returns:
        How the policy was decided (also stored in :data:`OMP_POLICY_SOURCE`).
    """
    global OMP_POLICY_SOURCE
    if "OMP_WAIT_POLICY" in os.environ:
        OMP_POLICY_SOURCE = "user"
    elif os.environ.get("JUDGERL_OMP_POLICY", "").lower() == "keep":
        OMP_POLICY_SOURCE = "kept default (JUDGERL_OMP_POLICY=keep)"
    elif "torch" in sys.modules:
        OMP_POLICY_SOURCE = "torch already imported (policy unchanged)"
    else:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        OMP_POLICY_SOURCE = "set by judgerl"
    return OMP_POLICY_SOURCE


def omp_policy() -> str:
    """A one-line description of the OpenMP wait policy in force, e.g. ``"PASSIVE (set by judgerl)"``."""
    return f"{os.environ.get('OMP_WAIT_POLICY', 'default (active)')} ({OMP_POLICY_SOURCE})"


def describe_runtime() -> str:
    """One line for ``--verbose`` output: the OpenMP wait policy in force, torch's thread count and
    the CPU count, e.g. ``"OpenMP wait policy PASSIVE (set by judgerl); torch threads 2 of 2 CPUs"``.

    Imports torch (call it only where torch will be used anyway).
    """
    import torch

    return f"OpenMP wait policy {omp_policy()}; torch threads {torch.get_num_threads()} of {os.cpu_count()} CPUs"
