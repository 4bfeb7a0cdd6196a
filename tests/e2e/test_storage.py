"""Runs, and the commands over them, on other storage (README: URLs): an S3-protocol server
on loopback (moto's, as s3fs's own tests use) holding inputs and outputs, an http server,
file:// URLs, and secrets kept out of everything a run writes down.
"""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import polars as pl
import pytest
from conftest import PUZZLE, SAMPLE_CSV, comparable, moto_server, part_codecs, read_results

from pipeline.io import classes
from pipeline.tools import dedup, split

RUN = ["--workers", "2", "--chunk-size", "300", "--json", "-q"]


def test_file_url_input_and_output(run_cli, tmp_path):
    out = tmp_path / "out"
    res = run_cli("run", "-i", f"file://{SAMPLE_CSV}", "-o", f"file://{out}", *RUN)
    assert res.returncode == 0, res.stderr
    frame = read_results(out)
    assert frame.height == 3000 and (frame["status"] == "solved").all()


# ---------------------------------------------------------------------------------------
# S3


def _s3_results(fs, prefix: str) -> pl.DataFrame:
    files = sorted(fs.glob(f"{prefix}/results/part-*.parquet"))
    frames = [pl.read_parquet(fs.open(f, "rb").read()) for f in files]
    return pl.concat(frames).sort("source", "row")


@pytest.mark.slow
def test_s3_input_and_output(s3, run_cli, tmp_path):
    fs, bucket = s3
    fs.put_file(str(SAMPLE_CSV), f"{bucket}/in/sample.csv")
    url_in, url_out = f"s3://{bucket}/in/sample.csv", f"s3://{bucket}/runs/one"
    res = run_cli("run", "-i", url_in, "-o", url_out, *RUN)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["rows"] == 3000 and summary["output"] == url_out
    names = {p.rsplit("/", 1)[-1] for p in fs.ls(f"{bucket}/runs/one")}
    assert {"_SUCCESS", "manifest.json", "stats.parquet", "results", "logs"} <= names
    remote = _s3_results(fs, f"{bucket}/runs/one")
    assert remote["source"].unique().to_list() == [url_in]
    with fs.open(f"{bucket}/runs/one/results/part-00000.parquet", "rb") as f:
        codecs = part_codecs(f)
    assert codecs["puzzle"] == codecs["solution"] == "ZSTD"  # at a URL: auto compresses
    local_out = tmp_path / "local"
    assert run_cli("run", "-i", str(SAMPLE_CSV), "-o", str(local_out), *RUN).returncode == 0
    local = comparable(read_results(local_out)).drop("source")
    assert comparable(remote).drop("source").equals(local)
    log = fs.cat_file(f"{bucket}/runs/one/logs/run.jsonl").decode()
    assert '"finished: 3000 rows' in log

    # The same command again: already done. A resume redoes only the missing parts.
    again = run_cli("run", "-i", url_in, "-o", url_out, *RUN)
    assert again.returncode == 0 and json.loads(again.stdout)["already_done"]
    parts = sorted(fs.glob(f"{bucket}/runs/one/results/part-*.parquet"))
    assert len(parts) >= 3
    fs.rm_file(f"{bucket}/runs/one/_SUCCESS")
    fs.rm_file(parts[1])
    fs.pipe_file(parts[2], b"")  # a part left torn: read as absent, redone
    resumed = run_cli("run", "-i", url_in, "-o", url_out, *RUN)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert 0 < summary["resumed_rows"] < 3000
    assert comparable(_s3_results(fs, f"{bucket}/runs/one")).drop("source").equals(local)


@pytest.mark.slow
def test_object_keys_with_hash_or_question_mark_keep_their_names(s3, run_cli, tmp_path):
    """Found by a new user: `s3://b/set#1.txt` and `s3://b/set#2.txt` were both named
    `s3://b/set` in `source` (a URL's fragment was cut as if a secret)."""
    fs, bucket = s3
    urls = [f"s3://{bucket}/h/set#1.txt", f"s3://{bucket}/h/set?v=2.txt"]
    for url in urls:
        fs.pipe_file(url.removeprefix("s3://"), (PUZZLE + "\n").encode())
    out = f"s3://{bucket}/runs/keys#1"
    res = run_cli("run", "-i", urls[0], "-i", urls[1], "-o", out, *RUN)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["output"] == out
    frame = _s3_results(fs, f"{bucket}/runs/keys#1")
    assert frame["source"].to_list() == urls and (frame["status"] == "solved").all()


@pytest.mark.slow
def test_a_store_that_refuses_our_credentials_is_said_so(run_process, tmp_path):
    """Found by a new user: with credentials the store refuses (403), `run -o` said the
    bucket does not exist, and show, report, dedup, ... said "internal error:
    PermissionError"."""
    import boto3

    # moto checks credentials after its first two calls (ours: the bucket and a run)
    with moto_server(tmp_path, INITIAL_NO_AUTH_ACTION_COUNT="2") as env:
        client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"],
                              aws_access_key_id="x", aws_secret_access_key="y",
                              region_name="us-east-1")
        client.create_bucket(Bucket="authb")
        client.put_object(Bucket="authb", Key="run/manifest.json", Body=b"{}")
        env = {**env, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}
        # (real processes: this one's s3fs caches a filesystem for the other server)
        res = run_process("run", "-i", str(SAMPLE_CSV), "-o", "s3://authb/o", "-q", env=env)
        assert res.returncode == 2, res.stderr
        assert "access refused" in res.stderr and "does not exist" not in res.stderr
        for tool in (["show"], ["report", "--no-html"], ["dedup", "-o", "d.parquet"]):
            res = run_process(*tool[:1], "s3://authb/run", *tool[1:], env=env)
            assert res.returncode == 2, (tool, res.stderr)
            assert "cannot be read" in res.stderr and "internal error" not in res.stderr


