"""tools: the commands over files and finished runs, one module a command.

    solve, explain, validate, generate  puzzles from the command line or a file
    traces                              validate --traces: a run's solving steps replayed
    report (charts), show               a run summed up; the rows that are not solved
    dedup, split, augment, overlap      the data-set tools over a --canonical run

May import: io, sudoku, and the foundation (not job: a finished run is read through
io/runfolder.py, whatever made it).
"""
