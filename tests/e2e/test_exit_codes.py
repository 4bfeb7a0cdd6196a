"""Exit codes and the one line that says why (README: the table of exit codes; every
non-zero exit prints one line on stderr, --quiet too, and no traceback, and ends the run's
log with it): usage errors and unusable inputs exit 2 before the run starts, --fail-on
exits 1 on a finished run, an output that is a file, a truncated gzip. Stops (130, 143) are in test_signals.py, a held folder in
test_locks.py, what fails mid-run (exit 3) in test_failures.py.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import socket
from pathlib import Path

import pytest
from conftest import BAD_FULL, PUZZLE, SAMPLE_CSV, write_input
from helpers import BIG, finish, one_line, run, start_big_at, wait_file


def _one_line_failure(res, code: int, out: Path | None = None, needle: str | None = None):
    assert res.returncode == code, (res.returncode, res.stderr)
    assert len(res.stderr_lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    if needle:
        assert needle in res.stderr
    if out is not None:
        assert not (out / "_SUCCESS").exists()


def test_usage_and_input_errors_exit_2_with_one_line(run_cli, tmp_path):
    good = write_input(tmp_path / "good.txt", PUZZLE + "\n")
    write_input(tmp_path / "bin.dat", b"\x00\x01\x02" * 50)
    write_input(tmp_path / "noise.txt", bytes(range(0x80, 0x100)) * 40)
    write_input(tmp_path / "cols.csv", "a,b,c\n1,2,3\n")
    (tmp_path / "folder").mkdir()
    cases = [
        (("run", "-i", "missing.txt"), "no such file"),
        (("run", "-i", "folder"), "folder"),
        (("run", "-i", "bin.dat"), "not a text file"),
        (("run", "-i", "noise.txt"), "not a text file"),
        (("run", "-i", "cols.csv"), "no puzzle column"),
        (("run", "-i", "good.txt", "--puzzle-column", "nope"), None),
        (("run", "-i", "nothing*.csv"), "no file matches"),
        (("run", "-i", "good.txt", "--fail-on", "bogus"), "bogus"),
        (("run", "-i", "good.txt", "--executor", "spark"), "spark"),
        (("run", "-i", "good.txt", "--log-level", "loud"), None),
        (("run", "-i", "good.txt", "--workers", "abc"), None),
        (("run", "-i", "good.txt", "--workers", "-2"), None),
        (("run", "-i", "good.txt", "--chunk-size", "0"), None),
        (("run", "-i", "good.txt", "--no-such-option"), None),
        (("run",), "--input"),
        (("run", "-i", "good.txt", "-c", "missing.toml"), "missing.toml"),
        (("run", "-i", "-", "-i", "-"), None),
        (("frobnicate",), None),
    ]
    for args, needle in cases:
        res = run_cli(*args, "-o", "out") if args[0] == "run" and len(args) > 1 else run_cli(*args)
        _one_line_failure(res, 2, tmp_path / "out", needle)
    assert not (tmp_path / "out" / "_SUCCESS").exists()
    assert good.exists()


def test_odd_config_files_and_values_out_of_range_exit_2_with_one_line(run_cli, tmp_path):
    """What was an 'internal error' (exit 3): a config file that is not UTF-8, a `run` that
    is not a table, a chunk size or rate budget past what a range or the rater can hold."""
    write_input(tmp_path / "good.txt", PUZZLE + "\n")
    (tmp_path / "utf16.toml").write_bytes(b"\xff\xfe" + "workers = 1\n".encode("utf-16-le"))
    (tmp_path / "scalar.toml").write_text("run = 5\n")
    cases = [
        (("-c", "utf16.toml"), "not UTF-8"),
        (("-c", "scalar.toml"), "[run] is a table"),
        (("--chunk-size", "1000000000000"), "chunk-size"),
        (("--chunk-size", "99999999999999999999999"), "chunk-size"),
        (("--rate", "--rate-budget", "9223372036854775808"), "rate-budget"),
    ]
    for args, needle in cases:
        _one_line_failure(run_cli("run", "-i", "good.txt", "-o", "out", *args), 2,
                          tmp_path / "out", needle)
    res = run_cli("run", "-i", "good.txt", "-o", "out", env={"PIPELINE_CHUNK_SIZE": "1000000000000"})
    _one_line_failure(res, 2, tmp_path / "out", "chunk")


def test_an_object_store_that_fails_is_named_not_an_internal_error(run_process, tmp_path):
    """No credentials, or an endpoint that does not answer: the store's own words, on the
    input's one line, exit 2 (an input that cannot be used), never 'internal error'."""
    no_store = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_MAX_ATTEMPTS": "1"}
    res = run_process("run", "-i", "s3://bucket/x.csv", "-o", "out", env=no_store)
    _one_line_failure(res, 2, None, "s3://bucket/x.csv: cannot be read (NoCredentialsError")
    write_input(tmp_path / "good.txt", PUZZLE + "\n")  # an output there: not "no bucket"
    res = run_process("run", "-i", "good.txt", "-o", "s3://bucket/out", env=no_store)
    _one_line_failure(res, 3, None, "the object store failed: NoCredentialsError")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    unreachable = {**no_store, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                   "AWS_ENDPOINT_URL": f"http://127.0.0.1:{closed}"}
    res = run_process("run", "-i", "s3://bucket/x*.csv", "-o", "out", env=unreachable)
    _one_line_failure(res, 2, None, "cannot be listed (EndpointConnectionError")


