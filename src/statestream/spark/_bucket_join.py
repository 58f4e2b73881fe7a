"""The Python side of the Spark joins: one bucket of things, joined by one `JoinRouter`.

No pyspark here: `BucketJoin` takes a pandas frame (a stream's micro-batch) or an Arrow table
(`arrow`, a batch partition) of a bucket's records (columns `thing`,
`quantity`, `t`, `v`, `row` and, with an arrival order, `o`) and returns its pairs and, when asked,
the records the engine rejected, in the flat columns of `OUTPUT_COLUMNS`; `batch_join` shapes
them into the spec's output record. `t` is the caller's time in its own unit (`to_ms` converts);
the pairs' and the rejected records' times are gathered from it, so they come back exactly as
given, not through a conversion to ms and back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from statestream.join import DUPLICATE, LATE, MALFORMED, CodedNames, JoinedPairs, JoinSpec
from statestream.join.names import Utf8Names

if TYPE_CHECKING:  # the router (and the compiled engine) is imported where a join runs
    from statestream.join.router import JoinRouter, RoutedSteps

PAIR, REJECTED = "pair", "rejected"

# name → what it holds; a pair fills the first group, a rejected record the second
OUTPUT_COLUMNS = {
    "kind": "pair or rejected",
    "spec": "index of the join spec",
    "thing": "the thing",
    "pair_t": "pair: mean of the two times",
    "result": "pair: the result function's value",
    "left_t": "pair: the left record's time",
    "left_v": "pair: the left record's value",
    "right_t": "pair: the right record's time",
    "right_v": "pair: the right record's value",
    "quantity": "rejected: the record's quantity",
    "t": "rejected: the record's time",
    "v": "rejected: the record's value",
    "o": "rejected: the record's arrival order",
    "reason": "rejected: why",
}
# without rejected records, only the pairs' columns: no kind, no columns of nulls to convert
PAIR_COLUMNS = [name for name in OUTPUT_COLUMNS if name != "kind"][:8]


@dataclass(frozen=True)
class BucketJoin:
    """Join one bucket's records, in arrival order, with a fresh router; flush if `flush`.

    Arrival order is `o` then `t` (time order without `o`), ties kept in `row` order.
    `integer_time`: `t` holds whole numbers (µs of a timestamp) and a pair's mean time is
    rounded down to one. `times_from_engine`: the pairs' times are the engine's (ms, back in
    the caller's unit), not gathered from the frame; a stream's pairs need this, their records
    may come from earlier micro-batches.
    """

    specs: Sequence[JoinSpec]
    to_ms: float
    flush: bool = True
    rejected: bool = False
    has_order: bool = False
    integer_time: bool = False
    times_from_engine: bool = False

    def __call__(self, frame: pd.DataFrame) -> pd.DataFrame:
        frame, steps = self._run(frame)
        return self.output(steps, frame)

    def arrow(self, table: pa.Table, schema: pa.Schema) -> pa.Table:
        """The same on an Arrow table, the output an Arrow table in `schema` (Spark's
        `mapInArrow`). Without rejected records no pandas frame is built: the records are put
        in arrival order by numpy (Arrow with an `o` column), the names come from Arrow
        dictionaries (no string is converted per record), the pairs' columns go to Arrow as
        numpy arrays."""
        if self.rejected:
            frame, steps = self._run(table.to_pandas())
            out = self.output(steps, frame)
            return pa.Table.from_pandas(out, schema=schema, preserve_index=False)
        order = self._arrival_order(table)
        t = table.column("t").to_numpy()[order]
        router = new_router(self.specs)
        steps = [
            router.process(
                arrow_utf8_names(table.column("thing"), order),
                arrow_coded_names(table.column("quantity"), order),
                t.astype(np.float64) * self.to_ms,
                table.column("v").to_numpy()[order].astype(np.float64, copy=False),
            )
        ]
        if self.flush:
            steps.append(router.finish())
        pairs = self._pairs(steps, t, coded=True)
        if not pairs:
            return schema.empty_table()
        names = pa.array(steps[-1].names, type=schema.field("thing").type)
        columns = {name: pa.array(column) for name, column in pairs.items() if name != "thing"}
        columns["thing"] = names.take(pairs["thing"])
        return pa.table([columns[f.name].cast(f.type) for f in schema], schema=schema)

    def _arrival_order(self, table: pa.Table) -> np.ndarray:
        """The positions of `table`'s records in arrival order (`in_arrival_order`'s)."""
        if self.has_order:  # `o` may be a string or a timestamp: Arrow's stable sort
            keys = [(name, "ascending") for name in ("o", "t", "row")]
            return pc.sort_indices(table.select(["o", "t", "row"]), sort_keys=keys).to_numpy()
        return np.lexsort((table.column("row").to_numpy(), table.column("t").to_numpy()))

    def _run(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, list[RoutedSteps]]:
        frame = self.in_arrival_order(frame)
        router = new_router(self.specs)
        steps = [self.process(router, frame)]
        if self.flush:
            steps.append(router.finish())
        return frame, steps

    def in_arrival_order(self, frame: pd.DataFrame) -> pd.DataFrame:
        keys = ["o", "t", "row"] if self.has_order else ["t", "row"]
        return frame.sort_values(keys, kind="stable", ignore_index=True)

    def process(self, router: JoinRouter, frame: pd.DataFrame) -> RoutedSteps:
        """`router` over `frame`'s records (in arrival order), without finishing."""
        return router.process(
            frame["thing"].to_numpy(dtype=object),
            frame["quantity"].to_numpy(dtype=object),
            frame["t"].to_numpy(dtype=np.float64) * self.to_ms,
            frame["v"].to_numpy(dtype=np.float64),
        )

    @property
    def columns(self) -> list[str]:
        """The output's columns: `PAIR_COLUMNS`, or all `OUTPUT_COLUMNS` with `rejected`."""
        return list(OUTPUT_COLUMNS) if self.rejected else PAIR_COLUMNS

    def output(self, steps: Sequence[RoutedSteps], frame: pd.DataFrame) -> pd.DataFrame:
        """The flat rows (`columns`) of `steps`' pairs and, if asked, of the records the first
        step rejected."""
        pairs = self._pairs(steps, frame["t"].to_numpy())
        if not self.rejected:
            return pd.DataFrame(pairs, columns=PAIR_COLUMNS)
        parts = [pd.DataFrame(pairs).assign(kind=PAIR), self._rejected(steps[0], frame)]
        parts = [_nullable_ints(part) for part in parts if len(part)]
        out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        out = out.reindex(columns=list(OUTPUT_COLUMNS))
        for name in out.columns[out.isna().all().to_numpy()]:
            out[name] = np.full(len(out), None, dtype=object)  # NaN floats are no null strings
        return out

    def _times(self, pairs: JoinedPairs, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The left and right records' times in the caller's unit."""
        if not self.times_from_engine:
            return t[pairs.left_pos], t[pairs.right_pos]
        left, right = pairs.left_t / self.to_ms, pairs.right_t / self.to_ms
        if self.integer_time or t.dtype.kind in "iu":
            return np.rint(left).astype(np.int64), np.rint(right).astype(np.int64)
        return left, right

    def _pairs(
        self, steps: Sequence[RoutedSteps], t: np.ndarray, coded: bool = False
    ) -> dict[str, np.ndarray]:
        """The pairs of all `steps` as columns (`PAIR_COLUMNS`), built once; `t`: the records'
        times in the order the steps' positions refer to; `coded`: things as the router's
        codes (`RoutedSteps.names`), not names."""
        index = {spec: k for k, spec in enumerate(self.specs)}
        parts: dict[str, list[np.ndarray]] = {name: [] for name in PAIR_COLUMNS}
        for step in steps:
            for spec, things, pairs in step.pairs_by_spec(codes=coded):
                left_t, right_t = self._times(pairs, t)
                if self.integer_time:
                    pair_t = (left_t + right_t) // 2
                else:
                    pair_t = (left_t.astype(np.float64) + right_t) / 2.0
                columns = {
                    "spec": np.full(len(things), index[spec], dtype=np.int32),
                    "thing": things,
                    "pair_t": pair_t,
                    "result": pairs.result,
                    "left_t": left_t,
                    "left_v": pairs.left_v,
                    "right_t": right_t,
                    "right_v": pairs.right_v,
                }
                for name, column in columns.items():
                    parts[name].append(column)
        if not parts["spec"]:
            return {}
        return {name: np.concatenate(column) for name, column in parts.items()}

    def _rejected(self, step: RoutedSteps, frame: pd.DataFrame) -> pd.DataFrame:
        """The records the engine did not accept (late, duplicate, malformed), with reasons."""
        index = {spec: k for k, spec in enumerate(self.specs)}
        parts = []
        for spec, _side, rows, verdicts in step.verdicts_by_spec():
            codes = verdicts.codes
            bad = np.flatnonzero(np.isin(codes, (LATE, DUPLICATE, MALFORMED)))
            if not len(bad):
                continue
            records = frame.iloc[rows[bad]]
            reasons = _reasons(spec, codes[bad], verdicts.watermark[bad], records)
            part = records.drop(columns=["row"]).assign(kind=REJECTED, spec=index[spec])
            parts.append(part.assign(reason=reasons).reset_index(drop=True))
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def new_router(
    specs: Sequence[JoinSpec],
    load_engine: Callable | None = None,
    load_states: Callable | None = None,
) -> JoinRouter:
    """A `JoinRouter` of `specs`: the compiled engine is imported here, where a join runs, not
    with the modules that build the join (the driver imports them to plan it)."""
    from statestream.join.router import JoinRouter

    return JoinRouter(specs, load_engine=load_engine, load_states=load_states)


def arrow_coded_names(
    column: pa.Array | pa.ChunkedArray, order: np.ndarray | None = None
) -> CodedNames:
    """A string column's values (in `order`, if given) as codes into its distinct names: Arrow
    finds them, numpy takes the codes by index, the router looks each name up once."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    coded = _few_equal_width_names(column)
    if coded is None:
        encoded = column.dictionary_encode()
        coded = encoded.indices.to_numpy(), encoded.dictionary.to_pylist()
    codes, names = coded
    if order is None:  # names in order of first occurrence, each occurring
        return CodedNames(codes, names, first_seen=True)
    return CodedNames(codes.take(order), names)


def arrow_utf8_names(
    column: pa.Array | pa.ChunkedArray, order: np.ndarray | None = None
) -> Utf8Names | CodedNames:
    """A string column's values (in `order`, if given) as their bytes, viewed in Arrow's buffers
    (the router codes them with a compiled index); another type's, `arrow_coded_names`'."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.type not in (pa.string(), pa.large_string()):
        return arrow_coded_names(column, order)
    if column.null_count:
        raise ValueError(f"{column.null_count} records without a name: drop or name them first")
    n = len(column)
    offset_type = np.int32 if column.type == pa.string() else np.int64
    _, offsets, data = column.buffers()
    if n == 0 or offsets is None:
        return Utf8Names(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint8))
    at = np.frombuffer(offsets, offset_type)[column.offset : column.offset + n + 1].astype(np.int64)
    names = Utf8Names(at[:-1], at[1:], np.frombuffer(data or b"", np.uint8))
    return names if order is None else names.take(order)


FEW_NAMES = 8  # at most this many distinct names for `_few_equal_width_names`
_WORDS = (8, 4, 2, 1)  # byte widths of the integers that compare a name's bytes


def _few_equal_width_names(column: pa.Array) -> tuple[np.ndarray, list] | None:
    """`dictionary_encode`'s codes (int32) and names (in order of first occurrence) of a string
    column without nulls whose names all have the same byte length and are at most `FEW_NAMES`
    (a quantity column, say); None for any other column.

    Each distinct name costs a few passes of integer comparisons over the column's bytes (a name
    read as overlapping 8-, 4-, 2- or 1-byte integers), no hashing: several times faster.
    """
    n = len(column)
    if n == 0 or column.null_count or column.type not in (pa.string(), pa.large_string()):
        return None
    if n > 4 * FEW_NAMES and len(column.slice(0, 4 * FEW_NAMES).unique()) > FEW_NAMES:
        return None
    offset_type = np.int32 if column.type == pa.string() else np.int64
    buffers = column.buffers()
    offsets = np.frombuffer(buffers[1], offset_type)[column.offset : column.offset + n + 1]
    width = int(offsets[1] - offsets[0])
    if not (np.diff(offsets) == width).all():
        return None
    codes = np.zeros(n, dtype=np.int32)
    if width == 0:
        return codes, [column[0].as_py()]
    words = _name_words(buffers[2], int(offsets[0]), width, n)
    names: list = []
    matched = np.zeros(n, dtype=bool)
    first = 0
    while True:
        same = words[0] == words[0][first]
        for word in words[1:]:
            same &= word == word[first]
        if names:  # each record matches one name: adding code · match is faster than a mask
            codes += same.view(np.uint8) * np.int32(len(names))
        names.append(column[first].as_py())
        matched |= same
        first = int(matched.argmin())
        if matched[first]:
            return codes, names
        if len(names) == FEW_NAMES:
            return None


def _name_words(data: pa.Buffer, start: int, width: int, n: int) -> list[np.ndarray]:
    """Views of n names of `width` bytes from byte `start` of `data`, each name as a few
    integers that together cover all its bytes (the last may overlap the one before)."""
    size = next(size for size in _WORDS if size <= width)
    at = [*range(0, width - size, size), width - size]
    dtype = np.dtype(f"<u{size}")
    return [
        np.ndarray((n,), dtype=dtype, buffer=data, offset=start + k, strides=(width,)) for k in at
    ]


def _nullable_ints(frame: pd.DataFrame) -> pd.DataFrame:
    """Integer columns as pandas' nullable integers: exact next to the nulls of another kind."""
    ints = [name for name, dtype in frame.dtypes.items() if dtype.kind in "iu"]
    return frame.astype({name: "Int64" for name in ints}) if ints else frame


def _reasons(
    spec: JoinSpec, codes: np.ndarray, watermark: np.ndarray, records: pd.DataFrame
) -> list[str]:
    join = f"(join {spec.result})"
    quantities = records["quantity"].tolist()
    reasons = []
    for code, mark, quantity in zip(codes.tolist(), watermark.tolist(), quantities, strict=True):
        if code == LATE:
            reasons.append(f"late: below its series' watermark {mark:.0f} ms {join}")
        elif code == DUPLICATE:
            reasons.append(f"duplicate: same time and value as an accepted record {join}")
        else:
            reasons.append(f"value of {quantity} cannot be taken by {spec.function_name} {join}")
    return reasons
