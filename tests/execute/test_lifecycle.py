"""pipeline.execute.lifecycle: the stop signal's handler, which raises pipeline.errors'
Interrupted (the exceptions themselves are exercised wherever they are raised)."""

from __future__ import annotations

import subprocess
import sys

MODULE = """\
import os, signal, time
os.kill(os.getpid(), signal.SIGTERM)  # a stop in the middle of this module's import
class Named:
    def __set_name__(self, owner, name):
        pass
class Owner:  # a stop raised in __set_name__ would come out as a RuntimeError
    x = Named()
time.sleep(0.05)
DONE = True
"""

RUN = """\
import signal, sys, time
sys.path.insert(0, sys.argv[1])
from pipeline.errors import Interrupted
from pipeline.execute.lifecycle import stop_signal
signal.signal(signal.SIGTERM, stop_signal)
try:
    import stopped_midway
    time.sleep(5)
    print("not stopped")
except Interrupted as stop:
    print("stopped", stop.signum, stopped_midway.DONE)
"""


def test_a_stop_during_an_import_is_raised_once_the_import_is_over(tmp_path):
    (tmp_path / "stopped_midway.py").write_text(MODULE)
    out = subprocess.run([sys.executable, "-c", RUN, str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.split() == ["stopped", "15", "True"], out.stderr
    assert out.stderr == ""
