"""Temporary files: where they go, and how those of a process killed mid-way are reclaimed.

A process killed with SIGKILL cannot clean up after itself; the next one that looks does.
Every temporary name carries the id of the process that made it, and a name whose process
is gone is removed:

    <system temp>/sudoku-pipeline-<uid>/<pid>/     every command's own temporary folder
                                                   (multiprocessing's pymp-* among them)
    <output's folder>/.pipeline-spill-<pid>-*/     the data-set tools' spill files
    <output's folder>/.<name>.<pid>-<hex>.tmp      an output on its way (storage.py)
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

_TEMP_FILE = re.compile(r"^\..+\.(\d+)-[0-9a-f]{8}\.tmp$")
_SPILL = re.compile(r"^\.pipeline-spill-(\d+)-")
SPILL_PREFIX = ".pipeline-spill-"


def alive(pid: int) -> bool:
    """Whether a process of that id exists (ours or not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def private_tempdir() -> str:
    """Make this process's temporary files go to a folder of its own,
    `<system temp>/sudoku-pipeline-<uid>/<pid>/` (multiprocessing's `pymp-*` folders with
    the forkserver's socket, a log on its way to a store), and remove those of processes
    that are gone. Returns the folder (the system's own if that one cannot be made)."""
    base = os.path.join(tempfile.gettempdir(), f"sudoku-pipeline-{os.getuid()}")
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        for name in os.listdir(base):
            if name.isdigit() and int(name) != os.getpid() and not alive(int(name)):
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        mine = os.path.join(base, str(os.getpid()))
        os.makedirs(mine, mode=0o700, exist_ok=True)
    except OSError:
        return tempfile.gettempdir()
    tempfile.tempdir = mine
    return mine


def reclaim(folder: str) -> None:
    """Remove the temporary files and spill folders that processes now gone left in a
    (local) folder."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        m = _TEMP_FILE.match(name) or _SPILL.match(name)
        if m and int(m.group(1)) != os.getpid() and not alive(int(m.group(1))):
            path = os.path.join(folder, name)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass
