"""io: bytes <-> records <-> rows <-> parts, on local disk or at a URL.

    storage     Location: a local path or an fsspec URL; whole-or-absent writes; secrets
    inputs      which files a pattern means; an input opened, its shape decided; spills
    shape       an input's shape (csv, text, fixed) from its first bytes; parquet: its own
    records     where each record starts and ends, which are rows (shared by plan and read)
    reader      a range's bytes -> rows as Arrow columns, bad ones `malformed` with a reason
    ranges      a range (the unit of work) and the planning tasks that find one
    schema      the results' columns; strings: Arrow strings <-> numpy buffers and grids
    runfolder   the run folder's on-disk contract: parts, manifest, stats, _SUCCESS, lock
    classes     equivalence classes of a run's canonical forms, in flat memory
    outputs     the output files of the commands (csv, csv.gz, parquet), whole or absent
    timestamps  every timestamp the folder, its log and the catalog write
    terminal    text for a terminal: control characters shown, never obeyed

May import: sudoku, and the foundation.
"""
