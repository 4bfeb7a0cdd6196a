"""`pipeline run --incremental`: a warehouse of per-file runs with a catalog."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import polars as pl
import pytest
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


def test_a_run_folder_is_not_a_warehouse(tmp_path, run_cli):
    """--incremental into a run folder wrote its catalog and per-file folders inside the
    run (the other way round, a run into a warehouse, is refused as a folder of others')."""
    _inbox(tmp_path)
    assert run_cli("run", "--input", "inbox/a.txt", "--output", "run", "-q").returncode == 0
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    res = run_cli("run", "--input", "inbox/*", "--output", "run", "--incremental")
    assert res.returncode == 2 and "is a run folder, not a warehouse" in res.stderr
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before


def test_incremental_needs_an_output_folder_and_files(tmp_path, run_cli):
    _inbox(tmp_path)
    res = run_cli("run", "--input", "inbox/a.txt", "--incremental")
    assert res.returncode == 2 and len(res.stderr_lines) == 1
    res = run_cli("run", "--input", "-", "--output", "wh", "--incremental",
                  input=f"{PUZZLE}\n".encode())
    assert res.returncode == 2 and "standard input" in res.stderr


# ---------------------------------------------------------------------------------------
# A warehouse at a URL (the loopback S3 server), inputs at URLs


def _s3_run(run_cli, inputs: str, warehouse: str, *extra: str):
    res = run_cli("run", "--input", inputs, "--output", warehouse, "--incremental", "--json",
                  "--workers", "1", *extra)
    return res, json.loads(res.stdout) if res.stdout.strip() else None


@pytest.mark.slow
def test_a_warehouse_on_an_object_store_works_as_run_does(s3, run_cli, tmp_path):
    fs, bucket = s3
    inbox = _inbox(tmp_path)
    for name in ("a.txt", "b.csv"):
        fs.put_file(str(inbox / name), f"{bucket}/inbox/{name}")
    wh = f"s3://{bucket}/wh"
    for inputs in (f"s3://{bucket}/inbox/*", "inbox/*"):  # inputs at URLs, and local
        res, summary = _s3_run(run_cli, inputs, f"{wh}-{len(inputs)}")
        assert res.returncode == 0, res.stderr
        assert summary["output"] == f"{wh}-{len(inputs)}" and summary["rows"] == 5
        catalog = pl.read_parquet(fs.cat_file(f"{bucket}/wh-{len(inputs)}/catalog.parquet"))
        assert sorted(catalog["file"].to_list()) == sorted(summary["processed_files"])
        for entry in catalog.iter_rows(named=True):
            folder = f"{bucket}/wh-{len(inputs)}/{entry['run_dir']}"
            assert fs.exists(f"{folder}/_SUCCESS")
            assert pl.read_parquet(fs.cat_file(f"{folder}/stats.parquet"))["rows"][-1] \
                == entry["rows"]
        assert not fs.exists(f"{bucket}/wh-{len(inputs)}/.lock")  # let go at the end
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox"]  # nothing local: no s3:/

    # Nothing new: skipped by size and ETag (or hash); a changed object is a new version.
    res, summary = _s3_run(run_cli, f"s3://{bucket}/inbox/*", f"{wh}-{len(inputs)}")
    assert res.returncode == 0 and summary["processed_files"] == []
    fs.pipe_file(f"{bucket}/inbox/a.txt", f"{PUZZLE}\n{LEET}\n{LEET}\n".encode())
    res, summary = _s3_run(run_cli, f"s3://{bucket}/inbox/*", f"{wh}-{len(inputs)}")
    assert res.returncode == 0 and summary["processed_files"] == [f"s3://{bucket}/inbox/a.txt"]


@pytest.mark.slow
def test_an_object_store_warehouse_is_locked_by_an_object(s3, run_cli, tmp_path):
    fs, bucket = s3
    _inbox(tmp_path)
    lock = f"{bucket}/wh/.lock"
    alive = {"holder": "pid 4242 (the nightly job)", "host": socket.gethostname(),
             "pid": os.getpid()}
    fs.pipe_file(lock, json.dumps(alive).encode())
    res, _ = _s3_run(run_cli, "inbox/*", f"s3://{bucket}/wh")
    assert res.returncode == 2
    assert len(res.stderr_lines) == 1 and "pid 4242" in res.stderr_lines[0]
    assert f"s3://{bucket}/wh/.lock" in res.stderr_lines[0]  # what to delete if it is gone
    assert not fs.exists(f"{bucket}/wh/catalog.parquet")

    # A holder of this host whose process is gone (kill -9) is taken over.
    dead = subprocess.Popen(["true"])
    dead.wait()
    fs.pipe_file(lock, json.dumps({**alive, "pid": dead.pid}).encode())
    res, summary = _s3_run(run_cli, "inbox/*", f"s3://{bucket}/wh")
    assert res.returncode == 0, res.stderr
    assert summary["rows"] == 5 and not fs.exists(lock)


def test_a_warehouse_where_no_lock_can_be_made_is_refused(run_cli, tmp_path):
    _inbox(tmp_path)
    res, _ = _s3_run(run_cli, "inbox/*", "gs://bucket/wh")
    assert res.returncode == 2 and len(res.stderr_lines) == 1
    assert "gs://bucket/wh" in res.stderr_lines[0] and "lock" in res.stderr_lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox"]


# ---------------------------------------------------------------------------------------
# An unusable file


def _mixed_inbox(tmp_path: Path) -> Path:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.csv").write_text(f"puzzle\n{PUZZLE}\n{LEET}\n")
    (inbox / "b.csv").write_bytes(bytes(range(256)) * 40)  # binary
    (inbox / "c.csv").write_text(f"puzzle\n{LEET}\n{BAD}\n{PUZZLE}\n")
    return inbox


def test_one_unusable_file_never_blocks_an_inbox(tmp_path, run_cli):
    inbox = _mixed_inbox(tmp_path)
    res, summary = _run(run_cli, "--quiet")
    assert res.returncode == 2  # some input was refused; the others are done
    assert summary["processed_files"] == ["inbox/a.csv", "inbox/c.csv"]
    assert list(summary["refused_files"]) == ["inbox/b.csv"]
    line = res.stderr_lines
    assert len(line) == 1 and "inbox/b.csv" in line[0] and "not a text file" in line[0]
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet").sort("file")
    assert catalog["file"].to_list() == ["inbox/a.csv", "inbox/b.csv", "inbox/c.csv"]
    assert catalog["rows"].to_list() == [2, None, 3]
    refused = catalog.row(1, named=True)
    assert "not a text file" in refused["reason"] and refused["run_dir"] is None
    assert catalog["reason"][0] is None and catalog["reason"][2] is None
    names = sorted(p.name for p in (tmp_path / "warehouse").iterdir())
    assert not [n for n in names if n.startswith("b-")]  # no empty folder left behind
    for entry in catalog.filter(pl.col("run_dir").is_not_null()).iter_rows(named=True):
        assert (tmp_path / "warehouse" / entry["run_dir"] / "_SUCCESS").exists()

    # The next night: the refused file is skipped until it changes.
    res, summary = _run(run_cli, "--quiet")
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == [] and "inbox/b.csv" in summary["skipped_files"]
    (inbox / "b.csv").write_text(f"{PUZZLE}\n")
    res, summary = _run(run_cli, "--quiet")
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == ["inbox/b.csv"] and summary["rows"] == 1


def test_a_file_refused_after_its_folder_was_made_leaves_no_folder(tmp_path, run_cli):
    """An input read once (http) is found unusable on its copy, in its run folder."""
    inbox = _mixed_inbox(tmp_path)
    www = tmp_path / "www"
    www.mkdir()
    (inbox / "b.csv").rename(www / "b.csv")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: Quiet(*a, directory=str(www)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/b.csv"
    try:
        res = run_cli("run", "-i", "inbox/a.csv", "-i", url, "-i", "inbox/c.csv",
                      "--output", "warehouse", "--incremental", "--json", "--workers", "1")
    finally:
        server.shutdown()
    assert res.returncode == 2
    summary = json.loads(res.stdout)
    assert summary["processed_files"] == ["inbox/a.csv", "inbox/c.csv"]
    assert list(summary["refused_files"]) == [url]
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet")
    done = catalog["run_dir"].drop_nulls().to_list()
    assert len(done) == 2
    names = [p.name for p in (tmp_path / "warehouse").iterdir() if not p.name.startswith(".")]
    assert sorted(names) == sorted([*done, "catalog.parquet"])  # b's folder is gone


def test_a_catalog_of_an_earlier_version_is_read_and_extended(tmp_path, run_cli):
    """A catalog written before the `etag` and `reason` columns: read with them null."""
    inbox = _inbox(tmp_path)
    assert _run(run_cli)[0].returncode == 0
    path = tmp_path / "warehouse" / "catalog.parquet"
    pl.read_parquet(path).drop("etag", "reason", "options").write_parquet(path)
    (inbox / "c.txt").write_text(f"{LEET}\n")
    res, summary = _run(run_cli)
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == ["inbox/c.txt"]
    catalog = pl.read_parquet(path)
    assert catalog.height == 3 and catalog["reason"].null_count() == 3


def test_other_options_run_a_known_file_again_and_a_refusal_is_the_options(tmp_path,
                                                                           run_cli):
    """A file is known with the options it was run with: a refusal for a mistyped
    --puzzle-column, or a --limit trial, never stands for the file's real run. Run again
    with other options, a file's folder holds the new run and the catalog one row for it."""
    _inbox(tmp_path)
    res, summary = _run(run_cli, "--puzzle-column", "nope")
    assert res.returncode == 2 and set(summary["refused_files"]) == {"inbox/a.txt",
                                                                      "inbox/b.csv"}
    res, summary = _run(run_cli, "--limit", "1")
    assert res.returncode == 0, res.stderr
    assert summary["rows"] == 2  # a row of each file
    res, summary = _run(run_cli)
    assert res.returncode == 0, res.stderr
    assert sorted(summary["processed_files"]) == ["inbox/a.txt", "inbox/b.csv"]
    assert summary["rows"] == 5
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet")
    done = catalog.filter(pl.col("reason").is_null())
    assert done.height == 2 and sorted(done["rows"].to_list()) == [2, 3]  # the limit's gone
    assert catalog.filter(pl.col("reason").is_not_null()).height == 2  # --puzzle-column nope's
    for entry in done.iter_rows(named=True):
        assert read_results(tmp_path / "warehouse" / entry["run_dir"]).height == entry["rows"]
    res, summary = _run(run_cli)
    assert summary["rows"] == 0 and len(summary["skipped_files"]) == 2


def test_a_replacing_run_stopped_half_way_leaves_its_file_to_be_run_again(tmp_path, run_cli,
                                                                          popen_cli):
    """A file run again with other options: its catalog row goes before its folder is
    emptied, so a replacing run killed half-way leaves the file unknown, not known and done
    (the next run skipped it for good, its folder an unfinished run)."""
    from helpers import wait_file

    _inbox(tmp_path)
    res, _ = _run(run_cli, "--limit", "1")
    assert res.returncode == 0, res.stderr
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    proc = popen_cli("run", "--input", "inbox/*", "--output", "warehouse", "--incremental",
                     "--workers", "1", env={"PIPELINE_TEST_HOOK": "before-stats",
                                            "PIPELINE_TEST_HOOK_DIR": str(hooks)})
    try:  # the first file's replacing run, its parts written, its folder without _SUCCESS
        wait_file(hooks / "before-stats.reached", proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet")
    assert catalog["file"].to_list() == ["inbox/b.csv"]  # a.txt's row went first
    res, summary = _run(run_cli, "--limit", "1")
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == ["inbox/a.txt"]
    assert summary["skipped_files"] == ["inbox/b.csv"]
    entry = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet").filter(
        pl.col("file") == "inbox/a.txt").row(0, named=True)
    assert entry["rows"] == 1
    folder = tmp_path / "warehouse" / entry["run_dir"]
    assert (folder / "_SUCCESS").exists() and read_results(folder).height == 1


# ---------------------------------------------------------------------------------------
# Found by a new user (the fifth round): each failed before its fix


def test_a_file_changed_while_it_is_solved_is_not_recorded_as_what_was_hashed(tmp_path):
    """The file was hashed, then rewritten before its run read it: the catalog named the
    old content's hash for a folder of the new rows, and the next run solved the new
    content again (its rows twice, the old never)."""
    from helpers import finish, start, wait_file

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "f.txt").write_text(f"{PUZZLE}\n")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    args = ["run", "-i", "inbox/*", "-o", "warehouse", "--incremental", "--workers", "1",
            "--json"]
    proc = start(args, tmp_path, PIPELINE_TEST_HOOK="warehouse-hashed",
                 PIPELINE_TEST_HOOK_DIR=str(hooks))
    wait_file(hooks / "warehouse-hashed.reached", proc)
    (inbox / "f.txt").write_text(f"{LEET}\n{BAD}\n")  # after the hash, before the run
    (hooks / "warehouse-hashed.go").touch()
    code, _, err = finish(proc)
    assert code == 2 and "changed while it was solved" in err, err
    assert [p.name for p in (tmp_path / "warehouse").iterdir()
            if not p.name.startswith(".")] == ["catalog.parquet"]
    code, out, err = finish(start(args, tmp_path))  # done again: as it is now
    assert code == 0, err
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet")
    assert catalog["rows"].to_list() == [2]
    got = read_results(tmp_path / "warehouse" / catalog["run_dir"][0])
    assert got["puzzle"].to_list() == [LEET, BAD]


def test_an_edit_caught_as_its_ranges_are_read_refuses_that_file_alone(tmp_path):
    """Found by a helper: a file edited while its run read it ("changed while the run read
    it", its range's bytes not those hashed) failed the whole incremental run (exit 3):
    the other files not done, no catalog, the half-made folder left for good. It is the
    edited file's refusal, as an edit seen at its run's end is: folder removed, the others
    done, exit 2, and the file done again at the next run."""
    from helpers import finish, start, wait_file

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "f.txt").write_text(f"{LEET}\n{BAD}\n")
    (inbox / "g.txt").write_text(f"{PUZZLE}\n")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "read-silence.on").touch()  # f's range, planned and hashed, waits to be read
    args = ["run", "-i", "inbox/*", "-o", "warehouse", "--incremental", "--workers", "1"]
    proc = start(args, tmp_path, PIPELINE_TEST_HOOK="read-silence",
                 PIPELINE_TEST_HOOK_DIR=str(hooks))
    wait_file(hooks / "read-silence.reached", proc)
    (inbox / "f.txt").write_text(f"{BAD}\n{LEET}\n")  # the same size, other bytes
    (hooks / "read-silence.on").unlink()
    code, _, err = finish(proc)
    assert code == 2 and "f.txt: changed while it was solved" in err, err
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet")
    assert catalog["file"].to_list() == ["inbox/g.txt"]
    assert sorted(p.name for p in (tmp_path / "warehouse").iterdir()
                  if not p.name.startswith(".")) == ["catalog.parquet", catalog["run_dir"][0]]
    code, _, err = finish(start(args, tmp_path))  # done again: as it is now
    assert code == 0, err
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet")
    row = catalog.filter(pl.col("file") == "inbox/f.txt")
    assert read_results(tmp_path / "warehouse" / row["run_dir"][0])["puzzle"].to_list() == [
        BAD, LEET]


