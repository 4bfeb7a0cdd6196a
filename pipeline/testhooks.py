"""Hooks that let the tests drive a race to the exact moment it is about (never set in use).

    PIPELINE_TEST_HOOK=name[,name...]   which hooks are armed
    PIPELINE_TEST_HOOK_DIR=DIR          where a hook leaves its marker file when it fires

    half-send       a worker writes half of its result message to its pipe, then waits to
                    be killed (once per run: the marker file says it has fired)
    pause-shutdown  the parent, stopping after a signal, leaves `pause-shutdown.reached`
                    and sleeps two seconds, so that a second signal lands mid-stop
    after-plan      the parent, its inputs planned, leaves `after-plan.reached` and waits
                    for `after-plan.go` (so a test can edit an input under a run)
    before-stats    the same, once every part is written and before the stats
    commit          the same (waiting 5 s at most), just before `_SUCCESS` is written
    split-publish   `split`, its new files written, the earlier split's removed, waits the
                    same way (5 s at most) before it moves the new ones in
    warehouse-hashed  `run --incremental`, a file hashed, waits the same way (10 s at most)
                    before its run
    read-silence    a worker, before it reads a range, waits as long as `read-silence.on`
                    is there (a store that stopped answering), and leaves
                    `read-silence.reached` when it does
    stale-write     a worker, its first part made, leaves `stale-write.reached` and waits for
                    `stale-write.go` before writing it (a worker stopped at that moment),
                    then leaves `stale-write.done` whatever the write did
"""

from __future__ import annotations

import os
import pickle
import struct
import time

HOOK = "PIPELINE_TEST_HOOK"
HOOK_DIR = "PIPELINE_TEST_HOOK_DIR"


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


def pause(point: str, seconds: float = 60.0) -> None:
    """At an armed point: leave POINT.reached, then wait for POINT.go (or `seconds`)."""
    if not armed(point):
        return
    folder = os.environ.get(HOOK_DIR, ".")
    open(os.path.join(folder, f"{point}.reached"), "w").close()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not os.path.exists(os.path.join(folder, f"{point}.go")):
        time.sleep(0.02)


def hold(point: str) -> None:
    """At an armed point: wait as long as the file POINT.on is in the hooks' folder (and
    say so with POINT.reached)."""
    if armed(point):
        on = os.path.join(os.environ.get(HOOK_DIR, "."), f"{point}.on")
        if os.path.exists(on):
            mark(f"{point}.reached")
        while os.path.exists(on):
            time.sleep(0.02)


def mark(name: str) -> None:
    """Leave the marker file NAME in the hooks' folder."""
    open(os.path.join(os.environ.get(HOOK_DIR, "."), name), "w").close()


def linger(point: str, seconds: float = 2.0) -> None:
    """At an armed point: leave POINT.reached, then sleep `seconds`."""
    if armed(point):
        folder = os.environ.get(HOOK_DIR, ".")
        open(os.path.join(folder, f"{point}.reached"), "w").close()
        time.sleep(seconds)
