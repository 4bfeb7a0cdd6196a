"""pipeline.io.shape: what looks like a puzzle. (How every shape is decided, each file read
both in one pass and range by range: test_reader.py.)"""

from __future__ import annotations

from conftest import PUZZLE

from pipeline.io.shape import looks_like_puzzle

P0 = PUZZLE.replace(".", "0")


def test_looks_like_puzzle():
    assert looks_like_puzzle(PUZZLE) and looks_like_puzzle(f" {P0} ")
    assert not looks_like_puzzle(PUZZLE[:80]) and not looks_like_puzzle(None)
