"""Sudoku Explainer's `serate` (the SER reference) built and run from Python, for the rater's
reference data and its benchmark.

serate is built from ``../shared/peers/sukaku-explainer`` with javac into ``CLASSES``
(``$SERATE_CLASSES`` overrides), always run with Sudoku Explainer 1.2.1's technique set
(``TECHS``) and one thread, pinned to one core when the machine has it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "peers" / "sukaku-explainer"
CLASSES = Path(os.environ.get("SERATE_CLASSES", REPO / "bench-results" / "serate" / "classes"))
TECHS = "1111111111010111011011011011000010100010111111"  # Sudoku Explainer 1.2.1's set
CORE = 1
# One puzzle's ER, EP, ED, ER's technique and serate's own time for it, tab-separated.
FORMAT = "%r%t%p%t%d%t%R%t%e"


def build(classes: Path = CLASSES) -> Path | None:
    """The folder of serate's classes, compiled first when missing (None without javac)."""
    if (classes / "diuf" / "sudoku" / "test" / "serate.class").exists():
        return classes
    if shutil.which("javac") is None or not SOURCE.is_dir():
        return None
    sources = sorted(str(p) for p in (SOURCE / "diuf").rglob("*.java"))
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as listing:
        listing.write("\n".join(sources) + "\n")
        listing.flush()
        subprocess.run(
            ["javac", "-nowarn", "-encoding", "ISO-8859-1", "-d", str(classes), f"@{listing.name}"],
            check=True,
            capture_output=True,
        )
    for p in (SOURCE / "diuf").rglob("*"):  # its resources (technique names, images)
        if p.is_file() and p.suffix != ".java":
            dest = classes / p.relative_to(SOURCE)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)
    return classes


def pin(core: int = CORE) -> list[str]:
    """`taskset -c core` when the machine has that core and taskset, else nothing."""
    if shutil.which("taskset") and core in os.sched_getaffinity(0):
        return ["taskset", "-c", str(core)]
    return []


def command(classes: Path, *options: str, core: int = CORE) -> list[str]:
    """serate's command line with the 1.2.1 technique set, one thread, on one core."""
    return [
        *pin(core),
        "java",
        "-Xmx1g",
        "-cp",
        str(classes),
        "diuf.sudoku.test.serate",
        f"--techs={TECHS}",
        "--threads=1",
        *options,
    ]


def _pencilmarks(text: str) -> set[int]:
    """serate's %m (729 characters: per cell its nine digits, `.` where one is not a
    candidate) as cell * 10 + digit codes."""
    return {c * 10 + int(ch) for c in range(81) for ch in text[9 * c:9 * c + 9] if ch != "."}


def seconds(text: str) -> float:
    """serate's %e (``1.23s``, ``2m05s``, ``1h02m``) in seconds."""
    text = text.strip()
    if text.endswith("s") and "m" not in text:
        return float(text[:-1])
    if text.endswith("s"):
        m, s = text[:-1].split("m")
        return 60 * int(m) + int(s)
    if text.endswith("m") and "h" in text:
        h, m = text[:-1].split("h")
        return 3600 * int(h) + 60 * int(m)
    raise ValueError(f"unknown serate time {text!r}")


def rate(
    classes: Path,
    puzzles: list[str],
    warm: list[str] = (),
    paths: bool = False,
    timeout: float | None = None,
    core: int = CORE,
    marks: bool = False,
) -> list[dict]:
    """Rate puzzles (81 characters each) in one JVM, after the warm-up puzzles (their results
    dropped): per puzzle er, ep, ed (floats), technique, seconds, and with ``paths`` the steps
    as (rating, short description) pairs; with ``marks`` too, each step's "removed": the
    candidates it took out (cell * 10 + digit, cell 0..80 row-major), placements' included."""
    options = [f"--format=>{FORMAT}", "--start=<"]
    if paths:
        options.append("--after=+%r %s%l#%m" if marks else "--after=+%r %s")
    if marks:
        options.append("--before==%m%l")
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write("\n".join([*warm, *puzzles]) + "\n")
        f.flush()
        out = subprocess.run(
            command(classes, *options, f"--input={f.name}", core=core),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        ).stdout
    results: list[dict] = []
    for line in out.splitlines():
        if line.startswith("<"):
            results.append({"steps": []} | ({"removed": []} if marks else {}))
        elif line.startswith("=") and results:
            before = _pencilmarks(line[1:])
        elif line.startswith("#") and results:
            after = _pencilmarks(line[1:])
            if after - before:
                raise RuntimeError("serate added a candidate in a step")
            results[-1]["removed"].append(sorted(before - after))
        elif line.startswith("+") and results:
            rating, _, text = line[1:].partition(" ")
            results[-1]["steps"].append((float(rating), text))
        elif line.startswith(">") and results:
            er, ep, ed, technique, took = line[1:].split("\t")
            results[-1].update(
                er=float(er), ep=float(ep), ed=float(ed), technique=technique, seconds=seconds(took)
            )
    results = results[len(warm) :]
    if len(results) != len(puzzles) or any("er" not in r for r in results):
        raise RuntimeError(f"serate rated {len(results)} of {len(puzzles)} puzzles")
    if not paths:
        for r in results:
            del r["steps"]
    return results
