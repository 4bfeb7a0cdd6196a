"""`pipeline report DIR`: a finished (or unfinished) run, summed up for people.

Two outputs from the same numbers:

* a rich table on the terminal: rows per status, grades, per input file, timings;
* DIR/report.html, one self-contained file: inline CSS and inline SVG charts drawn here
  (no plotting library, no JavaScript, no URL of any kind), so it opens anywhere, offline,
  and can be mailed around. Hovering a bar shows its exact number (SVG <title>).

Everything is aggregated by polars over the result parts (only the needed columns), so a
run of millions of rows makes a report of a few dozen kilobytes. All text that comes from
the data (file names, reasons, statuses) is HTML-escaped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.io import runfolder, timestamps
from pipeline.io.outputs import check_output
from pipeline.io.storage import Location
from pipeline.io.terminal import visible
from pipeline.sudoku.grade import GRADES, ser_figures
from pipeline.sudoku.status import STATUS_NAMES
from pipeline.tools.charts import (
    bar_chart,
    empty,
    esc,
    hbars,
    heat_map,
    line_chart,
    short,
    stacked_hbars,
)

REPORT = "report.html"
STATUS_COLORS = {
    "solved": "#2e8b57", "multiple": "#d4a017", "unsolvable": "#e07b39",
    "invalid": "#c0392b", "malformed": "#8e44ad", "error": "#5d0f0f",
}
GRADE_COLORS = {"easy": "#9ecae1", "medium": "#6baed6", "hard": "#3182bd",
                "expert": "#08519c", "extreme": "#08306b", "none": "#bbbbbb"}


# ---------------------------------------------------------------------------------------
# Reading a run folder


@dataclass
class Part:
    name: str
    rows: int
    mtime: float


@dataclass
class RunData:
    """Everything the report shows, already aggregated."""

    folder: str  # as shown (a path, or a URL without its secrets)
    finished: bool
    manifest: dict
    stats: dict  # the scope='run' row of stats.parquet, or {}
    parts: list[Part]
    rows: int = 0
    status: dict[str, int] = field(default_factory=dict)
    grades: dict[str, int] = field(default_factory=dict)
    guess_bins: list[tuple[int, int]] = field(default_factory=list)  # (bin, count)
    time_bins: list[tuple[int, int]] = field(default_factory=list)  # (bin, count)
    timed_rows: int = 0
    clue_guess: list[tuple[int, int, int]] = field(default_factory=list)  # (clues, bin, n)
    sources: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    reasons: list[tuple[str, int]] = field(default_factory=list)  # top reasons
    expected: dict[str, int] = field(default_factory=dict)  # match/mismatch/absent
    guesses_max: int | None = None
    solve_us: dict[str, float] = field(default_factory=dict)
    # With --rate: rows per SER half point (bin k: k/2 .. k/2 + 0.4), rows per whole SER
    # and guess bin, rows per technique that set the rating, and rows without a rating
    ser_bins: list[tuple[int, int]] = field(default_factory=list)
    ser_guess: list[tuple[int, int, int]] = field(default_factory=list)
    techniques: list[tuple[str, int]] = field(default_factory=list)
    unrated: int = 0
    rated_run: bool = False
    ser_figures: dict = field(default_factory=dict)  # grade.ser_figures of the rated rows


TIME_BINS_PER_DECADE = 4


def guess_bin_label(b: int) -> str:
    """Bin 0 is 0 guesses, bin k >= 1 holds 2^(k-1) .. 2^k - 1."""
    if b == 0:
        return "0"
    lo, hi = 1 << (b - 1), (1 << b) - 1
    return str(lo) if lo == hi else f"{lo}–{hi}"


def time_bin_label(b: int) -> str:
    """Bin b holds solve times from 10^(b/4) µs up to the next bin."""
    return short(10 ** (b / TIME_BINS_PER_DECADE))


def load(folder: str | Path) -> RunData:
    """Read and aggregate a run folder (a path or a URL); InputError when it is not one."""
    run = runfolder.open_run(str(folder), need_canonical=False, finished=False, empty=True)
    stats: dict = {}
    # (an unfinished run's stats.parquet, if any, is of a run before: not this one's)
    table = run.stats() if run.finished else None
    if table is not None:
        frame = pl.from_arrow(table).filter(pl.col("scope") == "run")
        if frame.height:
            stats = frame.row(0, named=True)
    try:
        parts = [Part(p.loc.name, p.rows, p.loc.mtime()) for p in run.parts]
    except OSError as exc:
        raise InputError(f"{run.shown}: a result part cannot be read ({exc})") from None
    data = RunData(run.shown, run.finished, run.manifest, stats, parts)
    data.rows = sum(p.rows for p in parts)
    if data.rows:
        _aggregate(data, run)
    return data


def _counts(frame: pl.DataFrame, key: str) -> dict:
    return {k: int(n) for k, n in frame.group_by(key).len().iter_rows()}


_COLUMNS = ("source", "status", "guesses", "grade", "solve_us", "puzzle", "reason",
            "expected_match", "ser", "ser_technique")


def _aggregate(data: RunData, run: runfolder.Run) -> None:
    has = set(run.columns)
    wanted = [c for c in _COLUMNS if c in has]
    scan = pl.concat([pl.from_arrow(b) for p in run.parts for b in
                      runfolder.part_batches(p, wanted)], how="vertical_relaxed").lazy()
    g = pl.col("guesses")
    guess_bin = (pl.when(g <= 0).then(0)
                 .otherwise(g.cast(pl.Float64).log(2).floor().cast(pl.Int64) + 1)
                 .alias("gbin"))
    # Givens of the puzzles the engine searched (the others may not be 81 characters).
    clues = pl.col("puzzle").str.strip_chars().str.count_matches("[1-9]")
    base = scan.select(
        "source", "status",
        (g if "guesses" in has else pl.lit(None, pl.Int64)).alias("guesses"),
        (pl.col("grade") if "grade" in has else pl.lit(None, pl.String)).alias("grade"),
        (pl.col("solve_us") if "solve_us" in has else pl.lit(None, pl.Float64)).alias("us"),
        pl.when(g.is_not_null() if "guesses" in has else pl.lit(False)).then(clues)
        .alias("n_clues"),
        (pl.col("reason") if "reason" in has else pl.lit(None, pl.String)).alias("reason"),
        (pl.col("expected_match") if "expected_match" in has
         else pl.lit(None, pl.Boolean)).alias("expected_match"),
        (pl.col("ser") if "ser" in has else pl.lit(None, pl.Float64)).alias("ser"),
        (pl.col("ser_technique") if "ser" in has else pl.lit(None, pl.String))
        .alias("ser_technique"),
    ).with_columns(guess_bin)
    frame = base.collect()
    data.status = _counts(frame, "status")
    data.grades = _counts(frame.with_columns(pl.col("grade").fill_null("none")), "grade")
    effort = frame.filter(pl.col("guesses").is_not_null())
    data.guess_bins = sorted(effort.group_by("gbin").len().iter_rows())
    data.guesses_max = int(effort["guesses"].max()) if effort.height else None
    timed = frame.filter(pl.col("us").is_not_null() & (pl.col("us") > 0))
    data.timed_rows = timed.height
    if timed.height:
        tbin = (pl.col("us").log(10) * TIME_BINS_PER_DECADE).floor().cast(pl.Int64)
        data.time_bins = sorted(timed.group_by(tbin.alias("tbin")).len().iter_rows())
        quantiles = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
        if data.stats.get("solve_us_max") is not None:  # the stats' own figures
            data.solve_us = {k: data.stats[f"solve_us_{k}"] for k in [*quantiles, "max"]}
        else:  # (an unfinished run) from the rows, by the stats' rule: the lower quantile
            us = timed["us"].to_numpy()
            data.solve_us = {k: float(np.quantile(us, q, method="inverted_cdf"))
                             for k, q in quantiles.items()}
            data.solve_us["max"] = float(us.max())
    both = effort.filter(pl.col("n_clues").is_not_null())
    data.clue_guess = sorted(both.group_by("n_clues", "gbin").len().iter_rows())
    per_source: dict[str, dict[str, int]] = {}
    for src, status, n in frame.group_by("source", "status").len().iter_rows():
        per_source.setdefault(src, {})[status] = int(n)
    order = frame.select(pl.col("source").unique(maintain_order=True))["source"].to_list()
    data.sources = [(src, per_source[src]) for src in order]
    reasons = (frame.filter(pl.col("reason").is_not_null()).group_by("reason").len()
               .sort(["len", "reason"], descending=[True, False]).head(10))
    data.reasons = [(r, int(n)) for r, n in reasons.iter_rows()]
    if "ser" in has:
        data.rated_run = True
        rated = frame.filter(pl.col("ser").is_not_null())
        data.unrated = int((frame["status"] == "solved").sum()) - rated.height
        # from the rows, as the stats make them (an unfinished run has no stats yet)
        tenths = (rated["ser"] * 10).round().cast(pl.Int64).to_numpy()
        data.ser_figures = ser_figures(np.bincount(tenths, minlength=1))
        half = (pl.col("ser") * 2 + 1e-6).floor().cast(pl.Int64)
        data.ser_bins = sorted(rated.group_by(half.alias("b")).len().iter_rows())
        whole = (pl.col("ser") + 1e-6).floor().cast(pl.Int64).alias("x")
        data.ser_guess = sorted(rated.filter(pl.col("guesses").is_not_null())
                                .group_by(whole, "gbin").len().iter_rows())
        data.techniques = [(t, int(n)) for t, n in rated.group_by("ser_technique").len()
                           .sort(["len", "ser_technique"], descending=[True, False])
                           .iter_rows()]
    em = frame["expected_match"]
    data.expected = {"match": int(em.sum() or 0), "mismatch": int((~em).sum() or 0),
                     "absent": int(em.null_count())}


# ---------------------------------------------------------------------------------------
# The HTML page

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
 background:#f6f7f9;color:#222}
main{max-width:980px;margin:0 auto;padding:24px}
h1{font-size:1.5em;margin:0 0 4px} h2{font-size:1.15em;margin:0 0 6px}
section{background:#fff;border:1px solid #e1e4e8;border-radius:8px;padding:16px 20px;
 margin:16px 0}
p.note{color:#555;font-size:.9em;margin:4px 0 10px}
.banner{background:#fff4e5;border:1px solid #f0b36b;padding:10px 14px;border-radius:6px}
.kpis{display:flex;flex-wrap:wrap;gap:12px}
.kpi{flex:1 1 140px;background:#f6f8fa;border-radius:6px;padding:10px 12px}
.kpi b{display:block;font-size:1.35em}
.kpi span{color:#555;font-size:.85em}
table{border-collapse:collapse;font-size:.9em;width:100%}
th,td{text-align:right;padding:4px 8px;border-bottom:1px solid #eee}
th:first-child,td:first-child{text-align:left;word-break:break-all}
svg.chart{max-width:100%;height:auto;font-size:11px}
svg .grid{stroke:#e5e5e5} svg .tick{fill:#555} svg .axis{fill:#333;font-size:12px}
svg .value{fill:#333;font-size:10px} svg .empty{fill:#888;font-size:14px}
code{background:#f0f0f0;padding:1px 4px;border-radius:3px}
"""


