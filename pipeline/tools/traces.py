"""`pipeline validate --traces DIR`: does every trace of a run replay?

A run made with `--rate --trace` has beside each result part a trace part: each rated row's
solving steps in players' notation. Each rated row's steps, read back from that notation and
applied in order by the independent replayer (pipeline.sudoku.replay, which shares no code
with the rater), must reach the row's solution and never remove a digit of it; a rated row
without steps, or steps of a row without a rating, is a fault too. Part by part: memory
holds one part's rows and steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

from pipeline.errors import InputError
from pipeline.io import runfolder, storage
from pipeline.sudoku import replay

_PAIR = re.compile(r"^r([1-9])c([1-9])(=|<>)([1-9])$")


def parse(text: str | None, sign: str) -> tuple[tuple[int, int], ...]:
    """`r5c6=3, r1c1=9` (sign `=`) or `r7c4<>1` (sign `<>`) as (square, digit) pairs."""
    out = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        m = _PAIR.match(item)
        if m is None or m.group(3) != sign:
            raise ValueError(f"not a step's {'placement' if sign == '=' else 'elimination'}: "
                             f"{item!r}")
        out.append(((int(m.group(1)) - 1) * 9 + int(m.group(2)) - 1, int(m.group(4))))
    return tuple(out)


@dataclass
class Verdict:
    rows: int = 0  # rated rows whose trace was replayed
    steps: int = 0
    faults: list[tuple[str, int, str]] = field(default_factory=list)  # source, row, why


def check_run(run_dir: str) -> Verdict:
    """Replay every trace of a finished run made with --rate --trace."""
    run = runfolder.open_run(run_dir, need_canonical=False)
    if "ser" not in run.columns:
        raise InputError(f"{run.shown}: no ratings (a run made with --rate --trace has traces)")
    traces = run.loc.child(runfolder.TRACES)
    names = set(traces.listdir())
    if not names:
        raise InputError(f"{run.shown}: no {runfolder.TRACES}/ (a run made with --trace has it)")
    verdict = Verdict()
    for part in run.parts:
        name = part.loc.name
        batches = [pl.from_arrow(b) for b in runfolder.part_batches(
            part, ["source", "row", "puzzle", "solution", "ser"])]
        if not batches:  # (a run of no rows has one empty part: nothing rated in it)
            continue
        results = pl.concat(batches, how="vertical_relaxed")
        rated = results.filter(pl.col("ser").is_not_null())
        if name not in names:
            verdict.faults += [(s, r, f"no trace part {runfolder.TRACES}/{name}")
                               for s, r in rated.select("source", "row").iter_rows()]
            continue
        try:
            with runfolder.open_parquet(traces.child(name)) as pf:
                steps = pl.from_arrow(pf.read()).sort("source", "row", "step")
                steps.select("placements", "eliminations")  # (both there, or it raises)
        except (OSError, ValueError, pl.exceptions.PolarsError) as exc:  # damaged
            said = storage.why(exc) if isinstance(exc, OSError) else str(exc).splitlines()[0]
            said = f"its trace part {runfolder.TRACES}/{name} cannot be read ({said})"
            verdict.faults += [(s, r, said) for s, r in rated.select("source", "row").iter_rows()]
            continue
        by_row = {key: group for key, group in steps.group_by(["source", "row"])}
        for source, row, puzzle, solution, _ in rated.iter_rows():
            group = by_row.pop((source, row), None)
            if group is None:
                verdict.faults.append((source, row, "rated, but has no steps"))
                continue
            try:
                path = [(parse(p, "="), parse(e, "<>")) for p, e in
                        group.select("placements", "eliminations").iter_rows()]
            except ValueError as exc:
                verdict.faults.append((source, row, str(exc)))
                continue
            if group["step"].to_list() != list(range(1, group.height + 1)):
                verdict.faults.append((source, row, "its steps are not numbered 1, 2, ..."))
                continue
            verdict.rows += 1
            verdict.steps += len(path)
            why = replay.why_not(puzzle, solution, path)
            if why is not None:
                verdict.faults.append((source, row, why))
        verdict.faults += [(s, r, "steps of a row without a rating") for s, r in by_row]
    return verdict


def main(run_dir: str, quiet: bool = False, as_json: bool = False) -> int:
    """Print each fault (`source row N: why`) and a summary on stderr, or (`as_json`) one
    JSON object on stdout; 1 when any fault."""
    import json
    import sys

    from pipeline.io.terminal import visible

    verdict = check_run(run_dir)
    code = 1 if verdict.faults else 0
    if as_json:
        print(json.dumps({"run": run_dir, "rows": verdict.rows, "steps": verdict.steps,
                          "faults": [{"source": s, "row": r, "why": w}
                                     for s, r, w in verdict.faults], "exit_code": code}))
    elif not quiet:
        for source, row, why in verdict.faults:
            print(visible(f"{source} row {row}: {why}"))
        print(f"traces: {verdict.rows:,} rated rows replayed ({verdict.steps:,} steps), "
              f"{len(verdict.faults):,} faults", file=sys.stderr)
    return code