def test_an_edit_with_its_mtime_set_back_is_a_new_version(tmp_path, run_cli):
    """Same size and mtime (touch -d, cp -p, rsync -t) after an edit: it was skipped for
    good; its ctime and inode tell it."""
    inbox = _inbox(tmp_path)
    assert _run(run_cli)[0].returncode == 0
    f = inbox / "a.txt"
    st = f.stat()
    f.write_text(f.read_text().replace(BAD, "2" * 81))  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    res, summary = _run(run_cli)
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == ["inbox/a.txt"]


def test_odd_names_and_symlink_loops_never_block_an_inbox(tmp_path, run_cli):
    """A 250-byte name made a folder name too long (exit 3, every run); a name not UTF-8
    failed the run (exit 3); a symlink loop under ** refused the whole run (exit 2) and
    named files by their deepest way round the loop."""
    inbox = tmp_path / "inbox"
    (inbox / "sub").mkdir(parents=True)
    (inbox / ("x" * 250 + ".txt")).write_text(f"{PUZZLE}\n")
    (inbox / "z.txt").write_text(f"{LEET}\n")
    with open(os.fsencode(inbox) + b"/a\xff.txt", "w") as f:
        f.write(f"{PUZZLE}\n")
    (inbox / "sub" / "loop").symlink_to("..")
    res = run_cli("run", "--input", "inbox/**", "--output", "warehouse", "--incremental",
                  "--json", "--workers", "1")
    assert res.returncode == 2, res.stderr  # one refused: the others done
    assert "a\\xff.txt: its name is not UTF-8" in res.stderr
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet").sort("file")
    assert catalog["file"].to_list() == [f"inbox/{'x' * 250}.txt", "inbox/z.txt"]
    assert catalog["rows"].to_list() == [1, 1]
    again = run_cli("run", "--input", "inbox/**", "--output", "warehouse", "--incremental",
                    "--json", "--workers", "1")
    summary = json.loads(again.stdout)
    assert summary["processed_files"] == [] and list(summary["refused_files"]) == [
        "inbox/a\\xff.txt"]  # refused again until renamed