def _kpi(value: str, label: str) -> str:
    return f'<div class="kpi"><b>{esc(value)}</b><span>{esc(label)}</span></div>'


def _section(sid: str, title: str, note: str, content: str) -> str:
    return (f'<section id="{esc(sid)}"><h2>{esc(title)}</h2>'
            + (f'<p class="note">{esc(note)}</p>' if note else "") + content + "</section>")


def throughput_points(data: RunData) -> tuple[list[tuple[float, float]], str]:
    """Cumulative rows against seconds since the first part, from part file mtimes."""
    parts = sorted(data.parts, key=lambda p: p.mtime)
    if not parts:
        return [], ""
    start = parts[0].mtime
    started = data.manifest.get("started_at") or data.stats.get("started_at")
    origin = "the first result part"
    if started:
        try:
            t0 = datetime.fromisoformat(started).timestamp()
            if t0 <= start and start - t0 < 24 * 3600:
                start, origin = t0, "the run's start (manifest started_at)"
        except (ValueError, OverflowError):
            pass
    points, total = [], 0
    for p in parts:
        total += p.rows
        points.append((max(p.mtime - start, 0.0), float(total)))
    return points, origin


@dataclass
class Rate:
    """The run's rows/s as the run computed it (stats.parquet): the rows its last invocation
    went through (whatever their status) per second of that invocation; rows reused by a
    resume are not counted."""

    rows_per_second: float
    rows: int  # rows the last invocation went through
    seconds: float
    reused: int


