"""`pipeline report`: on real run folders made by `pipeline run` (finished, unfinished,
empty), the HTML is self-contained, holds every chart and escapes what it shows."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import REPO, invoke

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
    # Solve times are the stats' own figures, not a second estimate of them.
    stats = pl.read_parquet(run_folder / "stats.parquet").filter(pl.col("scope") == "run")
    p50, p99 = stats["solve_us_p50"][0], stats["solve_us_p99"][0]
    assert f"p50 {p50:.1f} µs, p99 {p99:.1f} µs" in " ".join(result.stdout.split())


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
    # No stats yet: the rows' lower quantiles, as the stats take them.
    us = np.sort(pl.read_parquet(copy / "results" / "*.parquet")["solve_us"].drop_nulls()
                 .to_numpy())
    p50, p99 = us[math.ceil(0.5 * len(us)) - 1], us[math.ceil(0.99 * len(us)) - 1]
    assert f"p50 {p50:.1f} µs, p99 {p99:.1f} µs" in " ".join(result.stdout.split())


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


def _figures(out: Path) -> tuple[dict, list[str]]:
    """The run's stats row, and every rows/s the report shows (overview, throughput card,
    terminal), as printed."""
    import polars as pl

    stats = pl.read_parquet(out / "stats.parquet").filter(pl.col("scope") == "run").row(
        0, named=True)
    res = invoke(["report", str(out)])
    assert res.returncode == 0, res.stderr
    html = (out / "report.html").read_text()
    overview = re.search(r'<div class="kpi"><b>([\d,]+)</b><span>rows/s', html).group(1)
    card = re.search(r'<section id="throughput".*?Overall: .*?\(([\d,]+) rows/s\)', html,
                     re.S).group(1)
    terminal = re.search(r"\(([\d,]+) rows/s\)", res.stdout).group(1)
    return stats, [overview, card, terminal, res.stdout, html]


def test_one_rows_per_second_for_a_run_and_a_resumed_run(tmp_path):
    """rows/s is the rows an invocation solved per second of it, one figure from the stats
    everywhere; a resumed run's rows reused are said and not counted."""
    from conftest import SAMPLE_CSV

    out = tmp_path / "run"
    pipeline_run([SAMPLE_CSV], out, "--chunk-size", "500")
    stats, (overview, card, terminal, said, _) = _figures(out)
    assert overview == card == terminal == f"{stats['rows_per_second']:,.0f}"
    assert "reused" not in said
    # the rows gone through, whatever their status ("N rows solved" read as a status count)
    assert f"{stats['rows']:,} rows in " in said and " rows solved" not in said
    parts = sorted((out / "results").glob("part-*.parquet"))
    parts[1].unlink()
    (out / "_SUCCESS").unlink()
    again = invoke(["run", "-i", str(SAMPLE_CSV), "-o", str(out), "--workers", "1",
                    "--chunk-size", "500"])  # not a terminal: the summary line
    assert again.returncode == 0, again.stderr
    stats, (overview, card, terminal, said, html) = _figures(out)
    reused = stats["resumed_rows"]
    assert 0 < reused < stats["rows"]
    assert stats["rows_per_second"] == pytest.approx(
        (stats["rows"] - reused) / stats["wall_seconds"])
    assert overview == card == terminal == f"{stats['rows_per_second']:,.0f}"
    for text in (said, html, again.stderr):
        assert f"{reused:,} rows reused from before" in text or \
            f"{reused:,} reused from before" in text, text
    assert f"{stats['rows'] - reused:,} solved in" in again.stderr


