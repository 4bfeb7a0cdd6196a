"""Options and configuration, end to end (README: Options and configuration): each setting
reaches the run through its layers (default < --config FILE < PIPELINE_<NAME> < flag); the
defaults need no file; --limit; the default output folder. (The layering itself:
tests/job/test_settings.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import LEET, PUZZLE, read_results, write_input
from helpers import check_run


def _part_sizes(out: Path) -> list[int]:
    return [pl.read_parquet(p).height for p in sorted((out / "results").glob("*.parquet"))]


def test_env_and_flags_reach_the_run(run_cli, tmp_path):
    path = write_input(tmp_path / "a.txt", "\n".join([PUZZLE] * 10) + "\n")
    assert run_cli("run", "-i", path, "-o", tmp_path / "o1", "--workers", "1",
                   env={"PIPELINE_CHUNK_SIZE": "3"}).returncode == 0
    assert _part_sizes(tmp_path / "o1") == [3, 3, 3, 1]
    assert run_cli("run", "-i", path, "-o", tmp_path / "o2", "--workers", "1",
               "--chunk-size", "5").returncode == 0
    assert _part_sizes(tmp_path / "o2") == [5, 5]
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nchunk_size = 2\nfail_on = ['solved']\n")
    res = run_cli("run", "-i", path, "-o", tmp_path / "o3", "--workers", "1", "-c", cfg)
    assert res.returncode == 1
    assert _part_sizes(tmp_path / "o3") == [2] * 5


def test_the_default_config_needs_no_file(run_cli, tmp_path):
    """Defaults are built in: a run from any folder (or after `pip install .`) has them."""
    (tmp_path / "p.txt").write_text(PUZZLE + "\n")
    assert run_cli("run", "-i", "p.txt", "-o", "out", "-q").returncode == 0
    config = json.loads((tmp_path / "out" / "manifest.json").read_text())["config"]
    assert config["chunk_size"] == 50000 and config["timings"] is True


def test_default_output_folder_is_named_after_first_input(run_cli, tmp_path):
    path = write_input(tmp_path / "my.puzzles.txt.gz", PUZZLE + "\n")
    res = run_cli("run", "-i", path, "--workers", "1")
    assert res.returncode == 0, res.stderr
    check_run(tmp_path / "output" / "my")


def test_limit_reads_only_the_first_rows(run_cli, tmp_path):
    text = "id,puzzle\n" + "".join(f"{i},{PUZZLE if i % 2 else LEET}\n" for i in range(100))
    (tmp_path / "a.csv").write_text(text)
    res = run_cli("run", "-i", "a.csv", "-o", "out", "--limit", "7", "--json", "-q")
    assert res.returncode == 0 and json.loads(res.stdout)["rows"] == 7
    frame = read_results(tmp_path / "out")
    assert frame["id"].to_list() == [str(i) for i in range(7)]
    assert not (tmp_path / "out" / ".spill").exists()
    again = run_cli("run", "-i", "a.csv", "-o", "out", "--limit", "7", "--json", "-q")
    assert json.loads(again.stdout)["already_done"] is True
    other = run_cli("run", "-i", "a.csv", "-o", "out", "--limit", "9", "-q")
    assert other.returncode == 2  # another limit is another run


@pytest.mark.slow
def test_a_scheduler_implies_dask_and_is_refused_with_local(run_process, tmp_path):
    """--scheduler says where tasks run: without --executor it means Dask (here a port where
    no scheduler listens: the run says it cannot reach it, never solves locally instead);
    with --executor local (a flag, PIPELINE_EXECUTOR, a config file) it is refused."""
    import socket

    path = write_input(tmp_path / "a.txt", PUZZLE + "\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    res = run_process("run", "-i", path, "-o", "o1", "--scheduler", address, "-q")
    assert res.returncode == 3 and f"cannot reach the Dask scheduler at {address}" in res.stderr
    assert not (tmp_path / "o1" / "_SUCCESS").exists()
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nexecutor = 'local'\n")
    for how, env in ((["--executor", "local"], {}), ([], {"PIPELINE_EXECUTOR": "local"}),
                     (["-c", str(cfg)], {})):
        res = run_process("run", "-i", path, "-o", "o2", "--scheduler", address, *how, env=env)
        assert res.returncode == 2, (how, res.stderr)
        assert res.stderr_lines == [f"pipeline: error: --scheduler {address}: a Dask "
                                    "scheduler, for --executor dask, not local"]
        assert not (tmp_path / "o2").exists()
    # local said in a later layer than the scheduler: the flag over a config file's cluster
    dask = tmp_path / "dask.toml"
    dask.write_text(f"[run]\nexecutor = 'dask'\nscheduler = '{address}'\n")
    for how, env in ((["-c", str(dask)], {}), ([], {"DASK_SCHEDULER_ADDRESS": address})):
        res = run_process("run", "-i", path, "-o", "o3", "--executor", "local", "--json", *how,
                          env=env)
        assert res.returncode == 0, (how, res.stderr)
        assert json.loads((tmp_path / "o3" / "manifest.json").read_text())["executor"] == "local"