def run_rate(data: RunData) -> Rate | None:
    """The one rows/s of a run, for every place the report shows it (None: unknown)."""
    st = data.stats
    if not st.get("wall_seconds") or st.get("rows_per_second") is None:
        return None
    reused = int(st.get("resumed_rows") or 0)
    return Rate(float(st["rows_per_second"]), int(st["rows"]) - reused,
                float(st["wall_seconds"]), reused)


def rate_text(rate: Rate) -> str:
    """'3,000 rows in 1.34 s (2,234 rows/s)', and the rows reused, if any (the statuses are
    the table's: 'solved' would be read as the count of that status)."""
    return (f"{rate.rows:,} rows in {rate.seconds:.2f} s ({rate.rows_per_second:,.0f} "
            "rows/s)" + (f"; {rate.reused:,} rows reused from before (not counted)"
                         if rate.reused else ""))


def _preemption_note(data: RunData) -> str:
    """What solve_us measures, and how much of this run's engine time was someone else's."""
    wall, cpu = data.stats.get("engine_seconds"), data.stats.get("engine_cpu_seconds")
    text = ("solve_us is elapsed time (the CPU's cycle counter around each puzzle), so it "
            "includes any stretch when the OS ran something else on that core.")
    if wall and cpu is not None:
        share = max(0.0, 1 - cpu / wall)
        text += (f" In this run the engine had the CPU for {100 * (1 - share):.1f}% of its "
                 f"time" + (": the slowest times are likely inflated by that." if share > 0.05
                            else ": the times are undisturbed."))
    return text


