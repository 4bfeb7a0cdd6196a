"""sudoku: the puzzle itself. Arrays in, arrays out: no files, no processes, no threads.

    grid        puzzle text <-> (N, 81) uint8 arrays, the givens' check, display
    engine      the compiled bitmask solver (intrinsics: its LLVM code)
    check       the independent checker: is a grid a solution of its puzzle?
    reference   textbook backtracking, the correctness reference (never the engine)
    classic     Valid Sudoku and Sudoku Solver on list-of-lists boards
    solver      puzzles -> outcomes: encode, reject bad givens, solve, check
    status      the statuses (a contract); grade: difficulty from the engine's guesses
    canonical   the minlex form; symmetry: the grid's transformations, encoded
    search      generation's search: full grids, clues removed down to a unique puzzle
                (and kept when rated in a SER band)
    rate/       the Sudoku Explainer rating (SER): techniques, chains, the step loop
    replay      the independent replayer: does a solving trace reach the solution?
                (shares no code with rate/, as check shares none with the engine)

May import: the foundation (pipeline.errors, pipeline.compiled) and nothing else of ours.
"""
