"""statestream's streaming queries: one package each, declared once (`QueryDef`), listed here.

Each `statestream.queries.<name>` package holds a query whole: its declaration (`QUERY`, in the
package's `__init__`), its per-call logic (`processor`, `rows`) and its Spark wiring (`job`).
`REGISTRY` lists them in pipeline order; `run pipeline`, the demo, `status` and `chaos` take
their queries, figures and counts from it. Adding a query: a package and a line here.

    >>> [query.name for query in pipeline_queries(vehicles=False)]
    ['join', 'stats', 'quantity_stats', 'sink_influx']
    >>> query("bunching").use_case
    'vehicle'
"""

from __future__ import annotations

from statestream.queries import bunching, geo, join, quantity_stats, sink_influx, stats
from statestream.queries.definition import Figure, QueryDef

REGISTRY: tuple[QueryDef, ...] = (
    join.QUERY,
    stats.QUERY,
    quantity_stats.QUERY,
    geo.QUERY,
    bunching.QUERY,
    sink_influx.QUERY,  # last: it writes what every query before it wrote
)

__all__ = ["REGISTRY", "Figure", "QueryDef", "pipeline_queries", "query"]


def query(name: str) -> QueryDef:
    """The registered query named `name`; `KeyError` naming the known ones otherwise."""
    for found in REGISTRY:
        if found.name == name:
            return found
    raise KeyError(f"no query {name!r}; the queries are {', '.join(q.name for q in REGISTRY)}")


def pipeline_queries(*, vehicles: bool) -> list[QueryDef]:
    """The queries of `run pipeline`: the machine use case's, with `vehicles` the vehicle one's
    too, in registry order (each reads what the ones before it write)."""
    return [q for q in REGISTRY if q.use_case == "machine" or vehicles]