def _grade_rows(data: RunData) -> tuple[list[str], list[int]]:
    names = [g for g in GRADES] + (["none"] if data.grades.get("none") else [])
    return names, [data.grades.get(g, 0) for g in names]


def render_html(data: RunData) -> str:
    name = data.manifest.get("run_id") or data.folder.rstrip("/").rsplit("/", 1)[-1]
    out: list[str] = []
    out.append('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
               '<meta name="viewport" content="width=device-width, initial-scale=1">'
               f"<title>{esc(f'pipeline report: {data.folder}')}</title>"
               f"<style>{CSS}</style></head><body><main>")
    out.append(f"<h1>Run report: {esc(data.folder)}</h1>")
    out.append(f'<p class="note">run {esc(name)}; started {esc(data.manifest.get("started_at") or data.stats.get("started_at") or "?")}, '
               f'finished {esc(data.manifest.get("finished_at") or data.stats.get("finished_at") or "—")}; '
               f'report made {esc(timestamps.local())}</p>')
    if not data.finished:
        out.append('<p class="banner" id="unfinished"><b>Unfinished run:</b> there is no '
                   "_SUCCESS marker. These are the rows written so far; run the same "
                   "<code>pipeline run</code> command again to resume.</p>")
    out.append(_overview(data))
    out.append(_section("status", "Rows per status", "How every input row ended.",
                        bar_chart("chart-status", STATUS_NAMES,
                                  [data.status.get(s, 0) for s in STATUS_NAMES], "status",
                                  colors=[STATUS_COLORS[s] for s in STATUS_NAMES])
                        + _reasons_table(data)))
    labels = [guess_bin_label(b) for b, _ in data.guess_bins]
    out.append(_section(
        "effort", "Effort: guesses per puzzle",
        "Guesses (branch points) the engine needed per puzzle it searched, on a log2 scale: "
        "each bar doubles the range of the one before. 0 = solved by propagation alone."
        + (f" Most guesses in one puzzle: {data.guesses_max:,}." if data.guesses_max is not None
           else ""),
        bar_chart("chart-guesses", labels, [n for _, n in data.guess_bins],
                  "guesses per puzzle (log2 bins)", "puzzles")))
    if data.time_bins:
        lo, hi = data.time_bins[0][0], data.time_bins[-1][0]
        counts = dict(data.time_bins)
        bins = list(range(lo, hi + 1))
        us = data.solve_us
        note = (f"Time in the solver kernel per puzzle ({data.timed_rows:,} timed rows), log "
                f"scale, {TIME_BINS_PER_DECADE} bins per power of ten; each bar starts at its "
                f"label. p50 {us['p50']:.1f} µs, p90 {us['p90']:.1f} µs, p99 {us['p99']:.1f} "
                f"µs, max {us['max']:,.0f} µs. " + _preemption_note(data))
        chart = bar_chart("chart-solve-time", [time_bin_label(b) for b in bins],
                          [counts.get(b, 0) for b in bins], "solve time per puzzle (µs, log)",
                          "puzzles")
    else:
        note = "This run has no per-puzzle solve times (solve_us is null: --no-timings)."
        chart = empty("chart-solve-time", "no solve times in this run")
    out.append(_section("solve-time", "Solve time per puzzle", note, chart))
    out.append(_section(
        "clues-guesses", "Clues against guesses",
        "Each cell counts puzzles with that many givens (x) and that effort (y, log2 bins "
        "of guesses); darker = more puzzles (log shading). Rows with a well-formed puzzle "
        "the engine searched.",
        heat_map("chart-clues-guesses", data.clue_guess, "clues (givens in the puzzle)",
                 "guesses", guess_bin_label)))
    gnames, gcounts = _grade_rows(data)
    out.append(_section(
        "grades", "Grades",
        "easy 0 guesses, medium 1–2, hard 3–9, expert 10–49, extreme 50+ (pipeline.sudoku.grade); "
        "'none' is a row that is not solved (no grade).",
        bar_chart("chart-grades", gnames, gcounts, "grade", "puzzles",
                  colors=[GRADE_COLORS[g] for g in gnames])))
    if data.rated_run:
        out.append(_ser_sections(data))
    points, origin = throughput_points(data)
    known = run_rate(data)
    rate = f" Overall: {rate_text(known)}." if known else ""
    out.append(_section(
        "throughput", "Throughput through the run",
        f"Rows written so far, plotted at the moment each result part was written (its "
        f"file's modification time), in seconds since {origin or 'the first part'}; one "
        f"dot per part ({len(points)} parts); the dashed line is start-up until the "
        f"first part. A steady slope is a steady rate; a flat stretch is a pause (or a "
        f"resume)." + rate,
        line_chart("chart-throughput", points, "seconds", "rows written")))
    out.append(_section(
        "sources", "Per input file", "Rows per status for each input, as shares of its rows.",
        stacked_hbars("chart-sources", shown_sources(data)[0],
                      [s for s in STATUS_NAMES if any(c.get(s) for _, c in data.sources)],
                      STATUS_COLORS) + _sources_table(data)))
    out.append("</main></body></html>\n")
    return "".join(out)


