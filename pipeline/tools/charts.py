"""SVG charts drawn by hand (a few rectangles, lines and text), for the HTML report.

No plotting library, no JavaScript, no URL: the page opens anywhere, offline. Every label
that comes from data is escaped; hovering a bar shows its exact number (an SVG <title>).
"""

from __future__ import annotations

import html
import math

ACCENT = "#3465a4"


def short(x: float) -> str:
    """A number in a few characters: 1.2M, 34.5k, 678."""
    if x >= 1e6:
        return f"{x / 1e6:.3g}M"
    if x >= 1e3:
        return f"{x / 1e3:.3g}k"
    return f"{x:.2g}" if x < 10 else f"{x:.0f}"

W, H = 720, 300


PAD_L, PAD_R, PAD_T, PAD_B = 64, 16, 16, 56
TICK_PX = 11  # svg .tick's font size (the report's CSS)
CHAR_PX = 0.62 * TICK_PX  # wider than a digit or a letter of the usual sans fonts
LABEL_GAP = 8  # between two x labels


def label_width(text: str) -> float:
    """An upper bound on a tick label's width in the chart's units."""
    return len(text) * CHAR_PX


def label_step(labels: list[str], slot: float) -> int:
    """Label every k-th of x slots `slot` wide, k the least that keeps labels apart."""
    return max(1, math.ceil((max(map(label_width, labels), default=0) + LABEL_GAP) / slot))


def esc(x) -> str:
    return html.escape(str(x), quote=True)


def _fmt(n: float) -> str:
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"


def _nice_ticks(top: float, n: int = 5) -> list[float]:
    """Round tick values from 0 up to at least `top`."""
    if top <= 0:
        return [0, 1]
    raw = top / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def _svg(chart_id: str, body: list[str], label: str, width: int = W, height: int = H) -> str:
    return (f'<svg id="{esc(chart_id)}" class="chart" viewBox="0 0 {width} {height}" '
            f'width="100%" role="img" aria-label="{esc(label)}">' + "".join(body) + "</svg>")


EMPTY_H = 80  # an empty chart's height: a line of text


def empty(chart_id: str, message: str) -> str:
    return _svg(chart_id, [f'<text x="{W / 2}" y="{EMPTY_H / 2 + 4}" class="empty" '
                           f'text-anchor="middle">{esc(message)}</text>'], message, W, EMPTY_H)


def _y_axis(body: list[str], ticks: list[float], scale, x0: int, x1: int, label: str) -> None:
    for t in ticks:
        y = scale(t)
        body.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        body.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
                    f'{esc(short(t) if t >= 1000 else _fmt(t))}</text>')
    body.append(f'<text transform="translate(14,{PAD_T + (H - PAD_T - PAD_B) / 2}) '
                f'rotate(-90)" text-anchor="middle" class="axis">{esc(label)}</text>')


def bar_chart(chart_id: str, labels: list[str], values: list[float], xlabel: str,
              ylabel: str = "rows", colors: list[str] | None = None,
              tips: list[str] | None = None) -> str:
    """Vertical bars, one per label, with the value over each bar."""
    if not values or max(values) <= 0:
        return empty(chart_id, "no rows to show")
    ticks = _nice_ticks(max(values))
    top = ticks[-1]
    inner_w, inner_h = W - PAD_L - PAD_R, H - PAD_T - PAD_B
    slot = inner_w / len(values)
    bar = max(1.0, slot * 0.78)
    body: list[str] = []

    def scale(v):
        return PAD_T + inner_h * (1 - v / top)

    _y_axis(body, ticks, scale, PAD_L, W - PAD_R, ylabel)
    every = label_step(labels, slot)
    for i, (lab, v) in enumerate(zip(labels, values, strict=True)):
        x = PAD_L + i * slot + (slot - bar) / 2
        y = min(scale(v), PAD_T + inner_h - 1.5) if v > 0 else scale(v)  # keep small bars seen
        color = colors[i] if colors else ACCENT
        tip = tips[i] if tips else f"{lab}: {_fmt(v)}"
        body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" '
                    f'height="{PAD_T + inner_h - y:.1f}" fill="{esc(color)}">'
                    f'<title>{esc(tip)}</title></rect>')
        if len(values) <= 16 and v > 0:
            body.append(f'<text x="{x + bar / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle" '
                        f'class="value">{esc(_fmt(v))}</text>')
        if i % every == 0:
            body.append(f'<text x="{x + bar / 2:.1f}" y="{PAD_T + inner_h + 16}" '
                        f'text-anchor="middle" class="tick">{esc(lab)}</text>')
    body.append(f'<text x="{PAD_L + inner_w / 2}" y="{H - 12}" text-anchor="middle" '
                f'class="axis">{esc(xlabel)}</text>')
    return _svg(chart_id, body, f"{ylabel} by {xlabel}")


