"""Serving judges: an HTTP reward server (verl / OpenRLHF / TRL), its client, micro-batching.

Heavy web dependencies (fastapi, uvicorn) are imported only with the submodules that need them
(``pip install 'judgerl[serve]'``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "JudgeClient",
    "JudgeClientError",
    "JudgeService",
    "MicroBatcher",
    "ServeConfig",
    "ServerThread",
    "create_app",
    "remote_reward",
]

_WHERE = {
    "JudgeClient": "judgerl.serve.client",
    "JudgeClientError": "judgerl.serve.client",
    "remote_reward": "judgerl.serve.client",
    "JudgeService": "judgerl.serve.service",
    "ServeConfig": "judgerl.serve.service",
    "create_app": "judgerl.serve.app",
    "MicroBatcher": "judgerl.serve.batcher",
    "ServerThread": "judgerl.serve.server_thread",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'judgerl.serve' has no attribute {name!r}")
