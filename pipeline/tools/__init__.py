"""tools: the commands over files and finished runs, one module a command.

    solve, validate, generate           puzzles from the command line or a file
    report (charts), show               a run summed up; the rows that are not solved
    dedup, split, augment               the data-set tools over a --canonical run

May import: io, sudoku, and the foundation (not job: a finished run is read through
io/runfolder.py, whatever made it).
"""
