"""What a finished run folder is: "already done" only when its parts and stats say so, parts
only of this run, nothing written into it by a task of another run, and never an input.

(The third round of attacks on the run folder's promises; each test failed before its fix.)
"""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest
from conftest import PUZZLE, SAMPLE_CSV, read_results

from pipeline.errors import RunFailed
from pipeline.io import records, runfolder
from pipeline.io.inputs import open_input
from pipeline.io.ranges import Range
from pipeline.io.runfolder import Fence
from pipeline.io.schema import OURS
from pipeline.io.storage import Location
from pipeline.job import worker
from pipeline.job.tasks import Solve

RUN = ["--workers", "1", "--chunk-size", "500", "--json", "-q"]


def test_a_local_double_star_glob_reaches_every_depth(run_cli, tmp_path):
    """`dir/**/*.csv` means what fsspec's glob means: the top folder and every folder below."""
    for rel in ("inbox/a.csv", "inbox/x/b.csv", "inbox/x/y/c.csv"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"puzzle\n{PUZZLE}\n")
    res = run_cli("run", "-i", str(tmp_path / "inbox" / "**" / "*.csv"), "-o",
                  str(tmp_path / "out"), *RUN)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rows"] == 3
    assert read_results(tmp_path / "out")["source"].n_unique() == 3


def test_already_done_is_checked_against_the_parts_and_stats(run_cli, tmp_path):
    out = tmp_path / "out"
    first = run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(out), *RUN)
    assert first.returncode == 0, first.stderr
    whole = read_results(out)
    parts = sorted((out / "results").glob("part-*.parquet"))
    assert len(parts) > 3
    lost = pl.read_parquet(parts[2]).height
    parts[2].unlink()
    again = run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(out), *RUN)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert not summary["already_done"] and summary["resumed_rows"] == 3000 - lost
    assert read_results(out).drop("solve_us").equals(whole.drop("solve_us"))
    (out / "stats.parquet").unlink()
    third = run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(out), *RUN)
    assert third.returncode == 0 and not json.loads(third.stdout)["already_done"]
    stats = pl.read_parquet(out / "stats.parquet").filter(pl.col("scope") == "run")
    assert stats["rows"].item() == 3000 and stats["solved"].item() == 3000
    fourth = run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(out), *RUN)
    assert json.loads(fourth.stdout)["already_done"]


@pytest.mark.parametrize("options", [["--first-solution"], ["--canonical"]])
def test_a_part_of_a_run_with_other_options_is_not_taken(run_cli, tmp_path, options):
    """A same-range part made with other options (n_solutions null, another column) is
    recognised by the run's definition in its footer, and made again."""
    other, out = tmp_path / "other", tmp_path / "out"
    assert run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(other), *RUN, *options
                   ).returncode == 0
    assert run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(out), *RUN).returncode == 0
    whole = read_results(out)
    (out / "_SUCCESS").unlink()
    shutil.copy(other / "results" / "part-00001.parquet", out / "results" / "part-00001.parquet")
    lost = pl.read_parquet(out / "results" / "part-00001.parquet").height
    res = run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(out), *RUN)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["resumed_rows"] == 3000 - lost
    again = read_results(out)
    assert again.columns == whole.columns
    assert again["n_solutions"].null_count() == 0
    assert again.drop("solve_us").equals(whole.drop("solve_us"))


def _one_solve(tmp_path, run_id: str) -> tuple[Solve, Location]:
    src = tmp_path / "in.txt"
    src.write_text(f"{PUZZLE}\n" * 4)
    inp = open_input(str(src), 0, None, None, OURS)
    folder = Location(str(tmp_path / "run"))
    folder.child("results").makedirs()
    h = records.hasher()
    h.update(src.read_bytes())
    r = Range(0, 0, 0, src.stat().st_size, 0, 4, h.hexdigest())
    task = Solve(r, inp.location, inp.shape, inp.source, folder.child("results"), (), False, 2,
                 False, definition="d", fence=Fence(folder, run_id))
    return task, folder


def test_a_late_task_of_another_run_writes_nothing(tmp_path):
    """Writes are fenced by the run: a task whose run no longer holds the folder (a stopped
    Dask worker's, continued after another run took the folder over) or whose folder is
    finished leaves no part."""
    task, folder = _one_solve(tmp_path, "run-a")
    part = folder.child("results").child(runfolder.part_name(0))
    folder.child(runfolder.MANIFEST).write_atomic(json.dumps({"run_id": "run-b"}).encode())
    with pytest.raises(RunFailed, match="no longer run run-a"):
        worker.execute(task)
    assert not part.exists()
    folder.child(runfolder.MANIFEST).write_atomic(json.dumps({"run_id": "run-a"}).encode())
    folder.child(runfolder.SUCCESS).write_atomic(b"{}")
    with pytest.raises(RunFailed, match="is finished"):
        worker.execute(task)
    assert not part.exists()
    folder.child(runfolder.SUCCESS).remove()
    worker.execute(task)  # its own run's folder: written
    assert part.exists()
    assert not [p for p in (tmp_path / "run" / "results").iterdir() if p.name.endswith(".tmp")]


def test_the_output_folder_is_never_an_input(run_cli, tmp_path):
    """`--input 'data/*' --output data/out`: the run's own folder and parts are left out, so
    the same command resumes and says "already done"; with Parquet inputs --overwrite
    never reads (and deletes) its own parts."""
    data = tmp_path / "data"
    data.mkdir()
    pl.read_csv(SAMPLE_CSV, infer_schema=False).head(600).write_parquet(data / "a.parquet")
    (data / "b.txt").write_text(f"{PUZZLE}\n" * 3)
    args = ["run", "-i", str(data / "*"), "-o", str(data / "out"), *RUN]
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["rows"] == 603
    again = run_cli(*args)
    assert again.returncode == 0 and json.loads(again.stdout)["already_done"], again.stderr
    over = run_cli(*args, "--overwrite")
    assert over.returncode == 0, over.stderr
    assert json.loads(over.stdout)["rows"] == 603
    assert read_results(data / "out").height == 603