def test_env_usage_error(run_cli, tmp_path):
    write_input(tmp_path / "g.txt", PUZZLE + "\n")
    res = run_cli("run", "-i", "g.txt", "-o", "out", env={"PIPELINE_WORKERS": "many"})
    _one_line_failure(res, 2, tmp_path / "out", "workers")


def test_bare_command_exit_2(run_cli):
    res = run_cli()
    assert res.returncode == 2 and len(res.stderr_lines) == 1
    assert "run" in res.stdout  # the help, on stdout


def test_fail_on_and_already_done(run_cli, tmp_path):
    write_input(tmp_path / "m.txt", f"{PUZZLE}\n{BAD_FULL}\n")
    res = run_cli("run", "-i", "m.txt", "-o", "out", "--workers", "1", "--fail-on", "invalid")
    _one_line_failure(res, 1)
    assert (tmp_path / "out" / "_SUCCESS").exists()  # finished; only the exit code says no
    res = run_cli("run", "-i", "m.txt", "-o", "out", "--workers", "1", "--json")
    assert res.returncode == 0
    summary = json.loads(res.stdout)
    assert summary["already_done"] is True and summary["rows"] == 2
    # a rerun with --fail-on answers as the run did: a scheduler's retry stays red
    res = run_cli("run", "-i", "m.txt", "-o", "out", "--workers", "1", "--fail-on", "invalid")
    _one_line_failure(res, 1)
    assert "already done, but found invalid rows" in res.stderr and "rows/s" not in res.stderr
    res = run_cli("run", "-i", "m.txt", "-o", "out", "--workers", "1", "--fail-on", "error")
    assert res.returncode == 0


def test_output_is_a_file(run_cli, tmp_path):
    write_input(tmp_path / "g.txt", PUZZLE + "\n")
    (tmp_path / "out").write_text("not a folder")
    res = run_cli("run", "-i", "g.txt", "-o", "out", "--workers", "1")
    assert res.returncode in (2, 3)
    assert len(res.stderr_lines) == 1 and "Traceback" not in res.stderr


@pytest.mark.slow
def test_output_naming_a_file(tmp_path):
    (tmp_path / "afile").write_text("x")
    code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", "afile", "-q"], tmp_path)
    assert code == 2 and "is a file, not a folder" in one_line(err)
    # the input itself as the output: the same (it said "every input is inside the
    # output folder afile")
    code, _, err = run(["run", "-i", "afile", "-o", "afile", "-q"], tmp_path)
    assert code == 2 and one_line(err) == "pipeline: error: --output afile: is a file, not a folder"
    assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.slow
