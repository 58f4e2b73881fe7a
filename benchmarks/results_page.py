"""The docs' benchmark results, made at docs build time from `benchmarks/results/*.jsonl`.

An MkDocs hook (mkdocs.yml, `hooks`): on the benchmarks page it replaces the marker
`<!-- benchmark results -->` with, per bench, a plot of its throughput figures over its recorded
runs (every top-level figure named `*_per_s`, the baseline's beside the bench's own) and of its
latency percentiles (`*p50*`/`*p99*` figures in seconds) when it has them, and a table of its
latest runs: date, commit, machine and those figures. `statestream bench --record <bench>`
appends the runs (`statestream.cli._bench.result_record`).

The plots are inline SVG drawn here from the numbers: no plotting library, no file written.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

MARKER = "<!-- benchmark results -->"
RESULTS = Path(__file__).resolve().parent / "results"
LATEST_ROWS = 8
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
_WIDTH, _HEIGHT, _PAD = 640, 220, 48


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs' hook: the results in place of the marker (other pages unchanged)."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, results_markdown(RESULTS))


def results_markdown(folder: Path) -> str:
    """Every bench's plots and table, from the results files in `folder`."""
    runs = {path.stem: load_runs(path) for path in sorted(folder.glob("*.jsonl"))}
    runs = {bench: found for bench, found in runs.items() if found}
    if not runs:
        return "No run is recorded yet: `statestream bench --record <bench>` records one.\n"
    return "\n".join(_bench_section(bench, found) for bench, found in runs.items())


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
    """The latency percentiles (names with p50 or p99, in seconds)."""
    return _numbers(figures, lambda name: "p50" in name or "p99" in name)


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


def _bench_section(bench: str, runs: list[dict[str, Any]]) -> str:
    parts = [f"### `bench {bench}`: {len(runs)} recorded run{'s' * (len(runs) != 1)}\n"]
    for title, pick in (("throughput", throughputs), ("latency (s)", latencies)):
        series = _series(runs, pick)
        if series:
            parts.append(svg_plot(f"{bench}: {title}", series) + "\n")
    parts.append(_table(runs[-LATEST_ROWS:]))
    return "\n".join(parts)


def _series(runs: list[dict[str, Any]], pick: Any) -> dict[str, list[tuple[int, float]]]:
    series: dict[str, list[tuple[int, float]]] = {}
    for index, run in enumerate(runs):
        for name, value in pick(run["figures"]).items():
            series.setdefault(name, []).append((index, value))
    return series


def svg_plot(title: str, series: dict[str, list[tuple[int, float]]]) -> str:
    """A line per series over the run index, its scale from 0 to the largest value."""
    count = max(index for points in series.values() for index, _ in points) + 1
    top = max(value for points in series.values() for _, value in points) or 1.0
    width, height = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD

    def xy(index: int, value: float) -> str:
        x = _PAD + (index / max(count - 1, 1)) * width
        return f"{x:.1f},{_PAD + height - value / top * height:.1f}"

    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'role="img" aria-label="{html.escape(title)}" font-size="11" font-family="sans-serif">',
        f'<text x="{_PAD}" y="16">{html.escape(title)}</text>',
        f'<line x1="{_PAD}" y1="{_PAD + height}" x2="{_PAD + width}" y2="{_PAD + height}" '
        'stroke="#888"/>',
        f'<text x="4" y="{_PAD + 4}">{_number(top)}</text><text x="4" y="{_PAD + height}">0</text>',
    ]
    for number, (name, points) in enumerate(series.items()):
        colour = _COLOURS[number % len(_COLOURS)]
        path = " ".join(xy(index, value) for index, value in points)
        lines.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        lines += [f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="2.5" '
                  f'fill="{colour}"/>' for p in path.split()]  # fmt: skip
        y = _HEIGHT - _PAD / 2 + 12 * (number // 3)
        x = _PAD + (number % 3) * (width / 3)
        lines.append(f'<text x="{x:.0f}" y="{y:.0f}" fill="{colour}">{html.escape(name)}</text>')
    lines.append("</svg>")
    return "".join(lines)


def _number(value: float) -> str:
    """1,234,567 for large figures, 0.345 for small ones."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _table(runs: list[dict[str, Any]]) -> str:
    names = list(dict.fromkeys(n for run in runs for n in throughputs(run["figures"])))
    names += list(dict.fromkeys(n for run in runs for n in latencies(run["figures"])))
    header = ["date", "commit", "cores, load", *names]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for run in reversed(runs):
        machine = run.get("machine", {})
        figures = {**throughputs(run["figures"]), **latencies(run["figures"])}
        cells = [
            str(run.get("date", ""))[:10],
            f"`{run.get('commit')}`" + (" (changed)" if run.get("changed") else ""),
            f"{machine.get('cores', '?')}, {machine.get('load_1m', '?')}",
            *(_number(figures[name]) if name in figures else "–" for name in names),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"
