"""Arrow string columns and numpy grids, both ways, without a Python object per row.

    buffers(arr)                 a string array -> (offsets, bytes) numpy arrays
    grid_strings(grids, blank)   an (N, 81) batch -> an Arrow string array (nulls by a mask)

The engine and the checker read puzzles straight from the bytes Arrow holds (offsets into
one buffer, as a worker's reader made them), and write their grids back the same way.
"""

from __future__ import annotations

import numpy as np

from pipeline.sudoku import grid


def buffers(arr) -> tuple[np.ndarray, np.ndarray]:
    """A string array (or chunked array) as Arrow-style (offsets, bytes) numpy arrays;
    nulls are empty. The bytes are read-only whatever the buffer's origin: numba compiles
    (and loads) one specialization per flag, and a second one costs each worker 70 ms."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        arr = arr.fill_null("")
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset: arr.offset + len(arr) + 1]
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
            else np.zeros(0, np.uint8))
    data.flags.writeable = False
    return offsets, data


def grid_strings(grids: np.ndarray, blank: str = "0", valid: np.ndarray | None = None):
    """An (N, 81) batch as an Arrow string array of 81 characters a row (`blank` for 0);
    null where `valid` is False."""
    import pyarrow as pa

    n = len(grids)
    mask = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), n, [
        mask, pa.py_buffer(np.arange(0, 81 * (n + 1), 81, dtype=np.int32)),
        pa.py_buffer(grid.to_ascii(grids, blank).view(np.uint8))])
