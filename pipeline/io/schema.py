"""The results' columns: their names, types and order, and how a part is built and encoded.

    source          the input as given (secrets removed from a URL)
    row             the record's number in its input, from 0
    puzzle          the puzzle as read
    status          solved, multiple, unsolvable, invalid, malformed or error
    solution        81 digits, null unless solved or multiple
    n_solutions     0, 1 or 2 (two or more); null when not proven
    guesses         the engine's branch points
    reason          why a row is not solved, in one line
    expected_match  whether the input's expected solution agrees with ours
    solve_us        the puzzle's own solve time (null with --no-timings)
    grade           easy .. extreme, solved rows only
    canonical       (with --canonical) the minlex form, `.` blanks; null for malformed rows
    automorphisms   (with --canonical) how many cell permutations map it onto itself
    ser             (with --rate) Sudoku Explainer's rating (ER), solved rows only
    ser_pearl       (with --rate) its pearl (EP): the hardest step before the first placement
    ser_diamond     (with --rate) its diamond (ED): before the first elimination
    ser_technique   (with --rate) the technique that set ser
    ser_steps       (with --rate) the rating path's length
    rate_note       (with --rate) why a solved row has no ser (its budget, a technique beyond)
    ...             the input's other columns, carried unchanged
    expected_solution  the input's expected solution where it differs from `solution`

Every part of a run has the same schema. `expected_solution` is written only where it is
not the same text as `solution` (most rows of a data set agree, and one grid column less
is the cheapest part of writing); `full_expected()` restores the old view.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from pipeline.sudoku.grade import GRADES
from pipeline.sudoku.status import NULL, STATUS_NAMES

if TYPE_CHECKING:
    import pyarrow as pa

    from pipeline.sudoku.solver import Outcome

OURS = ("source", "row", "puzzle", "status", "solution", "n_solutions", "guesses", "reason",
        "expected_match", "solve_us", "grade", "canonical", "automorphisms",
        "ser", "ser_pearl", "ser_diamond", "ser_technique", "ser_steps", "rate_note",
        "expected_solution")
RATED = ("ser", "ser_pearl", "ser_diamond", "ser_technique", "ser_steps", "rate_note")
EXPECTED = "expected_solution"

# Dictionary pages pay off only for the columns with few distinct values; min/max statistics
# of 81-character grids help no reader, so they are not written.
_DICTIONARY = {"source", "status", "grade", "reason", "ser_technique", "rate_note", "technique"}
_STATISTICS = {"row", "n_solutions", "guesses", "solve_us", "expected_match", "ser"}
# The 81-character columns: nine tenths of a part's bytes. zstd makes them 2.4x smaller at
# about 0.9 µs a row (a third of a worker's time here); --compression chooses.
_GRIDS = {"puzzle", "solution", "canonical", EXPECTED}


# pyarrow is imported where it is used: the parent reads the names above without it.


@cache
def results_schema(carried: tuple[str, ...], expected: bool, canonical: bool = False,
                   rated: bool = False) -> pa.Schema:
    """The schema every part of a run shares."""
    import pyarrow as pa

    fields = [
        pa.field("source", pa.string()), pa.field("row", pa.int64()),
        pa.field("puzzle", pa.string()), pa.field("status", pa.string()),
        pa.field("solution", pa.string()), pa.field("n_solutions", pa.int8()),
        pa.field("guesses", pa.int64()), pa.field("reason", pa.string()),
        pa.field("expected_match", pa.bool_()), pa.field("solve_us", pa.float64()),
        pa.field("grade", pa.string()),
    ]
    if canonical:
        fields += [pa.field("canonical", pa.string()), pa.field("automorphisms", pa.int64())]
    if rated:
        fields += [pa.field("ser", pa.float64()), pa.field("ser_pearl", pa.float64()),
                   pa.field("ser_diamond", pa.float64()), pa.field("ser_technique", pa.string()),
                   pa.field("ser_steps", pa.int32()), pa.field("rate_note", pa.string())]
    fields += [pa.field(name, pa.string()) for name in carried]
    if expected:
        fields.append(pa.field(EXPECTED, pa.string()))
    return pa.schema(fields)


def results_table(schema: pa.Schema, spans: list[tuple[str, int, int]],
                  columns: dict[str, pa.Array], outcome: Outcome, grades: np.ndarray,
                  solve_us: np.ndarray | None,
                  forms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                  rated: dict[str, pa.Array] | None = None) -> pa.Table:
    """One part: its ranges' input columns and the outcome's, in the run's schema.

    `spans` are its ranges' (source, first row, rows), in order (a shared part has several).

    `grades` holds grade codes (indices into GRADES, NULL for none); `solve_us` the
    per-puzzle times (NaN where none), or None without timings; `forms` the canonical
    forms, automorphism counts and a mask of the rows that have them; `rated` the rating's
    columns (rated_columns).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.io.strings import grid_strings

    n = len(outcome)
    has = outcome.has_solution()
    solution = grid_strings(outcome.solutions, "0", has)
    cols: dict[str, pa.Array] = {
        "source": pa.DictionaryArray.from_arrays(
            pa.array(np.repeat(np.arange(len(spans), dtype=np.int32),
                               [k for _, _, k in spans]) if spans else np.zeros(n, np.int32)),
            pa.array([s for s, _, _ in spans] or [""], pa.string())).cast(pa.string()),
        "row": pa.array(np.concatenate(
            [np.arange(first, first + k, dtype=np.int64) for _, first, k in spans])
            if spans else np.zeros(0, np.int64)),
        "puzzle": columns["puzzle"],
        "status": _labels(outcome.status.astype(np.int8), STATUS_NAMES),
        "solution": solution,
        "n_solutions": _masked(outcome.n_solutions, pa.int8()),
        "guesses": _masked(outcome.guesses, pa.int64()),
        "reason": _reasons(outcome.reasons, n),
        "expected_match": pa.array(outcome.expected_match == 1,
                                   mask=outcome.expected_match == NULL, type=pa.bool_()),
        "solve_us": (pa.array(solve_us, mask=np.isnan(solve_us), type=pa.float64())
                     if solve_us is not None else pa.nulls(n, pa.float64())),
        "grade": _labels(grades, GRADES),
    }
    if forms is not None:
        grids, autos, has_form = forms
        cols["canonical"] = grid_strings(grids, ".", has_form)
        cols["automorphisms"] = pa.array(autos, mask=~has_form, type=pa.int64())
    if rated is not None:
        cols.update(rated)
    if EXPECTED in schema.names and EXPECTED in columns:
        wanted = columns[EXPECTED]
        same = outcome.expected_same
        if same is not None and same.any():
            wanted = pc.if_else(pa.array(same), pa.scalar(None, wanted.type), wanted)
        cols[EXPECTED] = wanted
    for f in schema:
        if f.name not in cols:
            got = columns.get(f.name)
            cols[f.name] = got if got is not None else pa.nulls(n, f.type)
    return pa.Table.from_arrays([_as(cols[f.name], f.type) for f in schema], schema=schema)


