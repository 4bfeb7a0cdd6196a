"""Hooks that let the tests drive a race to the exact moment it is about (never set in use).

    PIPELINE_TEST_HOOK=name[,name...]   which hooks are armed
    PIPELINE_TEST_HOOK_DIR=DIR          where a hook leaves its marker file when it fires

    half-send       a worker writes half of its result message to its pipe, then waits to
                    be killed (once per run: the marker file says it has fired)
    pause-shutdown  the parent sleeps a second while it stops after a signal, so that a
                    second signal lands in the middle of the stopping
"""

from __future__ import annotations

import os
import pickle
import struct
import time

HOOK = "PIPELINE_TEST_HOOK"
HOOK_DIR = "PIPELINE_TEST_HOOK_DIR"
_PASSED = (HOOK, HOOK_DIR, "PIPELINE_FAULT_INJECT")


def env() -> dict[str, str]:
    """The hooks' variables of this process, to hand to worker processes."""
    return {k: os.environ[k] for k in _PASSED if k in os.environ}


def armed(name: str) -> bool:
    return name in os.environ.get(HOOK, "").split(",")


def once(name: str) -> bool:
    """Whether an armed hook fires now: the first time in a run (its marker file says)."""
    if not armed(name):
        return False
    folder = os.environ.get(HOOK_DIR, ".")
    try:
        fd = os.open(os.path.join(folder, f"{name}.fired"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


def half_send(conn, message) -> None:
    """Write half of a pickled message to a multiprocessing pipe, then wait to be killed."""
    payload = pickle.dumps(message)
    os.write(conn.fileno(), struct.pack("!i", len(payload)) + payload[: len(payload) // 2])
    time.sleep(3600)
