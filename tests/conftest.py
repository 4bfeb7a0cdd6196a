"""Shared fixtures: the shared data sets, a command-line runner, known puzzles, result readers.

Fixtures an engineer needs only in their own tests belong in their own test files; helpers
(not fixtures) that several test files share are in helpers.py.

The tests mirror the package: tests/<layer>/test_<module>.py for one module's behaviour,
tests/e2e/test_<promise>.py for a promise of the README end to end, each in one place.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline import compiled
from pipeline.execute.local import Executor

# pytest imports this file by its path (--import-mode=importlib: as tests.conftest); the
# test files import it by name (`from conftest import PUZZLE`: tests/ is on the path). One
# module for both, not two copies.
sys.modules.setdefault("conftest", sys.modules[__name__])
# helpers.py's asserts say what they compared, as a test's own do.
pytest.register_assert_rewrite("helpers")

REPO = Path(__file__).resolve().parents[1]
SAMPLE_CSV = REPO / "data" / "sample.csv"

# A Radcliffe puzzle (the first row of data/sample.csv) and its unique solution.
PUZZLE = "......95....64..7......7.1..38.15..25..87..6...72.....7...5...9.5.....2.3.94....."
SOLUTION = "471382956985641273263597418638915742592874361147263895724158639856739124319426587"
# The Valid Sudoku / Sudoku Solver example board, as one line, and its solution.
LEET = "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79"
LEET_SOLUTION = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
# Givens that repeat no digit, yet square 9 of grid row 1 has no candidate left; a full grid
# with the digit of its first square twice in grid row 1.
UNSOLVABLE = "12345678." + "........9" + "." * 63
BAD_FULL = SOLUTION[0] * 2 + SOLUTION[2:]


# The ahead-of-time module of pipeline.compiled (`make kernels`), loaded in this process.
AOT = compiled.loaded() is not None
needs_aot = pytest.mark.skipif(not AOT, reason="no ahead-of-time module here (make kernels)")

RAW = REPO.parent / "shared" / "data" / "raw"  # the shared puzzle collections
_TOKEN = re.compile(r"(?<![0-9.])[0-9.]{81}(?![0-9.])")


def _shared_raw() -> Path:
    return RAW


def load_set(rel: str, n: int | None = None, field: int = 0, every: int = 1) -> np.ndarray:
    """The field-th 81-character token of [0-9.] of every every-th line holding one, of a
    shared data set, at most n, as an (N, 81) uint8 array; the test is skipped without it."""
    path = RAW / rel
    if not path.exists():
        pytest.skip(f"data set {path} is absent")
    rows = []
    k = 0
    with open(path, errors="replace") as f:
        for line in f:
            tokens = _TOKEN.findall(line)
            if len(tokens) <= field:
                continue
            if k % every == 0:
                rows.append(tokens[field].replace(".", "0"))
                if n is not None and len(rows) >= n:
                    break
            k += 1
    return np.frombuffer("".join(rows).encode(), np.uint8).reshape(-1, 81) - 48


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data/raw next to the repository; the test is skipped when it is absent."""
    raw = _shared_raw()
    if not raw.is_dir():
        pytest.skip(f"shared data sets not found at {raw} (tests that read them are skipped)")
    return raw


@pytest.fixture(scope="session")
def sample_rows() -> list[tuple[str, str]]:
    """(puzzle, solution) pairs of data/sample.csv (Radcliffe subset, `.` blanks)."""
    frame = pl.read_csv(SAMPLE_CSV, infer_schema=False)
    return list(zip(frame["puzzle"].to_list(), frame["solution"].to_list(), strict=True))


