"""pipeline.io.inputs: an input opened (standard input, plain or gzip), and the inputs that
cannot be used at all: missing, a folder, binary, mostly not UTF-8, a broken gzip,
unreadable. (Reading the rows of every shape: test_reader.py.)"""

from __future__ import annotations

import gzip
import io
import sys

import numpy as np
import pytest
from conftest import LEET, PUZZLE, SOLUTION

from pipeline.errors import InputError
from pipeline.io import inputs, schema


def open_(path) -> inputs.Input:
    return inputs.open_input(str(path), 0, None, None, schema.OURS)


# ---------------------------------------------------------------------------------------
# Standard input


def _stdin_rows(data: bytes) -> tuple[inputs.Input, list]:
    stdin = io.BytesIO(data)
    inp = inputs.open_input("-", 0, None, None, schema.OURS, stdin=stdin)
    return inp, [rows for _, rows in inputs.read_whole(inp, stdin)]


def test_stdin():
    inp, batches = _stdin_rows(f"# c\n{PUZZLE}\n\n{LEET}\n".encode())
    assert inp.stream == "stdin"
    assert [p.as_py() for b in batches for p in b.columns["puzzle"]] == [PUZZLE, LEET]


@pytest.mark.parametrize("gz", [False, True])
def test_stdin_csv_plain_or_gzip(gz):
    data = f"puzzle,solution\n{PUZZLE},{SOLUTION}\n".encode()
    inp, batches = _stdin_rows(gzip.compress(data) if gz else data)
    assert inp.shape.kind == "csv" and inp.shape.header
    assert [p.as_py() for b in batches for p in b.columns["expected_solution"]] == [SOLUTION]


# ---------------------------------------------------------------------------------------
# Unusable inputs


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        open_(tmp_path / "nope.csv")


def test_folder(tmp_path):
    with pytest.raises(InputError, match="folder"):
        open_(tmp_path)


def test_nul_bytes(make_input):
    with pytest.raises(InputError, match="NUL"):
        open_(make_input("bin.dat", PUZZLE.encode() + b"\n\x00\x01\x00\x00"))
    open_(make_input("stray.txt", PUZZLE.encode() + b"\n\x00\n"))  # a row's fault, not the file's


def test_mostly_not_utf8(make_input):
    rng = np.random.default_rng(1)
    data = bytes(rng.integers(0x80, 0x100, 4000, dtype=np.uint8))
    with pytest.raises(InputError, match="not a text file"):
        open_(make_input("noise.bin", data))


def test_broken_gzip(make_input, tmp_path):
    good = gzip.compress(("\n".join([PUZZLE] * 1000)).encode())
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(InputError):
        for _ in inputs.read_whole(open_(path)):
            pass


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_unreadable(make_input):
    import os

    if os.geteuid() == 0:
        pytest.skip("running as root: every file is readable")
    path = make_input("secret.txt", PUZZLE)
    path.chmod(0)
    with pytest.raises(InputError, match="cannot be read"):
        open_(path)
