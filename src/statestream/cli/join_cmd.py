"""`statestream join`: the complement join of a JSON-lines file, offline."""

from __future__ import annotations

import re
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

from statestream.cli._common import err_console, settings_from
from statestream.errors import InputError
from statestream.join import BUILTIN_FUNCTIONS, JoinSpec

if TYPE_CHECKING:  # the engine is imported when a join runs, not for every command
    from statestream.offline_join import JoinSummary

PROGRESS_MIN_BYTES = 5_000_000
MALFORMED_SHOWN = 20


def default_result_quantity(left: str, right: str, function: str) -> str:
    """vaPower_C11 for actSpeed_C11 ⋈ vaTorque_C11 with power, else `<function>_<left>_<right>`."""
    suffix = re.search(r"_[^_]+$", left)
    if function == "power" and suffix and right.endswith(suffix.group()):
        return "vaPower" + suffix.group()
    return f"{function}_{left}_{right}"


def join_command(
    ctx: typer.Context,
    input_path: Annotated[
        str,
        typer.Argument(
            metavar="INPUT",
            help="JSON-lines file, or - for standard input; with --spark also Parquet.",
        ),
    ],
    left: Annotated[str, typer.Option("--left", help="Left quantity, e.g. actSpeed_C11.")],
    right: Annotated[str, typer.Option("--right", help="Right quantity, e.g. vaTorque_C11.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Pairs file (default: stdout).")
    ] = None,
    result: Annotated[
        str | None,
        typer.Option("--result", help="Result quantity (default: vaPower_<C> for power)."),
    ] = None,
    function: Annotated[
        str,
        typer.Option("--function", help=f"Result function: {', '.join(BUILTIN_FUNCTIONS)}."),
    ] = "power",
    tolerance: Annotated[
        float | None,
        typer.Option("--tolerance", help="Drop pairs more than this many seconds apart."),
    ] = None,
    disorder: Annotated[
        float,
        typer.Option("--disorder", help="Allowed disorder D within a series, seconds."),
    ] = 0.0,
    no_flush: Annotated[
        bool,
        typer.Option("--no-flush", help="Don't emit the pairs still pending at the end."),
    ] = False,
    spark: Annotated[
        bool,
        typer.Option(
            "--spark",
            help="Join with Spark: JSON lines or Parquet in; OUTPUT a Parquet (*.parquet) or "
            "JSON-lines folder.",
        ),
    ] = False,
    order: Annotated[
        str | None,
        typer.Option(
            "--order",
            help="With --spark: the column of each series' arrival order (default: file order "
            "for JSON lines, time order for Parquet).",
        ),
    ] = None,
    late_output: Annotated[
        Path | None,
        typer.Option(
            "--late-output",
            help="Late records file (default: OUTPUT.late.jsonl, or late.jsonl with stdout); "
            "created only when a record is late. With --spark: every rejected row, with its "
            "reason (default: OUTPUT.rejected.jsonl or .parquet, or rejected.jsonl).",
        ),
    ] = None,
) -> None:
    """Join two quantities of every thing in a JSON-lines file, exactly as the spec defines.

    INPUT holds wide rows `{"Thing", "Timestamp", <quantity>: <value>, …}` (a row's quantities
    arrive in key order) or narrow records `{"thing", "quantity", "phenomenonTime", "result"}`;
    file order is arrival order. Each pair is written as one JSON object, in emission order.
    A summary goes to stderr; malformed lines are reported with their numbers and skipped.

    With --spark the join runs on Spark (`statestream.spark.complement_join`): INPUT may also be
    Parquet, OUTPUT is a folder (Parquet for a *.parquet name, else JSON lines).
    """
    spec = JoinSpec(
        left,
        right,
        result or default_result_quantity(left, right, function),
        function=function,
        tolerance=tolerance,
        disorder=disorder,
    )
    late_path = late_output or (
        output.with_name(output.name + ".late.jsonl") if output else Path("late.jsonl")
    )
    if spark:
        _join_with_spark(ctx, input_path, spec, output, late_output, order, flush=not no_flush)
        return
    from statestream.offline_join import join_lines

    with ExitStack() as stack:
        source, size = _open_input(input_path, stack)
        out = stack.enter_context(open(output, "w")) if output else sys.stdout
        late_sink: list[IO[str]] = []

        def late_out() -> IO[str]:
            if not late_sink:
                late_sink.append(stack.enter_context(open(late_path, "w")))
            return late_sink[0]

        show_progress = size >= PROGRESS_MIN_BYTES and err_console.is_terminal
        progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=err_console,
            disable=not show_progress,
            transient=True,
        )
        with progress:
            task = progress.add_task("joining", total=size or None)
            summary = join_lines(
                source,
                [spec],
                out,
                late_out,
                flush=not no_flush,
                on_progress=lambda done: progress.update(task, completed=done),
                source_name=str(input_path),
            )
    _print_summary(summary, late_path if late_sink else None)


def _join_with_spark(
    ctx: typer.Context,
    input_path: str,
    spec: JoinSpec,
    output: Path | None,
    late_output: Path | None,
    order: str | None,
    flush: bool,
) -> None:
    """`join --spark`: the batch join of `statestream.spark`, then the summary."""
    from statestream.jobs.session import spark_session
    from statestream.spark.file_join import join_files

    if input_path == "-":
        raise InputError("--spark reads a file or folder, not standard input")
    suffix = ".parquet" if output is not None and output.suffix == ".parquet" else ".jsonl"
    rejected_path = late_output or (
        output.with_name(output.stem + ".rejected" + suffix) if output else Path("rejected.jsonl")
    )
    session = spark_session(settings_from(ctx), app_name="statestream-join-batch")
    summary = join_files(
        session,
        Path(input_path),
        [spec],
        output=output,
        rejected_output=rejected_path,
        out=sys.stdout,
        flush=flush,
        order=order,
    )
    kinds = " · ".join(f"{kind} {count:,}" for kind, count in sorted(summary.rejected.items()))
    err_console.print(
        f"[bold]{summary.pairs:,} pairs[/] · rejected: {kinds or 'none'} · "
        f"{summary.seconds:,.1f} s",
        highlight=False,
    )
    if summary.rejected_path is not None:
        err_console.print(f"rejected rows: {summary.rejected_path}", highlight=False)


def _open_input(input_path: str, stack: ExitStack) -> tuple[IO[bytes], int]:
    if input_path == "-":
        return sys.stdin.buffer, 0
    path = Path(input_path)
    try:
        return stack.enter_context(open(path, "rb")), path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None


def _print_summary(summary: JoinSummary, late_path: Path | None) -> None:
    err_console.print(
        f"read {summary.lines:,} lines, {summary.records:,} records · "
        f"[bold]{summary.pairs:,} pairs[/] · late {summary.late:,} · "
        f"duplicates {summary.duplicates:,} · malformed {len(summary.malformed):,} · "
        f"{summary.records_per_s:,.0f} records/s",
        highlight=False,
    )
    if late_path is not None:
        err_console.print(f"late records: {late_path}", highlight=False)
    for line, reason in summary.malformed[:MALFORMED_SHOWN]:
        err_console.print(f"  malformed line {line}: {reason}", highlight=False, markup=False)
    if len(summary.malformed) > MALFORMED_SHOWN:
        err_console.print(f"  … and {len(summary.malformed) - MALFORMED_SHOWN} more malformed")


def register(app: typer.Typer) -> None:
    app.command("join")(join_command)
