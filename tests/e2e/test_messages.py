"""What a failure says: one line, the right exit code, the path named, no secret, nothing
the terminal would obey; and what a tool writes for spreadsheets.

(Attacks on the messages of the third round; each test failed before its fix.)
"""

from __future__ import annotations

import gzip
import http.server
import json
import os
import subprocess
import threading

import polars as pl
import pytest
from conftest import PUZZLE, SAMPLE_CSV

from pipeline.io.outputs import defuse
from pipeline.io.terminal import visible

RUN = ["--workers", "1", "--json", "-q"]


def test_credentials_in_an_object_store_url_are_a_usage_error_never_printed(run_cli, tmp_path):
    res = run_cli("run", "-i", "s3://AKIAKEY:VERYSECRET@bucket/x.csv", "-o", str(tmp_path / "o"))
    assert res.returncode == 2
    assert len(res.stderr_lines) == 1 and "credentials in the URL" in res.stderr
    assert "VERYSECRET" not in res.stderr and "AKIAKEY" not in res.stderr
    assert not (tmp_path / "o").exists()


@pytest.fixture
def www(tmp_path):
    """A plain http server on loopback over a folder: (folder, its base URL)."""
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: Quiet(*a, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_missing_http_input_is_a_missing_input(run_cli, tmp_path, www):
    root, base = www
    res = run_cli("run", "-i", f"{base}/nothing-here.csv", "-o", str(tmp_path / "o"))
    assert res.returncode == 2, res.stderr
    assert "no such file" in res.stderr and len(res.stderr_lines) == 1
    assert not (tmp_path / "o").exists()  # a missing input leaves no folder behind


def test_parquet_and_gzip_over_http_are_read_as_files_are(run_cli, tmp_path, www):
    """Over http an input is copied before it is read: a Parquet one is still known by its
    magic bytes, a gzip one is still decompressed (both were 'not a text file')."""
    root, base = www
    (root / "p.txt").write_text(f"{PUZZLE}\n{PUZZLE}\n")
    (root / "p.txt.gz").write_bytes(gzip.compress((root / "p.txt").read_bytes()))
    pl.DataFrame({"puzzle": [PUZZLE] * 3}).write_parquet(root / "p.parquet")
    for name, rows in (("p.txt.gz", 2), ("p.parquet", 3)):
        res = run_cli("run", "-i", f"{base}/{name}", "-o", name, "--json")
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["counts"]["solved"] == rows


@pytest.mark.parametrize("extra", [[], ["--incremental"], ["--limit", "5"]])
def test_a_missing_input_leaves_no_output_folder(run_cli, tmp_path, extra):
    (tmp_path / "a.csv").write_text(f"puzzle\n{PUZZLE}\n")
    cases = [["missing.csv"], ["a.csv", "missing.csv"]]
    if "--incremental" in extra:  # a.csv would be solved before the missing file is met
        cases = cases[:1]
    for given in cases:
        args = [w for g in given for w in ("-i", g)]
        res = run_cli("run", *args, "-o", "out", *extra)
        assert res.returncode == 2, res.stderr
        assert res.stderr_lines == ["pipeline: error: missing.csv: no such file"]
        assert not (tmp_path / "out").exists()


def test_https_to_a_plain_http_server_says_why(run_cli, tmp_path, www):
    """Every command that takes a URL: one line that names the mismatch, never 'no such
    file/folder' or FileNotFoundError; an http(s) output is refused as read-only."""
    root, base = www
    (root / "a.csv").write_text(f"puzzle\n{PUZZLE}\n")
    tls = base.replace("http://", "https://")
    file, run = f"{tls}/a.csv", f"{tls}/run"
    for url, args in ((file, ["run", "-i", file, "-o", str(tmp_path / "o")]),
                      (file, ["validate", file]), (run, ["report", run]), (run, ["show", run]),
                      (run, ["dedup", run, "-o", str(tmp_path / "d.csv")])):
        res = run_cli(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr_lines == [f"pipeline: error: {url}: cannot be read (the server does "
                                    "not speak TLS: is it an http:// URL?)"], args
    assert not (tmp_path / "o").exists()
    res = run_cli("run", "-i", str(root / "a.csv"), "-o", f"{tls}/out")
    assert res.returncode == 2 and len(res.stderr_lines) == 1
    assert "an http(s) URL is read-only" in res.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small file system needs root")
def test_a_full_disk_names_the_file_it_could_not_write(run_cli, tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        data = (f"{PUZZLE}\n" * 20_000).encode()  # 1.6 MB through standard input: spilled
        res = run_cli("run", "-i", "-", "-o", str(mount / "out"), input=data)
        assert res.returncode == 3, res.stderr
        assert len(res.stderr_lines) == 1
        assert f"cannot write {mount}/out/.spill/input-000: no space left" in res.stderr
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_corrupt_manifest_is_called_so(run_cli, tmp_path):
    out = tmp_path / "out"
    assert run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(out), *RUN).returncode == 0
    (out / "manifest.json").write_text("{ not json")
    res = run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(out), *RUN)
    assert res.returncode == 2
    assert "manifest.json that cannot be read" in res.stderr and "other files" not in res.stderr


@pytest.mark.slow
def test_an_output_bucket_is_never_created(s3, run_cli, tmp_path):
    fs, bucket = s3
    res = run_cli("run", "-i", str(SAMPLE_CSV), "-o", f"s3://{bucket}-none/out", *RUN)
    assert res.returncode == 2 and "bucket does not exist" in res.stderr, res.stderr
    assert not fs.exists(f"{bucket}-none")


def test_cells_a_spreadsheet_would_run_are_defused_in_csv_outputs(run_cli, tmp_path):
    """OWASP's advice for CSV injection: a leading apostrophe on a cell that starts with
    = + - @ (or a tab, a carriage return), values and column names alike."""
    evil = "=cmd|' -C calc'!A0.csv"
    rows = [{"puzzle": PUZZLE, "note": "@SUM(1+1)*cmd|' /C calc'!A0"},
            {"puzzle": "1" + PUZZLE[1:], "note": "-2+3"}]
    pl.DataFrame(rows).write_csv(tmp_path / evil)
    out = tmp_path / "out"
    made = run_cli("run", "-i", evil, "-o", str(out), "--canonical", *RUN, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    csv = tmp_path / "d.csv"
    assert run_cli("dedup", str(out), "-o", str(csv), "-q").returncode == 0
    split = tmp_path / "s"
    assert run_cli("split", str(out), "--fractions", "0.5,0.5", "--format", "csv",
                   "--stratify", "none", "-o", str(split), "-q").returncode == 0
    texts = [csv.read_text()] + [p.read_text() for p in split.glob("*.csv")]
    for text in texts:
        for cell in (c for line in text.splitlines() for c in line.split(",")):
            assert not cell.strip('"').startswith(("=", "+", "-", "@")), cell
    assert "'=cmd|" in texts[0]
    assert defuse("=1+1") == "'=1+1" and defuse("12") == "12"


def test_control_characters_are_shown_never_obeyed(run_cli, tmp_path):
    r"""`show`'s table, a report, a summary line and an error: an input's ESC sequences
    (a window title, a clear screen, a link) are written as \x1b, never sent raw."""
    title, clear = "\x1b]0;pwned\x07", "\x1b[2J"
    data = tmp_path / f"in{clear}.txt"
    data.write_text(f"puzzle,note\n{PUZZLE[:-1]},{title}\n")
    out = tmp_path / f"out{clear}"
    res = run_cli("run", "-i", str(data), "-o", str(out), "--workers", "1")
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stderr and "\\x1b[2J" in res.stderr
    shown = run_cli("show", str(out))
    assert shown.returncode == 0 and "\x1b" not in shown.stdout
    assert "\\x1b" in shown.stdout or "\\x1b" in shown.stdout.replace("\n", "")
    report = run_cli("report", str(out), "--no-html")
    assert "\x1b" not in report.stdout
    missing = run_cli("run", "-i", str(tmp_path / f"no{title}.txt"), "-o", str(out))
    assert missing.returncode == 2 and "\x1b" not in missing.stderr and "\x07" not in missing.stderr
    assert visible("a\tb\x1b[0m\x9b") == "a\tb\\x1b[0m\\x9b"
    assert json.dumps  # (json output escapes control characters itself)
