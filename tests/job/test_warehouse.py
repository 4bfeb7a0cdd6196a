"""`pipeline run --incremental`: a warehouse of per-file runs with a catalog."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
from conftest import LEET, PUZZLE, read_results

from pipeline.io.runfolder import RunFolder
from pipeline.io.storage import Location

BAD = "1" * 81  # a full row of ones: invalid


def _inbox(tmp_path: Path) -> Path:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.txt").write_text(f"{PUZZLE}\n{BAD}\n")
    (inbox / "b.csv").write_text(f"puzzle\n{LEET}\n{PUZZLE}\n{LEET}\n")
    return inbox


def _run(run_cli, *extra: str):
    res = run_cli("run", "--input", "inbox/*", "--output", "warehouse", "--incremental",
                  "--json", "--workers", "1", *extra)
    summary = json.loads(res.stdout.strip().splitlines()[-1]) if res.stdout.strip() else None
    return res, summary


def test_first_run_processes_every_file_into_its_own_finished_run(tmp_path, run_cli):
    _inbox(tmp_path)
    res, summary = _run(run_cli)
    assert res.returncode == 0, res.stderr
    assert sorted(summary["processed_files"]) == ["inbox/a.txt", "inbox/b.csv"]
    assert summary["rows"] == 5
    assert summary["counts"]["solved"] == 4 and summary["counts"]["invalid"] == 1
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet").sort("file")
    assert catalog["file"].to_list() == ["inbox/a.txt", "inbox/b.csv"]
    assert catalog["rows"].to_list() == [2, 3]
    assert catalog["invalid"].to_list() == [1, 0]
    for entry in catalog.iter_rows(named=True):
        folder = tmp_path / "warehouse" / entry["run_dir"]
        assert (folder / "_SUCCESS").exists()
        assert entry["run_dir"].endswith(entry["sha256"][:12])
        got = read_results(folder)
        assert got.height == entry["rows"]
        assert got.filter(pl.col("status") == "solved").height == entry["solved"]
        records = [json.loads(ln) for ln in (folder / "logs" / "run.jsonl").read_text().splitlines()]
        assert records and {"time", "level", "run_id", "part", "pid", "message"} <= set(records[0])


def test_a_second_run_finds_nothing_new_and_changes_nothing(tmp_path, run_cli):
    _inbox(tmp_path)
    assert _run(run_cli)[0].returncode == 0
    before = sorted(p.name for p in (tmp_path / "warehouse").iterdir())
    res, summary = _run(run_cli)
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == [] and summary["rows"] == 0
    assert sorted(summary["skipped_files"]) == ["inbox/a.txt", "inbox/b.csv"]
    assert sorted(p.name for p in (tmp_path / "warehouse").iterdir()) == before
    assert pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet").height == 2


def test_a_changed_file_is_processed_again_as_a_new_version(tmp_path, run_cli):
    inbox = _inbox(tmp_path)
    assert _run(run_cli)[0].returncode == 0
    (inbox / "a.txt").write_text(f"{PUZZLE}\n{LEET}\n{LEET}\n")
    res, summary = _run(run_cli)
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == ["inbox/a.txt"]
    assert summary["skipped_files"] == ["inbox/b.csv"]
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet")
    versions = catalog.filter(pl.col("file") == "inbox/a.txt")
    assert versions.height == 2 and versions["sha256"].n_unique() == 2
    assert versions["run_dir"].n_unique() == 2
    assert sorted(versions["rows"].to_list()) == [2, 3]


def test_the_same_content_under_a_new_name_is_known_by_its_hash(tmp_path, run_cli):
    inbox = _inbox(tmp_path)
    assert _run(run_cli)[0].returncode == 0
    (inbox / "a-copy.txt").write_bytes((inbox / "a.txt").read_bytes())
    res, summary = _run(run_cli)
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == []
    assert "inbox/a-copy.txt" in summary["skipped_files"]


def test_a_touched_but_unchanged_file_is_hashed_and_skipped(tmp_path, run_cli):
    inbox = _inbox(tmp_path)
    assert _run(run_cli)[0].returncode == 0
    st = (inbox / "b.csv").stat()
    os.utime(inbox / "b.csv", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    res, summary = _run(run_cli)
    assert res.returncode == 0 and summary["processed_files"] == []


def test_an_overlapping_run_is_refused_while_the_warehouse_is_locked(tmp_path, run_cli):
    _inbox(tmp_path)
    (tmp_path / "warehouse").mkdir()
    lock = RunFolder(Location(str(tmp_path / "warehouse")))
    lock.lock("pid 4242 (the nightly job)")
    try:
        res, _ = _run(run_cli)
    finally:
        lock.unlock()
    assert res.returncode == 2
    assert len(res.stderr_lines) == 1 and "pid 4242" in res.stderr_lines[0]
    assert not (tmp_path / "warehouse" / "catalog.parquet").exists()
    assert _run(run_cli)[0].returncode == 0  # the lock went with its holder


def test_fail_on_counts_across_the_files_processed(tmp_path, run_cli):
    _inbox(tmp_path)
    res, summary = _run(run_cli, "--fail-on", "invalid")
    assert res.returncode == 1 and summary["failing"] == ["invalid"]


def test_incremental_needs_an_output_folder_and_files(tmp_path, run_cli):
    _inbox(tmp_path)
    res = run_cli("run", "--input", "inbox/a.txt", "--incremental")
    assert res.returncode == 2 and len(res.stderr_lines) == 1
    res = run_cli("run", "--input", "-", "--output", "wh", "--incremental",
                  input=f"{PUZZLE}\n".encode())
    assert res.returncode == 2 and "standard input" in res.stderr
