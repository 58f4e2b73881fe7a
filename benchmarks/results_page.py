"""The recorded benchmark runs, read from `benchmarks/results/*.jsonl` (their one reader).

An MkDocs hook (mkdocs.yml, `hooks`): on the benchmarks page it replaces the marker
`<!-- benchmark results -->` with, per bench, a plot of its throughput figures over its recorded
runs (every figure named `*_per_s`, the baseline's beside the bench's own), of its latency
percentiles (`*p50*`/`*p99*` figures in seconds) and of its repeated timings (a median `X_s`
with its fastest `X_min_s` beside it) when it has them, and a table of its latest runs: date,
commit, machine, those figures and its ratios to its baseline (`*ratio*`, or `a_to_b`). On the
history page it replaces `<!-- benchmark history -->` with every run of every bench, the tables
of `benchmarks/HISTORY.md` (`python -m benchmarks.history` writes that file).
`statestream bench --record <bench>` appends the runs (`benchmarks.bench_output.result_record`).

The plots are inline SVG drawn here from the numbers: no plotting library, no file written.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

MARKER = "<!-- benchmark results -->"
HISTORY_MARKER = "<!-- benchmark history -->"
RESULTS = Path(__file__).resolve().parent / "results"
LATEST_ROWS = 8
TABLE_CLASS = "bench-runs"  # the docs' tables of runs: compact (docs/stylesheets/extra.css)
NO_RUNS = "No run is recorded yet: `statestream bench --record <bench>` records one.\n"
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip
_WIDTH, _PLOT_HEIGHT, _LEFT, _RIGHT, _TOP, _LEGEND_ROW = 640, 150, 76, 24, 28, 16


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs' hook: the results in place of a marker (other pages unchanged)."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, results_markdown(RESULTS))
    if HISTORY_MARKER in markdown:
        history = history_markdown(RESULTS, level=2, css_class=TABLE_CLASS)
        markdown = markdown.replace(HISTORY_MARKER, history)
    return markdown


def results_markdown(folder: Path) -> str:
    """Every bench's plots and table of its latest runs, from the results files in `folder`."""
    runs = all_runs(folder)
    if not runs:
        return NO_RUNS
    return "\n".join(_bench_section(bench, found) for bench, found in runs.items())


def history_markdown(folder: Path, level: int, css_class: str | None = None) -> str:
    """Every bench's recorded runs, newest first: a table per bench under a heading of `level`
    named after it (its anchor, e.g. `#bench-join`, is what pages link to); `css_class` as in
    `runs_table`."""
    runs = all_runs(folder)
    if not runs:
        return NO_RUNS
    sections = []
    for bench, found in runs.items():
        heading = f"{'#' * level} `bench {bench}`\n\n{_count(found)}, newest first:\n\n"
        sections.append(heading + runs_table(found, css_class))
    return "\n".join(sections)