@pytest.mark.slow
def test_show_report_dedup_read_a_run_at_a_url(s3, run_cli, tmp_path):
    """The commands over finished runs read one through the run folder's own module, so
    they take the URLs `run` writes to: show, report (its page written back to the
    folder), and the data-set tools."""
    fs, bucket = s3
    data = tmp_path / "in.txt"
    bad = "11" + PUZZLE[2:]
    data.write_text("\n".join([PUZZLE] * 5 + [bad, "x" * 81]) + "\n")
    url = f"s3://{bucket}/runs/two"
    res = run_cli("run", "-i", str(data), "-o", url, "--canonical", *RUN)
    assert res.returncode == 0, res.stderr
    shown = run_cli("show", url, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(r["row"], r["status"]) for r in rows] == [(5, "invalid"), (6, "malformed")]
    report = run_cli("report", url)
    assert report.returncode == 0, report.stderr
    page = fs.cat_file(f"{bucket}/runs/two/report.html").decode()
    assert "<svg" in page and "7" in report.stdout
    out = tmp_path / "classes.csv"
    dedup = run_cli("dedup", url, "-o", str(out), "-q")
    assert dedup.returncode == 0, dedup.stderr
    assert pl.read_csv(out, infer_schema=False).height == 2  # the puzzle, the invalid one


@pytest.mark.slow
def test_s3_glob_and_missing_input(s3, run_cli):
    fs, bucket = s3
    for name in ("a.txt", "b.txt"):
        fs.pipe_file(f"{bucket}/in/{name}", (PUZZLE + "\n").encode())
    res = run_cli("run", "-i", f"s3://{bucket}/in/*.txt", "-o", f"s3://{bucket}/out", *RUN)
    assert res.returncode == 0, res.stderr
    sources = _s3_results(fs, f"{bucket}/out")["source"].to_list()
    assert sources == [f"s3://{bucket}/in/a.txt", f"s3://{bucket}/in/b.txt"]
    res = run_cli("run", "-i", f"s3://{bucket}/in/nope.csv", "-o", f"s3://{bucket}/o2", *RUN)
    assert res.returncode == 2 and res.stderr_lines == [
        f"pipeline: error: s3://{bucket}/in/nope.csv: no such file"]


@pytest.mark.slow
def test_run_folders_and_outputs_on_s3(planted, s3, tmp_path):
    fs, bucket = s3
    fs.put(str(planted["run"]), f"{bucket}/run", recursive=True)
    url = f"s3://{bucket}/run"
    dedup.dedup(url, f"s3://{bucket}/out/d.parquet")
    local = tmp_path / "d.parquet"
    dedup.dedup(planted["run"], str(local))
    with fs.open(f"{bucket}/out/d.parquet", "rb") as f:
        assert pl.read_parquet(f).equals(pl.read_parquet(local))
    assert classes.distinct_classes(url) == classes.distinct_classes(planted["run"])
    split.split(url, "0.5,0.5", None, 2, f"s3://{bucket}/out/s")
    split.split(planted["run"], "0.5,0.5", None, 2, str(tmp_path / "s"))
    with fs.open(f"{bucket}/out/s/train.parquet", "rb") as f:
        assert pl.read_parquet(f).equals(pl.read_parquet(tmp_path / "s" / "train.parquet"))
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.ls(f"{bucket}/out/s")) == [
        "split.json", "test.parquet", "train.parquet"]


# ---------------------------------------------------------------------------------------
# http(s) inputs, and secrets in URLs


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def http_root(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: _Quiet(*a, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, server.server_address[1]
    server.shutdown()


def test_http_input_with_secrets_in_the_url(http_root, run_cli, tmp_path):
    root, port = http_root
    (root / "sample.csv").write_bytes(SAMPLE_CSV.read_bytes())
    url = f"http://reader:s3cr3t-pw@127.0.0.1:{port}/sample.csv?X-Amz-Signature=SIGSECRET"
    out = tmp_path / "out"
    res = run_cli("run", "-i", url, "-o", str(out), *RUN[:-1], "--log-level", "DEBUG")
    assert res.returncode == 0, res.stderr
    frame = read_results(out)
    assert frame.height == 3000
    shown = f"http://127.0.0.1:{port}/sample.csv"
    assert frame["source"].unique().to_list() == [shown]
    for path in [*Path(out).rglob("*"), None]:
        text = res.stdout + res.stderr if path is None else (
            path.read_bytes().decode("utf-8", "replace") if path.is_file() else "")
        if path is not None and path.suffix == ".parquet":
            text = "".join(str(v) for v in pl.read_parquet(path).to_dicts())
        assert "s3cr3t" not in text and "SIGSECRET" not in text and "reader:" not in text, path
    assert not (out / ".spill").exists()  # the read-once copy is gone with the run