def ser_bin_label(b: int) -> str:
    """Half-point bin b holds ratings b/2 .. b/2 + 0.4."""
    return f"{b / 2:.1f}"


def _ser_sections(data: RunData) -> str:
    """With --rate: the SER histogram, SER against guesses, the techniques that set it."""
    lo, hi = (data.ser_bins[0][0], data.ser_bins[-1][0]) if data.ser_bins else (0, -1)
    counts = dict(data.ser_bins)
    bins = list(range(lo, hi + 1))
    rated = sum(counts.values())
    note = (f"Sudoku Explainer's rating (ER) of the {rated:,} rated puzzles, in half points "
            f"(each bar starts at its label): how hard each is for a person. ")
    if data.unrated:
        note += (f"{data.unrated:,} solved puzzles have no rating (past the budget, or a "
                 f"technique beyond the rater's: see rate_note).")
    out = _section("ser", "SER: difficulty for a person", note,
                   bar_chart("chart-ser", [ser_bin_label(b) for b in bins],
                             [counts.get(b, 0) for b in bins], "SER (half points)",
                             "puzzles"))
    out += _section(
        "ser-guesses", "SER against guesses",
        "Each cell counts puzzles of that whole SER (x) and that engine effort (y, log2 bins "
        "of guesses); darker = more. The grade follows the guesses; a person's difficulty "
        "follows the SER, and the two agree only loosely.",
        heat_map("chart-ser-guesses", data.ser_guess, "SER (whole points)", "guesses",
                 guess_bin_label, xname=lambda x: f"SER {x}-{x + 1}",
                 none="no rated puzzles to show"))
    out += _section(
        "techniques", "Techniques that set the rating",
        "For each puzzle, the hardest step of its solving path sets its SER; how often each "
        "technique was that step (the longest bar the most common).",
        hbars("chart-techniques", data.techniques, "puzzles per technique that set the SER"))
    return out