def all_runs(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Each bench's runs (the results file's name), oldest first; benches without runs left out."""
    runs = {path.stem: load_runs(path) for path in sorted(folder.glob("*.jsonl"))}
    return {bench: found for bench, found in runs.items() if found}


def load_runs(path: Path) -> list[dict[str, Any]]:
    """The runs of one results file, oldest first (a line that is no JSON object is skipped)."""
    runs = []
    for line in path.read_text().splitlines():
        try:
            run = json.loads(line)
        except ValueError:
            continue
        if isinstance(run, dict) and isinstance(run.get("figures"), dict):
            runs.append(run)
    return sorted(runs, key=lambda run: str(run.get("date", "")))


def throughputs(figures: dict[str, Any]) -> dict[str, float]:
    """The figures that are rates (`*_per_s`), a baseline's nested ones under its name.

    >>> throughputs({"rows_per_s": 5, "paho": {"rows_per_s": 3}, "seconds": 2})
    {'rows_per_s': 5.0, 'paho rows_per_s': 3.0}
    """
    return _numbers(figures, lambda name: name.endswith("_per_s"))


def latencies(figures: dict[str, Any]) -> dict[str, float]:
    """The latency percentiles in seconds (names with p50 or p99 that end in `_s`).

    >>> latencies({"latency_p50_s": 0.3, "batch": {"batch_p99_ms": 650}})
    {'latency_p50_s': 0.3}
    """
    return _numbers(figures, lambda name: ("p50" in name or "p99" in name) and name.endswith("_s"))


def timings(figures: dict[str, Any]) -> dict[str, float]:
    """The medians of repeated timings in seconds: a figure `X_s` whose fastest, `X_min_s`, is
    beside it (`bench small`'s `groupby_s` and `groupby_min_s`).

    >>> timings({"groupby_s": 0.4, "groupby_min_s": 0.3, "query_wall_s": 2.0})
    {'groupby_s': 0.4}
    """
    return {
        name: float(value)
        for name, value in figures.items()
        if name.endswith("_s")
        and not name.endswith("_min_s")
        and _is_number(value)
        and _is_number(figures.get(f"{name[:-2]}_min_s"))
    }


def ratios(figures: dict[str, Any]) -> dict[str, float]:
    """The bench's ratios to its baseline (names with `ratio`, or `a_to_b` but no `_s` at the
    end), a nested run's under its name.

    >>> ratios({"ratio": 26.3, "sample": {"ratio": 39.6}, "records": 10})
    {'ratio': 26.3, 'sample ratio': 39.6}
    >>> ratios({"asof_join_to_groupby": 1.8, "groupby_s": 0.4})
    {'asof_join_to_groupby': 1.8}
    """
    return _numbers(figures, _is_ratio)


def _is_ratio(name: str) -> bool:
    return "ratio" in name or ("_to_" in name and not name.endswith("_s"))


def _numbers(figures: dict[str, Any], wanted: Any) -> dict[str, float]:
    found: dict[str, float] = {}
    for name, value in figures.items():
        if isinstance(value, dict):
            for inner, number in value.items():
                if wanted(inner) and _is_number(number):
                    found[f"{name} {inner}"] = float(number)
        elif wanted(name) and _is_number(value):
            found[name] = float(value)
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


PLOTS = (("throughput", throughputs), ("latency (s)", latencies), ("time (s)", timings))


def _bench_section(bench: str, runs: list[dict[str, Any]]) -> str:
    parts = [f"### `bench {bench}`: {_count(runs)}\n"]
    for title, pick in PLOTS:
        series = _series(runs, pick)
        if series:
            parts.append(svg_plot(f"{bench}: {title}", series, _run_labels(runs)) + "\n")
    parts.append(runs_table(runs[-LATEST_ROWS:], TABLE_CLASS))
    return "\n".join(parts)


def _count(runs: list[dict[str, Any]]) -> str:
    return f"{len(runs)} recorded run{'s' * (len(runs) != 1)}"


def _run_labels(runs: list[dict[str, Any]]) -> list[str]:
    return [_date(run) for run in runs]


def _date(run: dict[str, Any]) -> str:
    """The run's date and time (UTC) to the minute: "2026-11-29 00:41"."""
    return str(run.get("date", ""))[:16].replace("T", " ")


def _series(runs: list[dict[str, Any]], pick: Any) -> dict[str, list[tuple[int, float]]]:
    series: dict[str, list[tuple[int, float]]] = {}
    for index, run in enumerate(runs):
        for name, value in pick(run["figures"]).items():
            series.setdefault(name, []).append((index, value))
    return series