def pipeline_command() -> list[str]:
    """How to start the CLI as a real process: the console script, else `python -m`."""
    script = Path(sys.executable).with_name("pipeline")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "pipeline"]


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.strip()]


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_")}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def invoke(args: list[str], input: bytes | str | None = None,
           env: dict[str, str] | None = None, cwd: Path | None = None) -> CliResult:
    """The CLI's own entry point (its error handling and exit codes) inside this process."""
    import signal

    from click.testing import CliRunner

    from pipeline.cli import exits

    unset = {k: None for k in os.environ if k.startswith("PIPELINE_")}
    unset["DASK_SCHEDULER_ADDRESS"] = None
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    saved_argv, here = sys.argv, os.getcwd()
    with CliRunner().isolation(input=input, env={**unset, **(env or {})}) as (out, err, _):
        sys.argv = ["pipeline", *args]
        os.chdir(cwd or here)
        try:
            exits.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.stdout.flush()  # print() leaves text in the wrappers' buffers
            sys.stderr.flush()
            sys.argv = saved_argv
            os.chdir(here)
            for s, h in handlers.items():
                signal.signal(s, h)
        return CliResult(code, out.getvalue().decode("utf-8", "replace"),
                         err.getvalue().decode("utf-8", "replace"))


@pytest.fixture
def run_cli(tmp_path):
    """run_cli(*args, input=bytes|None, env={...}, cwd=...) -> CliResult, in this process:
    the CLI's entry point with its streams captured, the environment and the folder set for
    the call (the local pool's forkserver, started once, serves every call)."""

    def run(*args: str, input: bytes | str | None = None, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> CliResult:
        return invoke(list(map(str, args)), input, env, cwd or tmp_path)

    return run


@pytest.fixture
def run_process(tmp_path):
    """run_process(*args, ...) -> CliResult: the CLI as a real process, for the tests whose
    point is the process itself (its start, its exit, its streams as file descriptors)."""

    def run(*args: str, input: bytes | None = None, env: dict[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 240) -> CliResult:
        proc = subprocess.run(
            [*pipeline_command(), *map(str, args)], input=input if input is not None else b"",
            capture_output=True, env=_env(env), cwd=cwd or tmp_path, timeout=timeout)
        return CliResult(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                         proc.stderr.decode("utf-8", "replace"))

    return run


@pytest.fixture
def popen_cli(tmp_path):
    """Start the CLI in its own process group; yields a starter, kills leftovers afterwards."""
    started: list[subprocess.Popen] = []

    def start(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
              stdin=subprocess.DEVNULL) -> subprocess.Popen:
        proc = subprocess.Popen([*pipeline_command(), *map(str, args)], env=_env(env),
                                cwd=cwd or tmp_path, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def write_input(path: Path, content: str | bytes) -> Path:
    """Write a test input; a name ending in .gz is gzipped."""
    data = content.encode() if isinstance(content, str) else content
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def read_results(out: Path) -> pl.DataFrame:
    """Every result part of a run folder, sorted by source and row (empty frame if none)."""
    files = sorted((Path(out) / "results").glob("part-*.parquet"))
    if not files:
        return pl.DataFrame(schema={"source": pl.String, "row": pl.Int64, "status": pl.String})
    return pl.read_parquet(files).sort("source", "row")


def part_codecs(part) -> dict[str, str]:
    """Each column's codec in a result part (a path or an open file), its first row group."""
    import pyarrow.parquet as pq

    group = pq.ParquetFile(part).metadata.row_group(0)
    return {group.column(i).path_in_schema: group.column(i).compression
            for i in range(group.num_columns)}


def comparable(frame: pl.DataFrame) -> pl.DataFrame:
    """Results without the columns that may differ between equal runs (timings)."""
    return frame.drop([c for c in ("solve_us",) if c in frame.columns]).sort("source", "row")


@pytest.fixture
def results():
    return read_results


@pytest.fixture
def make_input(tmp_path):
    """make_input(name, content) -> Path under the test's tmp folder (.gz names gzipped)."""

    def make(name: str, content: str | bytes) -> Path:
        return write_input(tmp_path / name, content)

    return make


class InlineExecutor(Executor):
    """Runs each task at once in this process (for tests of what tasks do, not of pools)."""

    name = "inline"
    workers = 1
    retries = 2

    def submit(self, task):
        import concurrent.futures as cf

        from pipeline.job import worker

        fut: cf.Future = cf.Future()
        try:
            fut.set_result(worker.execute(task))
        except Exception as exc:
            fut.set_exception(exc)
        return fut

    def wait(self, futures, timeout=None):
        return set(futures)

    def result(self, future):
        return future.result()


def read_input(path, range_bytes: int | None = None, puzzle_column=None, solution_column=None):
    """(frame of every row, {row: reason}, shape) as the pipeline reads a file, and checked
    two ways: in one pass from the start, and range by range as `pipeline run` plans it
    (with `range_bytes`, or the default). Both must give the same rows and reasons."""
    import pyarrow as pa

    from pipeline.io import inputs, reader, schema
    from pipeline.io.storage import Location
    from pipeline.job import plan

    inp = inputs.open_input(str(path), 0, puzzle_column, solution_column, schema.OURS)
    names = reader.column_names(inp.shape)
    whole, reasons = [], {}
    for first, rows in inputs.read_whole(inp):
        whole.append(rows)
        reasons.update({first + i: why for i, why in rows.reasons.items()})
    if inp.stream == "gzip":
        copy = Location(str(path) + ".spilled")
        with inp.location.open_stream() as f:
            inputs.spill(f, copy, True, inp.source)
        inp.location = copy
    plan.plan_inputs([inp], InlineExecutor(), 1000)
    if range_bytes is not None:
        inp.range_bytes = range_bytes
        inp.ranges = []
        plan.plan_inputs([inp], InlineExecutor(), 1000,
                         {"definition": {"inputs": [{**inp.describe(),
                                                     "range_bytes": range_bytes}]}})
    ranged, range_reasons, row = [], {}, 0
    for r in inp.ranges:
        assert r.first_row == row
        with inp.location.reader(r.start, r.end) as read:
            rows = reader.read_rows(read, r.start, r.end, inp.shape)
        assert rows.n == r.rows
        ranged.append(rows)
        range_reasons.update({row + i: why for i, why in rows.reasons.items()})
        row += rows.n
    assert range_reasons == reasons

    def frame(parts):
        if not parts:
            return pl.DataFrame(schema={"row": pl.Int64, **dict.fromkeys(names, pl.String)})
        table = pa.table({name: pa.concat_arrays([p.columns[name] for p in parts])
                          for name in names})
        out = pl.from_arrow(table)
        return out.select(pl.int_range(0, out.height, dtype=pl.Int64).alias("row"), pl.all())

    one, other = frame(whole), frame(ranged)
    assert one.equals(other), (one, other)
    return one, reasons, inp.shape


@contextlib.contextmanager
def moto_server(log_dir: Path, **env: str):
    """A real S3-protocol server (moto's) on loopback, with `env` for it (moto's own
    settings); yields the environment that points the AWS libraries at it."""
    import socket
    import time

    pytest.importorskip("s3fs")
    server = Path(sys.executable).with_name("moto_server")
    if not server.exists():
        pytest.skip(f"no moto_server at {server}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(log_dir / "moto.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=log,
                            stderr=log, start_new_session=True, env={**os.environ, **env})
    aws = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_DEFAULT_REGION": "us-east-1"}
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("moto_server did not start") from None
                time.sleep(0.1)
        yield aws
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3-protocol server (moto's) on loopback, as s3fs's own tests use; yields the
    environment that points the AWS libraries at it (AWS_ENDPOINT_URL and credentials)."""
    with moto_server(tmp_path_factory.mktemp("moto")) as env:
        yield env


@pytest.fixture
def s3(s3_server, monkeypatch):
    """An s3fs filesystem on the test server, with a fresh bucket; (fs, bucket)."""
    import uuid

    import s3fs

    for k, v in s3_server.items():
        monkeypatch.setenv(k, v)
    fs = s3fs.S3FileSystem()
    bucket = f"b-{uuid.uuid4().hex[:10]}"
    fs.mkdir(bucket)
    return fs, bucket


# ---------------------------------------------------------------------------------------
# Runs to disturb: caught in the middle, killed, stopped, refused (tests/e2e)


@pytest.fixture
def big(tmp_path) -> Path:
    """A text file long enough for a run to be caught in the middle (18,000 rows)."""
    lines = (pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list() * 6)
    path = tmp_path / "big.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Path:
    """A folder with a medium input (every status) and an undisturbed run of it; each test
    writes its own folder beside them (helpers.big_args)."""
    from helpers import run

    d = tmp_path_factory.mktemp("robust")
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()
    lines = []
    for i in range(6):
        lines += puzzles
        lines += ["." * 81, UNSOLVABLE, BAD_FULL, PUZZLE[:80], f"junk {i}"]
    (d / "big.txt").write_text("\n".join(lines) + "\n")
    code, out, err = run(["run", "-i", "big.txt", "-o", "base", "--workers", "2",
                          "--chunk-size", "40", "--quiet"], d)
    assert code == 0, err
    return d


@pytest.fixture(scope="session")
def baseline(workdir) -> pl.DataFrame:
    """The results of the undisturbed run in `workdir` (tests/e2e/test_dask.py has a
    `baseline` of its own)."""
    return comparable(read_results(workdir / "base"))


@pytest.fixture
def tiny_disk(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("needs root on Linux to mount a tiny tmpfs")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                         capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# ---------------------------------------------------------------------------------------
# A --canonical run with planted equivalents (the data-set tools: tests/io/test_classes.py,
# tests/tools/test_dedup.py, test_split.py, test_augment.py, tests/e2e/test_storage.py)

INVALID = "55" + "." * 79
EMPTY = "." * 81
MALFORMED = 2  # rows planted without a canonical form: "1234" in a.csv, "x" * 81 in b.txt


@pytest.fixture(scope="session")
def planted(tmp_path_factory):
    """Two inputs with known equivalents, run with --canonical in parts of about 50 rows.

    a.csv (id,puzzle): sample puzzles 0..1999 and equivalents, shuffled; b.txt: 2000..2999
    and equivalents. Planted on purpose: b.txt's row 0 is equivalent to a.csv's last row (the
    first occurrence is in a.csv, at a higher row number); an exact copy; an invalid puzzle
    and an equivalent of it; an empty board twice (multiple); malformed rows in both files.
    """
    from helpers import equivalents, pipeline_run

    from pipeline.sudoku import canonical, grid

    base = tmp_path_factory.mktemp("datasets")
    rng = np.random.default_rng(2024)
    originals = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()
    picked = rng.choice(len(originals), 700, replace=False)
    extra = [originals[i] for i in picked for _ in range(1 + i % 3)]
    copies = equivalents(extra, rng)
    a = originals[:2000] + [c for c, p in zip(copies, picked.repeat(1 + picked % 3),
                                                 strict=True) if p < 2000]
    b = originals[2000:] + [c for c, p in zip(copies, picked.repeat(1 + picked % 3),
                                                 strict=True) if p >= 2000]
    a = [a[i] for i in rng.permutation(len(a))]
    b = [b[i] for i in rng.permutation(len(b))]
    a += [INVALID, "1234", a[17], EMPTY]
    b[100:100] = [*equivalents([INVALID], rng), "x" * 81, EMPTY]
    b.insert(0, equivalents([a[-5]], rng)[0])  # a[-5]: a.csv's last original-ish row
    (base / "a.csv").write_text("id,puzzle\n" + "".join(f"{i},{p}\n" for i, p in
                                                          enumerate(a)))
    (base / "b.txt").write_text("".join(p + "\n" for p in b))
    pipeline_run(base, "run", "a.csv", "b.txt", extra=("--canonical",))
    wellformed = [p for p in originals + [INVALID, EMPTY]]
    g, _ = grid.encode(wellformed)
    planted_classes = len(set(grid.decode(canonical.minlex(g)[0])))
    return {"base": base, "run": base / "run", "a": a, "b": b,
            "sources": ["a.csv", "b.txt"], "classes": planted_classes}


@pytest.fixture(scope="session")
def planted_results(planted) -> pl.DataFrame:
    """Every row of the planted run."""
    return read_results(planted["run"])