@pytest.mark.parametrize("bins", [(0, 24), (-4, 28), (4, 12), (8, 9), (0, 40)])
def test_solve_time_x_labels_do_not_overlap(bins):
    """The labels' text and positions: each where its bar is, in order, none over the next
    (a label's width bounded by 0.6 em a digit or dot, 0.85 em a letter, at 11 px), none
    outside the chart."""
    from pipeline.tools import charts, report

    lo, hi = bins
    labels = [report.time_bin_label(b) for b in range(lo, hi + 1)]
    svg = charts.bar_chart("chart-solve-time", labels, [5.0] * len(labels), "µs")
    bars = [float(x) + float(w) / 2 for x, w in re.findall(
        r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg)]
    axis_y = max(float(y) for y in re.findall(r'<text x="[\d.]+" y="([\d.]+)" '
                                               r'text-anchor="middle" class="tick">', svg))
    ticks = [(float(x), t) for x, t in re.findall(
        rf'<text x="([\d.]+)" y="{axis_y:g}" text-anchor="middle" class="tick">([^<]*)</text>',
        svg)]
    assert len(ticks) >= min(len(labels), 5)
    shown = [labels.index(t) for _, t in ticks]
    assert shown == sorted(shown) and shown[0] == 0
    for (x, _), i in zip(ticks, shown, strict=True):
        assert x == pytest.approx(bars[i], abs=0.2)  # both rounded to 0.1

    def width(text: str) -> float:
        return 11 * sum(0.85 if c.isalpha() else 0.6 for c in text)

    for (x1, t1), (x2, t2) in zip(ticks, ticks[1:], strict=False):
        assert x2 - x1 >= (width(t1) + width(t2)) / 2, (t1, t2)
    for x, t in ticks:
        assert 0 <= x - width(t) / 2 and x + width(t) / 2 <= charts.W


def test_html_to_standard_output_is_the_report_alone(tmp_path):
    """`--html -` writes the HTML to standard output (it wrote a file named '-')."""
    (tmp_path / "p.txt").write_text("\n".join(
        (REPO / "data" / "sample.csv").read_text().splitlines()[1:30]) + "\n")
    assert invoke(["run", "-i", str(tmp_path / "p.txt"), "-o", str(tmp_path / "run"),
                   "-q"]).returncode == 0
    res = invoke(["report", str(tmp_path / "run"), "--html", "-"])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("<!DOCTYPE html>") and res.stdout.endswith("</html>\n")
    assert not (tmp_path / "-").exists() and not (tmp_path / "run" / "report.html").exists()


def test_ser_charts_of_a_rated_run_and_of_one_with_nothing_rated(tmp_path):
    """Found by a new user: the SER heat map's hover text said "clues", an empty chart's
    message sat below its frame, and a run with nothing rated said nothing about SER."""
    gen = tmp_path / "g.csv"
    assert invoke(["generate", "-n", "40", "--seed", "2", "-o", str(gen), "-q"]).returncode == 0
    pipeline_run([gen], tmp_path / "rated", "--rate")
    assert invoke(["report", str(tmp_path / "rated"), "-q"]).returncode == 0
    text = (tmp_path / "rated" / "report.html").read_text()
    heat = re.search(r'<svg id="chart-ser-guesses".*?</svg>', text, re.S).group(0)
    tips = re.findall(r"<title>([^<]*)</title>", heat)
    assert tips and all(re.match(r"SER \d+-\d+, ", t) for t in tips), tips
    pipeline_run([gen], tmp_path / "none", "--rate", "--rate-budget", "1")
    res = invoke(["report", str(tmp_path / "none")])
    assert res.returncode == 0, res.stderr
    assert "SER: no puzzle rated; 40 solved puzzles not rated (see rate_note)" in res.stdout
    text = (tmp_path / "none" / "report.html").read_text()
    assert re.search(r'<svg id="chart-ser-guesses"[^>]*>.*?no rated puzzles to show', text)
    empties = re.findall(r'viewBox="0 0 \d+ (\d+)"[^>]*><text x="[\d.]+" y="([\d.]+)" '
                         r'class="empty"', text)
    assert empties and all(float(y) < float(h) for h, y in empties)  # inside its frame
