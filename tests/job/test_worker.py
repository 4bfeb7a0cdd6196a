"""pipeline.job.worker's process set-up: what warm_up does to the process besides loading the
kernels (each in a fresh interpreter, since it changes process-wide state)."""

from __future__ import annotations

import os
import subprocess
import sys

FAULTS = """
import resource, sys
from pipeline.job import worker
if sys.argv[1] == "kept":
    worker._keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def work():  # in a thread, as a Dask worker runs its tasks: an arena of its own
    # A task's working set: several blocks of megabytes alive at once, then freed.
    blocks = [bytearray(8 << 20) for _ in range(3)]  # the first time is new memory
    del blocks
    before = faults()
    for _ in range(10):
        blocks = [bytearray(8 << 20) for _ in range(3)]  # zero-filled: pages touched
        del blocks
    print(faults() - before)
import threading
t = threading.Thread(target=work)
t.start()
t.join()
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True,
                         check=True)
    return int(out.stdout)


def test_freed_blocks_are_reused_not_mapped_again():
    """Ten rounds of three blocks of 8 MiB in a thread: by default they are mapped afresh
    (a fault every 4 KiB); kept, the memory of the first round is reused."""
    fresh, kept = _faults("default"), _faults("kept")
    assert fresh > 10 * 3 * 8 * 256 // 2  # about one fault a page
    assert kept < fresh // 10


def test_cffi_is_hidden_only_while_numba_loads_the_kernels():
    code = ("import sys\n"
            "from pipeline.job import worker\n"
            "worker.warm_up()\n"
            "print('pycparser' in sys.modules)\n"
            "import cffi\n"
            "print(cffi.FFI is not None)\n")
    env = {**os.environ, "PIPELINE_KERNELS": "jit"}  # where numba compiles them
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.split() == ["False", "True"]