@cache
def trace_schema() -> pa.Schema:
    """A trace part's columns (run --rate --trace): one row a solving step, in order."""
    import pyarrow as pa

    return pa.schema([pa.field("source", pa.string()), pa.field("row", pa.int64()),
                      pa.field("step", pa.int32()), pa.field("technique", pa.string()),
                      pa.field("rating", pa.float64()), pa.field("placements", pa.string()),
                      pa.field("eliminations", pa.string())])


def trace_table(spans: list[tuple[str, int, int]], steps: dict[int, list]) -> pa.Table:
    """A trace part: the steps of each traced row ({row in part: [Step]}), `spans` as for
    results_table."""
    import pyarrow as pa

    from pipeline.sudoku.grid import eliminations_text, placements_text

    starts = np.cumsum([0] + [n for _, _, n in spans])  # each span's first row in the part
    cols: dict[str, list] = {f.name: [] for f in trace_schema()}
    for i in sorted(steps):
        span = int(np.searchsorted(starts, i, side="right")) - 1
        source, row = spans[span][0], spans[span][1] + i - int(starts[span])
        for k, s in enumerate(steps[i]):
            cols["source"].append(source)
            cols["row"].append(row)
            cols["step"].append(k + 1)
            cols["technique"].append(s.technique)
            cols["rating"].append(s.rating)
            cols["placements"].append(placements_text(s.placements))
            cols["eliminations"].append(eliminations_text(s.eliminations))
    return pa.Table.from_pydict(cols, schema=trace_schema())


def rated_columns(er: np.ndarray, ep: np.ndarray, ed: np.ndarray, technique: list,
                  steps: np.ndarray, notes: dict[int, str]) -> dict[str, pa.Array]:
    """The rating's columns: ratings in tenths (0 = none: null), the technique's name per
    row (None: null), the path's length (0 with no rating: null), notes by row."""
    import pyarrow as pa

    none = er == 0
    return {
        "ser": pa.array(er / 10.0, mask=none, type=pa.float64()),
        "ser_pearl": pa.array(ep / 10.0, mask=none, type=pa.float64()),
        "ser_diamond": pa.array(ed / 10.0, mask=none, type=pa.float64()),
        "ser_technique": pa.array(technique, pa.string()),
        "ser_steps": pa.array(steps, mask=none, type=pa.int32()),
        "rate_note": _reasons(notes, len(er)),
    }


def _as(arr: pa.Array, type_: pa.DataType) -> pa.Array:
    return arr if arr.type == type_ else arr.cast(type_)


def _reasons(reasons: dict[int, str], n: int) -> pa.Array:
    """The few reasons, then a take() that spreads them over the rows (nulls elsewhere)."""
    import pyarrow as pa

    if not reasons:
        return pa.nulls(n, pa.string())
    rows = np.fromiter(reasons, dtype=np.int64, count=len(reasons))
    where = np.full(n, -1, dtype=np.int64)
    where[rows] = np.arange(len(rows))
    return pa.array(list(reasons.values()), pa.string()).take(pa.array(where, mask=where < 0))


def _labels(codes: np.ndarray, names) -> pa.Array:
    """Small int codes (NULL = null) as strings, through a dictionary: no per-row objects."""
    import pyarrow as pa

    codes = np.asarray(codes, dtype=np.int8)
    indices = pa.array(codes, mask=codes == NULL, type=pa.int8())
    return pa.DictionaryArray.from_arrays(indices, pa.array(names, pa.string())).cast(pa.string())


def _masked(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, mask=values == NULL, type=type_)


def write_options(names: list[str], grids: str = "zstd") -> dict:
    """pyarrow.parquet.write_table's options for a part with these columns; `grids` is the
    codec of the grid columns (zstd or none), every other column's is zstd."""
    codec = {c: grids if c in _GRIDS else "zstd" for c in names}
    return {
        "compression": codec,
        "compression_level": {c: 1 for c, k in codec.items() if k == "zstd"},
        "use_dictionary": [c for c in names if c in _DICTIONARY],
        "write_statistics": [c for c in names if c in _STATISTICS],
    }


def full_expected(frame):
    """The results with `expected_solution` filled back where it equals `solution` (polars)."""
    import polars as pl

    if EXPECTED not in frame.columns:
        return frame
    return frame.with_columns(pl.col(EXPECTED).fill_null(
        pl.when(pl.col("expected_match")).then(pl.col("solution"))))