@pytest.mark.parametrize("cut", ["half", "tiny", "header only", "corrupt"])
def test_a_truncated_or_broken_gz_is_an_unusable_input_exit_2_and_no_folder(run_cli, tmp_path,
                                                                            cut):
    """README: an input that cannot be used at all stops the run before it starts: exit 2,
    one line naming the file; nothing left behind. A .gz cut anywhere, or corrupt, is one."""
    good = gzip.compress(("\n".join([PUZZLE] * 5000) + "\n").encode())
    data = {"half": good[: len(good) // 2], "tiny": good[:30], "header only": good[:10],
            "corrupt": good[:40] + bytes(b ^ 0x5A for b in good[40:80]) + good[80:]}[cut]
    (tmp_path / "cut.txt.gz").write_bytes(data)
    for given, stdin in (("cut.txt.gz", None), ("-", data)):  # a file, a stream
        res = run_cli("run", "-i", given, "-o", "out", "--workers", "1", input=stdin)
        assert res.returncode == 2, res.stderr
        assert res.stderr_lines == [res.stderr_lines[0]] and "Traceback" not in res.stderr
        assert res.stderr.startswith("pipeline: error: ") and ": cannot be decompressed (" \
            in res.stderr and (stdin is not None or given in res.stderr)
        assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------
# On record: every exit other than 0 says why on stderr and in the run's log, --quiet too


@pytest.mark.slow
@pytest.mark.parametrize("how, code", [("fail-on", 1), ("SIGINT", 130), ("SIGTERM", 143),
                                       ("input edited", 3), ("SIGINT while planning", 130)])
def test_every_non_zero_exit_says_why_on_stderr_and_in_the_run_log(tmp_path, big, how, code):
    if how == "fail-on":  # --json and -q (BIG) both: neither silences a failure
        got, _, err = run(["run", "-i", big, "-o", "out", *BIG, "--fail-on", "solved"],
                          tmp_path)
    else:
        point = "before-stats" if how in ("SIGINT", "SIGTERM") else "after-plan"
        proc, hooks = start_big_at(point, tmp_path, big)
        try:
            wait_file(hooks / f"{point}.reached", proc)
            if how == "input edited":
                data = big.read_bytes()
                big.write_bytes(data[:100] + data[100:181].replace(b".", b"1", 1) + data[181:])
                (hooks / f"{point}.go").touch()
            else:
                proc.send_signal(getattr(signal, how.split()[0]))
            got, _, err = finish(proc)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert got == code, err
    line = one_line(err)
    records = [json.loads(ln) for ln in
               (tmp_path / "out" / "logs" / "run.jsonl").read_text().splitlines()]
    last = records[-1]
    assert last["level"] == "ERROR" and line.endswith(last["message"]), (line, last)
    assert line in (f"pipeline: error: {last['message']}", f"pipeline: {last['message']}")


def test_a_reader_that_goes_away_is_141_not_a_status(tmp_path):
    """`pipeline solve - | head -1`: the closed pipe ended it with 1, which `solve` means
    as "some puzzle has no solution"; it is 141, as SIGPIPE ends a process, and silent."""
    import subprocess

    from conftest import pipeline_command

    (tmp_path / "in.txt").write_text("\n".join([PUZZLE] * 20_000) + "\n")
    with open(tmp_path / "in.txt", "rb") as given:  # (a file: no pipe of ours to fill)
        proc = subprocess.Popen([*pipeline_command(), "solve", "-", "--format", "line"],
                                stdin=given, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=tmp_path)
    assert len(proc.stdout.readline()) == 82
    proc.stdout.close()
    assert proc.wait(timeout=120) == 141
    assert proc.stderr.read() == b""


def test_generate_to_a_reader_that_goes_away_is_141(tmp_path):
    """Found by a new user: `generate -o - | head` exited 0 and said it wrote every
    puzzle: the buffered write to the closed pipe returned short without a word."""
    import subprocess

    from conftest import pipeline_command

    proc = subprocess.Popen([*pipeline_command(), "generate", "-n", "3000", "--seed", "1",
                             "-o", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tmp_path)
    assert proc.stdout.read(100)
    proc.stdout.close()
    assert proc.wait(timeout=240) == 141
    assert b"wrote" not in proc.stderr.read()