def svg_plot(title: str, series: dict[str, list[tuple[int, float]]], runs: list[str]) -> str:
    """A line per series over the runs (`runs`: their labels, oldest first), its scale from 0 to
    the largest value; a `target…` series dashed, the legend below in two columns."""
    top = max(value for points in series.values() for _, value in points) or 1.0
    width, bottom = _WIDTH - _LEFT - _RIGHT, _TOP + _PLOT_HEIGHT
    height = bottom + 30 + _LEGEND_ROW * ((len(series) + 1) // 2)

    def x(index: int) -> float:
        return _LEFT + (index / (len(runs) - 1) * width if len(runs) > 1 else width / 2)

    def y(value: float) -> float:
        return bottom - value / top * _PLOT_HEIGHT

    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {height}" '
        f'width="{_WIDTH}" height="{height}" style="max-width: 100%; height: auto" role="img" '
        f'aria-label="{html.escape(title)}" font-size="11" font-family="sans-serif">',
        f'<text x="{_LEFT}" y="14" font-weight="bold">{html.escape(title)}</text>',
    ]
    for value in (top, top / 2, 0.0):  # gridlines with their values, right-aligned
        lines.append(
            f'<line x1="{_LEFT}" y1="{y(value):.1f}" x2="{_LEFT + width}" y2="{y(value):.1f}" '
            f'stroke="{"#888" if value == 0 else "#ddd"}"/><text x="{_LEFT - 6}" '
            f'y="{y(value) + 4:.1f}" text-anchor="end">{_axis_number(value)}</text>'
        )
    ends = [(0, "start" if len(runs) > 1 else "middle"), (len(runs) - 1, "end")][: len(runs)]
    for index, anchor in ends:  # the first and the last run under the axis
        lines.append(
            f'<text x="{x(index):.1f}" y="{bottom + 16}" text-anchor="{anchor}" fill="#555">'
            f"{html.escape(runs[index])}</text>"
        )
    for number, (name, points) in enumerate(series.items()):
        colour = _COLOURS[number % len(_COLOURS)]
        dashes = ' stroke-dasharray="6 4"' if name.startswith("target") else ""
        if len(points) > 1:
            path = " ".join(f"{x(index):.1f},{y(value):.1f}" for index, value in points)
            lines.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dashes} '
                f'points="{path}"/>'
            )
        lines += [
            f'<circle cx="{x(index):.1f}" cy="{y(value):.1f}" r="3" fill="{colour}"/>'
            for index, value in points
        ]
        legend_x = _LEFT + (number % 2) * width / 2
        legend_y = bottom + 34 + _LEGEND_ROW * (number // 2)
        lines.append(
            f'<line x1="{legend_x:.0f}" y1="{legend_y - 4}" x2="{legend_x + 18:.0f}" '
            f'y2="{legend_y - 4}" stroke="{colour}" stroke-width="3"{dashes}/>'
            f'<text x="{legend_x + 24:.0f}" y="{legend_y}">{html.escape(name)}</text>'
        )
    lines.append("</svg>")
    return "".join(lines)


def label(name: str) -> str:
    """A figure's name as a column's heading: `_per_s` as "/s", seconds in brackets, words.

    >>> label("sustained_positions_per_s"), label("latency_p99_s"), label("paho rows_per_s")
    ('sustained positions/s', 'latency p99 (s)', 'paho rows/s')
    """
    name = name.replace("_per_s", "/s")
    if name.endswith("_s"):
        name = name[:-2] + " (s)"
    return name.replace("_", " ")


def _axis_number(value: float) -> str:
    """An axis' value, short: 18.9 M, 124 k, 0.603."""
    for scale, unit in ((1e6, " M"), (1e3, " k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{unit}"
    return _number(value)


def _number(value: float) -> str:
    """1,234,567 for large figures, 0.345 or 1.634 for small ones."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.4g}"


def runs_table(runs: list[dict[str, Any]], css_class: str | None = None) -> str:
    """A Markdown table of `runs`, the newest first: date (UTC), commit ("changed" when the tree
    had changes), cores and load average, then the throughputs (the targets left to the plots),
    latencies, timings and ratios (headed by
    `label`; the plots' legends keep the figures' names). With `css_class`, inside a `<div>` of
    that class (Markdown in HTML: the docs' `md_in_html`)."""
    picks = (throughputs, latencies, timings, ratios)
    names = list(dict.fromkeys(n for pick in picks for r in runs for n in pick(r["figures"])))
    names = [name for name in names if not name.startswith("target")]  # the plots' dashed lines
    header = ["date (UTC)", "commit", "cores, load", *map(label, names)]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for run in reversed(runs):
        machine = run.get("machine", {})
        figures = {name: value for pick in picks for name, value in pick(run["figures"]).items()}
        cells = [
            _date(run),
            f"`{run.get('commit')}`" + (" (changed)" if run.get("changed") else ""),
            f"{machine.get('cores', '?')}, {machine.get('load_1m', '?')}",
            *(_number(figures[name]) if name in figures else "–" for name in names),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    table = "\n".join(rows) + "\n"
    return f'<div class="{css_class}" markdown>\n\n{table}\n</div>\n' if css_class else table