def _overview(data: RunData) -> str:
    solved = data.status.get("solved", 0)
    rate = run_rate(data)
    kpis = [_kpi(f"{data.rows:,}", "rows"),
            _kpi(f"{100 * solved / data.rows:.2f}%" if data.rows else "—", "solved"),
            _kpi(f"{rate.seconds:.2f} s" if rate else "—", "wall time"),
            _kpi(f"{rate.rows_per_second:,.0f}" if rate else "—",
                 "rows/s" + (" (rows reused not counted)" if rate and rate.reused else "")),
            _kpi(str(len(data.parts)), "result parts"),
            _kpi(str(len(data.sources)), "input files")]
    em = data.expected
    if em and (em["match"] or em["mismatch"]):
        kpis.append(_kpi(f"{em['mismatch']:,}", "expected solution mismatches"))
    cfg = {**(data.manifest.get("config") or {}),
           **{k: data.manifest[k] for k in ("workers", "executor") if k in data.manifest}}
    extra = ", ".join(f"{k} {cfg[k]}" for k in ("workers", "chunk_size", "executor")
                      if k in cfg)
    note = "uniqueness proved (limit 2)" if data.manifest.get("uniqueness_checked", True) \
        else "first solution only (uniqueness not proved)"
    return _section("overview", "Overview", f"{note}" + (f"; {extra}" if extra else ""),
                    '<div class="kpis">' + "".join(kpis) + "</div>")


def _reasons_table(data: RunData) -> str:
    if not data.reasons:
        return ""
    rows = "".join(f"<tr><td>{esc(r)}</td><td>{n:,}</td></tr>" for r, n in data.reasons)
    return ('<p class="note">Most common reasons:</p><table><tr><th>reason</th>'
            f"<th>rows</th></tr>{rows}</table>")


SOURCES_SHOWN = 30  # input files shown by name; every file's counts are in stats.parquet


def shown_sources(data: RunData) -> tuple[list[tuple[str, dict[str, int]]], str]:
    """The input files to show by name (those with the most rows not solved, in input
    order), and a line about the others ("" when every file is shown)."""
    if len(data.sources) <= SOURCES_SHOWN:
        return data.sources, ""
    ranked = sorted(range(len(data.sources)),
                    key=lambda i: -(sum(data.sources[i][1].values())
                                    - data.sources[i][1].get("solved", 0)))
    keep = sorted(ranked[:SOURCES_SHOWN])
    return ([data.sources[i] for i in keep],
            f"{len(data.sources) - SOURCES_SHOWN:,} more input files (those shown have the "
            f"most rows not solved; every file's counts are in {runfolder.STATS})")