def stacked_hbars(chart_id: str, rows: list[tuple[str, dict[str, int]]],
                  keys: list[str], colors: dict[str, str]) -> str:
    """One horizontal bar per row, split by key; widths are shares of the row's total."""
    if not rows:
        return empty(chart_id, "no rows to show")
    label_w, bar_h, gap, legend_h = 220, 22, 10, 30
    height = legend_h + len(rows) * (bar_h + gap) + 10
    inner = W - label_w - PAD_R - 70
    body: list[str] = []
    x = label_w
    for k in keys:  # legend
        body.append(f'<rect x="{x}" y="6" width="12" height="12" fill="{esc(colors[k])}"/>'
                    f'<text x="{x + 16}" y="16" class="tick">{esc(k)}</text>')
        x += 24 + 7 * len(k)
    for r, (name, counts) in enumerate(rows):
        y = legend_h + r * (bar_h + gap)
        total = sum(counts.values())
        shown = name if len(name) <= 32 else "…" + name[-31:]
        body.append(f'<text x="{label_w - 8}" y="{y + bar_h * 0.7:.1f}" text-anchor="end" '
                    f'class="tick"><title>{esc(name)}</title>{esc(shown)}</text>')
        x = float(label_w)
        for k in keys:
            n = counts.get(k, 0)
            if not n:
                continue
            w = inner * n / total
            body.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 0.5):.1f}" '
                        f'height="{bar_h}" fill="{esc(colors[k])}"><title>'
                        f'{esc(f"{name}: {k} {n:,} ({100 * n / total:.1f}%)")}</title></rect>')
            x += w
        body.append(f'<text x="{label_w + inner + 6}" y="{y + bar_h * 0.7:.1f}" '
                    f'class="tick">{esc(f"{total:,}")}</text>')
    return _svg(chart_id, body, "rows per status for each input file", W, height)


def hbars(chart_id: str, rows: list[tuple[str, int]], what: str) -> str:
    """One horizontal bar per label, its length its count (the longest the widest), the
    count and share beside it: a ranking read at a glance."""
    if not rows or max(n for _, n in rows) <= 0:
        return empty(chart_id, "no rows to show")
    label_w, bar_h, gap = 220, 18, 8
    height = len(rows) * (bar_h + gap) + 10
    inner = W - label_w - PAD_R - 110
    top = max(n for _, n in rows)
    total = sum(n for _, n in rows)
    body: list[str] = []
    for r, (name, n) in enumerate(rows):
        y = 6 + r * (bar_h + gap)
        w = inner * n / top
        body.append(f'<text x="{label_w - 8}" y="{y + bar_h * 0.75:.1f}" text-anchor="end" '
                    f'class="tick">{esc(name)}</text>'
                    f'<rect x="{label_w}" y="{y}" width="{max(w, 0.5):.1f}" height="{bar_h}" '
                    f'fill="{ACCENT}"><title>{esc(f"{name}: {n:,}")}</title></rect>'
                    f'<text x="{label_w + w + 6:.1f}" y="{y + bar_h * 0.75:.1f}" class="tick">'
                    f'{esc(f"{n:,} ({100 * n / total:.1f}%)")}</text>')
    return _svg(chart_id, body, what, W, height)