def test_overwrite_never_mixes_a_run_into_a_warehouse(tmp_path, run_cli):
    """`run` without --incremental into a warehouse said "use --overwrite", which then
    put a run's files beside the catalog: every later --incremental run was refused."""
    _inbox(tmp_path)
    assert _run(run_cli)[0].returncode == 0
    before = sorted(p.name for p in (tmp_path / "warehouse").iterdir())
    for extra in ([], ["--overwrite"]):
        res = run_cli("run", "-i", "inbox/*", "-o", "warehouse", *extra)
        assert res.returncode == 2 and "is a warehouse" in res.stderr, res.stderr
    assert sorted(p.name for p in (tmp_path / "warehouse").iterdir()) == before
    assert _run(run_cli)[0].returncode == 0


def test_the_summary_says_what_this_run_did(tmp_path, run_cli):
    """A catalog deleted and rebuilt from finished folders listed them as processed, with
    their rows; a resumed file said `resumed_rows: 0`."""
    _inbox(tmp_path)
    assert _run(run_cli)[0].returncode == 0
    (tmp_path / "warehouse" / "catalog.parquet").unlink()
    res, summary = _run(run_cli)
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == [] and summary["rows"] == 0
    assert sorted(summary["skipped_files"]) == ["inbox/a.txt", "inbox/b.csv"]
    assert len(pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet")) == 2
    # b's run unfinished, one part gone: resumed, and said so
    catalog = pl.read_parquet(tmp_path / "warehouse" / "catalog.parquet")
    folder = tmp_path / "warehouse" / catalog.filter(pl.col("file") == "inbox/b.csv")[
        "run_dir"][0]
    (tmp_path / "warehouse" / "catalog.parquet").unlink()
    (folder / "_SUCCESS").unlink()
    res, summary = _run(run_cli)
    assert res.returncode == 0, res.stderr
    assert summary["processed_files"] == ["inbox/b.csv"]
    assert summary["resumed_rows"] == summary["rows"] == 3