def _sources_table(data: RunData) -> str:
    if not data.sources:
        return ""
    sources, more = shown_sources(data)
    cols = [s for s in STATUS_NAMES if any(c.get(s) for _, c in sources)]
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = "".join(
        f"<tr><td>{esc(name)}</td>" + "".join(f"<td>{c.get(s, 0):,}</td>" for s in cols)
        + f"<td>{sum(c.values()):,}</td></tr>" for name, c in sources)
    tail = f'<p class="note">{esc(more)}</p>' if more else ""
    return f"<table><tr><th>input</th>{head}<th>rows</th></tr>{body}</table>{tail}"


# ---------------------------------------------------------------------------------------
# The terminal


def print_terminal(data: RunData, html_path: str | None, console=None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    title = Text(f"run {visible(data.folder)} — ")
    title.append("finished" if data.finished else "UNFINISHED", style=None if data.finished
                 else "bold yellow")
    if not data.finished:
        title.append(" (no _SUCCESS)")
    table = Table(title=title, show_footer=True)
    table.add_column("status", footer="total")
    table.add_column("rows", justify="right", footer=f"{data.rows:,}")
    table.add_column("share", justify="right")
    for s in STATUS_NAMES:
        n = data.status.get(s, 0)
        table.add_row(s, f"{n:,}", f"{100 * n / data.rows:.1f}%" if data.rows else "-")
    console.print(table)
    if data.rows:
        names, counts = _grade_rows(data)
        console.print("grades: " + ", ".join(f"{g} {n:,}" for g, n in zip(names, counts,
                                                                         strict=True) if n))
    rate = run_rate(data)
    if rate:
        console.print(Text(rate_text(rate)))
    if data.solve_us:
        u = data.solve_us
        console.print(f"solve time per puzzle: p50 {u['p50']:.1f} µs, p99 {u['p99']:.1f} µs, "
                      f"max {u['max']:,.0f} µs")
    if data.ser_bins:
        st = data.ser_figures
        line = "SER: " + ", ".join(f"{k} {st[f'ser_{k}']:.1f}" for k in ("p50", "p90", "max")
                                   if st.get(f"ser_{k}") is not None)
        top = ", ".join(f"{t} {n:,}" for t, n in data.techniques[:3])
        console.print(Text(f"{line}; most set by {top}" if top else line))
        if data.unrated:
            console.print(Text(f"  {data.unrated:,} solved puzzles not rated (see rate_note)"))
    elif data.rated_run and data.unrated:
        console.print(Text(f"SER: no puzzle rated; {data.unrated:,} solved puzzles not rated "
                           f"(see rate_note)"))
    if len(data.sources) > 1:
        sources, more = shown_sources(data)
        cols = [s for s in STATUS_NAMES if any(c.get(s) for _, c in sources)]
        per = Table(title="per input file")
        per.add_column("input")
        for c in cols:
            per.add_column(c, justify="right")
        for name, c in sources:
            per.add_row(Text(visible(name)), *[f"{c.get(s, 0):,}" for s in cols])
        console.print(per)
        if more:
            console.print(Text(f"  {more}"))
    for reason, n in data.reasons[:3]:
        console.print(Text(f"  {n:,} x {visible(reason)}"))
    if html_path is not None:
        console.print(Text(f"report: {visible(html_path)}"))


def main(folder: str, html_out: str | None = None, no_html: bool = False,
         quiet: bool = False) -> str | None:
    """`pipeline report`: aggregate, write the HTML (atomically), print the table."""
    data = load(folder)
    path = None
    if html_out == "-" and not no_html:  # the HTML on standard output, and only it
        import sys

        sys.stdout.write(render_html(data))
        sys.stdout.flush()
        return None
    if not no_html:
        loc = (check_output(html_out, allowed=frozenset({REPORT}), option="--html") if html_out
               else Location(str(folder)).child(REPORT))
        loc.write_atomic(render_html(data).encode("utf-8"))
        path = loc.shown
    if not quiet:
        print_terminal(data, path)
    return path


