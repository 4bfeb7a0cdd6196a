"""`pipeline report`: on real run folders made by `pipeline run` (finished, unfinished,
empty), the HTML is self-contained, holds every chart and escapes what it shows."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import invoke

CHARTS = ["chart-status", "chart-guesses", "chart-solve-time", "chart-clues-guesses",
          "chart-grades", "chart-throughput", "chart-sources"]
SECTIONS = ["overview", "status", "effort", "solve-time", "clues-guesses", "grades",
            "throughput", "sources"]


def pipeline_run(inputs: list[Path], out: Path, *extra: str) -> None:
    args = ["run", "--output", str(out), "--workers", "1", "--quiet", *extra]
    for i in inputs:
        args += ["--input", str(i)]
    done = invoke(args)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    """A run over a generated file and a file of odd rows with an HTML-hostile name."""
    base = tmp_path_factory.mktemp("report")
    gen = base / "gen.csv"
    assert invoke(["generate", "-n", "600", "--seed", "3", "-o", str(gen),
                               "-q"]).returncode == 0
    odd = base / "odd<b>&'x.txt"
    odd.write_text("\n".join([
        "55" + "." * 79,  # invalid
        "1234",  # malformed
        "." * 81,  # multiple
        "123456789" + "." * 72,
    ]) + "\n")
    out = base / "run"
    pipeline_run([gen, odd], out, "--chunk-size", "100")
    return out


def check_self_contained(text: str) -> None:
    assert "http://" not in text and "https://" not in text and 'src="//' not in text
    assert "<script" not in text.lower()
    assert "url(" not in text and "@import" not in text and "<link" not in text


def test_report_on_a_finished_run(run_folder):
    result = invoke(["report", str(run_folder)])
    assert result.returncode == 0, result.stderr
    assert "solved" in result.stdout and "UNFINISHED" not in result.stdout
    text = (run_folder / "report.html").read_text()
    check_self_contained(text)
    for cid in CHARTS:
        assert re.search(rf'<svg id="{cid}"[^>]*>.*?<(rect|polyline)', text, re.S), cid
    for sid in SECTIONS:
        assert f'<section id="{sid}"' in text
    assert 'id="unfinished"' not in text
    # The odd file's name is escaped wherever it appears, never raw.
    assert "odd<b>" not in text
    assert "odd&lt;b&gt;&amp;&#x27;x.txt" in text
    # Every status of the run shows up in the status chart's tooltips.
    for status in ("solved", "multiple", "invalid", "malformed"):
        assert re.search(rf"<title>{status}: [1-9]", text), status
    parts = len(list((run_folder / "results").glob("part-*.parquet")))
    assert parts > 2 and f"{parts} parts" in text  # throughput: one dot per part


def test_report_on_an_unfinished_run_and_html_option(run_folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(run_folder, copy)
    (copy / "_SUCCESS").unlink()
    for p in sorted((copy / "results").glob("part-*.parquet"))[3:]:
        p.unlink()
    target = tmp_path / "elsewhere.html"
    result = invoke(["report", str(copy), "--html", str(target)])
    assert result.returncode == 0
    assert "UNFINISHED" in result.stdout
    text = target.read_text()
    check_self_contained(text)
    assert 'id="unfinished"' in text
    assert "300" in result.stdout  # three parts of 100 rows


def test_report_on_a_run_with_no_rows(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("id,puzzle,solution\n")
    out = tmp_path / "run"
    pipeline_run([empty], out, "--no-timings")
    result = invoke(["report", str(out)])
    assert result.returncode == 0, result.stderr
    text = (out / "report.html").read_text()
    check_self_contained(text)
    for cid in CHARTS:
        assert f'<svg id="{cid}"' in text


def test_report_without_timings_says_so(tmp_path):
    gen = tmp_path / "g.csv"
    assert invoke(["generate", "-n", "50", "--seed", "1", "-o", str(gen),
                               "-q"]).returncode == 0
    out = tmp_path / "run"
    pipeline_run([gen], out, "--no-timings")
    assert invoke(["report", str(out), "-q"]).returncode == 0
    text = (out / "report.html").read_text()
    assert "no solve times in this run" in text
    assert '<svg id="chart-clues-guesses"' in text


def test_not_a_run_folder_exits_2(tmp_path):
    for target in (tmp_path, tmp_path / "missing"):
        done = invoke(["report", str(target)])
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1
        assert "not a run folder" in done.stderr or "no such folder" in done.stderr
    assert not (tmp_path / "report.html").exists()