def heat_map(chart_id: str, cells: list[tuple[int, int, int]], xlabel: str, ylabel: str,
             ylabel_of, xname=lambda x: f"{x} clues", none: str = "no solved puzzles to show"
             ) -> str:
    """Counts on an (x, y) grid of integers, shaded on a log scale; `xname` says an x in a
    cell's hover text, `none` what an empty chart says."""
    if not cells:
        return empty(chart_id, none)
    xs = range(min(c[0] for c in cells), max(c[0] for c in cells) + 1)
    ys = range(min(c[1] for c in cells), max(c[1] for c in cells) + 1)
    top = max(c[2] for c in cells)
    inner_w, inner_h = W - PAD_L - PAD_R - 60, H - PAD_T - PAD_B
    cw, ch = inner_w / len(xs), inner_h / len(ys)
    body: list[str] = []
    for x, y, n in cells:
        shade = math.log1p(n) / math.log1p(top)
        px = PAD_L + (x - xs.start) * cw
        py = PAD_T + inner_h - (y - ys.start + 1) * ch
        body.append(f'<rect x="{px:.1f}" y="{py:.1f}" width="{cw:.1f}" height="{ch:.1f}" '
                    f'fill="{_blue(shade)}"><title>{esc(f"{xname(x)}, {ylabel_of(y)} guesses: {n:,} puzzles")}'
                    f'</title></rect>')
    every = label_step([str(x) for x in xs], cw)
    for i, x in enumerate(xs):
        if i % every == 0:
            body.append(f'<text x="{PAD_L + (i + 0.5) * cw:.1f}" y="{PAD_T + inner_h + 16}" '
                        f'text-anchor="middle" class="tick">{x}</text>')
    for j, y in enumerate(ys):
        body.append(f'<text x="{PAD_L - 6}" y="{PAD_T + inner_h - (j + 0.5) * ch + 4:.1f}" '
                    f'text-anchor="end" class="tick">{esc(ylabel_of(y))}</text>')
    # the legend: light = few, dark = many
    lx = W - PAD_R - 40
    for k in range(10):
        body.append(f'<rect x="{lx}" y="{PAD_T + inner_h - (k + 1) * inner_h / 10:.1f}" '
                    f'width="14" height="{inner_h / 10:.1f}" fill="{_blue(k / 9)}"/>')
    body.append(f'<text x="{lx + 18}" y="{PAD_T + 10}" class="tick">{esc(short(top))}</text>'
                f'<text x="{lx + 18}" y="{PAD_T + inner_h}" class="tick">1</text>')
    body.append(f'<text x="{PAD_L + inner_w / 2}" y="{H - 12}" text-anchor="middle" '
                f'class="axis">{esc(xlabel)}</text>')
    body.append(f'<text transform="translate(14,{PAD_T + inner_h / 2}) rotate(-90)" '
                f'text-anchor="middle" class="axis">{esc(ylabel)}</text>')
    return _svg(chart_id, body, f"{ylabel} against {xlabel}")


def _blue(t: float) -> str:
    """From a pale to a deep blue, t in 0..1."""
    lo, hi = (239, 243, 255), (8, 48, 107)
    r, g, b = (round(a + (z - a) * t) for a, z in zip(lo, hi, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def line_chart(chart_id: str, points: list[tuple[float, float]], xlabel: str,
               ylabel: str) -> str:
    """A polyline through (x, y) points, with a dot per point."""
    if len(points) < 1:
        return empty(chart_id, "no result parts to show")
    xmax = max(p[0] for p in points) or 1.0
    ymax = max(p[1] for p in points)
    xt, yt = _nice_ticks(xmax), _nice_ticks(ymax)
    inner_w, inner_h = W - PAD_L - PAD_R, H - PAD_T - PAD_B

    def sx(v):
        return PAD_L + inner_w * v / xt[-1]

    def sy(v):
        return PAD_T + inner_h * (1 - v / yt[-1])

    body: list[str] = []
    _y_axis(body, yt, sy, PAD_L, W - PAD_R, ylabel)
    for t in xt:
        body.append(f'<text x="{sx(t):.1f}" y="{PAD_T + inner_h + 16}" text-anchor="middle" '
                    f'class="tick">{esc(_fmt(t))}</text>')
    x0, y0 = points[0]
    body.append(f'<line x1="{sx(0):.1f}" y1="{sy(0):.1f}" x2="{sx(x0):.1f}" y2="{sy(y0):.1f}" '
                f'stroke="#999" stroke-dasharray="4 4"><title>start-up and the first part'
                f'</title></line>')
    path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
    body.append(f'<polyline points="{path}" fill="none" stroke="{ACCENT}" stroke-width="2"/>')
    if len(points) <= 200:
        for x, y in points:
            body.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{ACCENT}">'
                        f'<title>{esc(f"{x:.2f} s: {y:,.0f} rows")}</title></circle>')
    body.append(f'<text x="{PAD_L + inner_w / 2}" y="{H - 12}" text-anchor="middle" '
                f'class="axis">{esc(xlabel)}</text>')
    return _svg(chart_id, body, f"{ylabel} over {xlabel}")
