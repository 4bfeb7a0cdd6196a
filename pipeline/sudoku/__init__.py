"""sudoku."""
