"""Starting registered queries: the ones `statestream run <command>` runs, with the options every
run command takes, and the checks a query makes before Spark starts.

The queries that share a `command` run together in one Spark application (`run geo`: the cells
and, beside them, the bunching alerts). The first of them in the registry is the command's own:
`--checkpoint DIR` is its checkpoint, and each other one keeps `DIR-<its name>` beside it.

    >>> from statestream.queries import query
    >>> [q.name for q in command_queries("geo")]
    ['geo', 'bunching']
    >>> RunOptions(checkpoint=Path("/tmp/cells")).checkpoint_of(query("bunching"), first=False)
    PosixPath('/tmp/cells-bunching')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from statestream.errors import StatestreamError
from statestream.queries import REGISTRY
from statestream.queries.definition import QueryDef

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from statestream.config import Settings


@dataclass(frozen=True)
class RunOptions:
    """The options every `run` command takes, for all the queries it starts."""

    available_now: bool = False
    max_offsets_per_trigger: int | None = None
    starting_offsets: str = "earliest"
    checkpoint: Path | None = None
    pause_after_commit_s: float = 0.0

    def checkpoint_of(self, definition: QueryDef, *, first: bool) -> Path | None:
        """`checkpoint` for a command's first query, `checkpoint-<name>` beside it for others;
        None (the query's folder in the checkpoint root) without one."""
        if self.checkpoint is None or first:
            return self.checkpoint
        return self.checkpoint.with_name(f"{self.checkpoint.name}-{definition.name}")

    def for_query(self, definition: QueryDef, *, first: bool = True) -> Any:
        """The query's own `QueryOptions` (its `options` class) with these values; the crash
        tests' pause after a commit is the command's first query's only."""
        return definition.options_type()(
            available_now=self.available_now,
            max_offsets_per_trigger=self.max_offsets_per_trigger,
            starting_offsets=self.starting_offsets,
            checkpoint=self.checkpoint_of(definition, first=first),
            pause_after_commit_s=self.pause_after_commit_s if first else 0.0,
        )


def commands() -> dict[str, list[QueryDef]]:
    """Each `run` command and the queries it starts, in registry order."""
    grouped: dict[str, list[QueryDef]] = {}
    for definition in REGISTRY:
        grouped.setdefault(definition.command, []).append(definition)
    return grouped


def command_queries(command: str) -> list[QueryDef]:
    """The queries `run <command>` starts; `StatestreamError` for an unknown command."""
    try:
        return commands()[command]
    except KeyError:
        known = ", ".join(commands())
        raise StatestreamError(f"no query command {command!r}; the commands are {known}") from None


def check_before_start(settings: Settings, definition: QueryDef, options: Any) -> None:
    """The query's own check (`QueryDef.check`), run before Spark starts so that a setting or a
    checkpoint it cannot use stops the command with one line."""
    if definition.check:
        definition.checker()(settings, options)


def start_queries(
    spark: SparkSession, settings: Settings, definitions: list[QueryDef], options: RunOptions
) -> list[StreamingQuery]:
    """Start `definitions` on `spark`, each with its own options; if one fails to start, stop
    those already started."""
    started: list[StreamingQuery] = []
    try:
        for index, definition in enumerate(definitions):
            own = options.for_query(definition, first=index == 0)
            started.append(definition.starter()(spark, settings, own))
    except BaseException:
        for running in started:
            running.stop()
        raise
    return started


__all__ = ["RunOptions", "check_before_start", "command_queries", "commands", "start_queries"]
