"""The shared puzzle collections as arrays, and back as text, for the benchmarks
(tests/conftest.py has the tests' twin, which skips a test when its set is absent)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

_TOKEN = re.compile(r"(?<![0-9.])[0-9.]{81}(?![0-9.])")


def load(path: Path, n: int | None = None, field: int = 0) -> np.ndarray:
    """The field-th 81-character token of [0-9.] of each line holding one, at most n, as an
    (N, 81) uint8 array (0 for blanks)."""
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            tokens = _TOKEN.findall(line)
            if len(tokens) > field:
                rows.append(tokens[field].replace(".", "0"))
                if n is not None and len(rows) >= n:
                    break
    return np.frombuffer("".join(rows).encode(), np.uint8).reshape(-1, 81) - 48


def write_dots(grids: np.ndarray, path: Path) -> None:
    """One puzzle a line, '.' for blanks (tdoku's harness reads this, and so does
    `pipeline run`)."""
    text = (grids + 48).astype(np.uint8).tobytes().replace(b"0", b".")
    lines = [text[i : i + 81] for i in range(0, len(text), 81)]
    path.write_bytes(b"\n".join(lines) + b"\n")
