"""The table `statestream bench pipeline` prints: its figures (its --json object) in words.

A figure a run did not make (a part skipped, Spark reporting none) leaves its rows out.
"""

from __future__ import annotations

from rich.table import Table


def pipeline_table(f: dict) -> Table:
    """The figures of `bench pipeline` (its --json object) as a table of two columns."""
    table = Table(title="statestream bench pipeline", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("input", f"{f['records']:,} records, {f['things']} machines"),
        (
            "warm-up (a join query of its own)",
            f"{f.get('warmup_records', 0):,} records, {f.get('warmup_seconds', 0)} s",
        ),
        ("spark", _where(f)),
        ("join: records/s", f"{f['records_per_s']:,}"),
        ("join: records/s per task core", _per_core(f)),
        ("join: records/s after the first batch", _after_first(f["sustained_records_per_s"])),
        ("join: pairs/s", f"{f['pairs_per_s']:,}"),
        ("join: pairs (expected)", f"{f['pairs']:,} ({f['expected_pairs']:,})"),
        (
            "join: missed / extra / twice",
            f"{f['pairs_missed']} / {f['pairs_extra']} / {f['pairs_duplicated']}",
        ),
        ("join: batches, seconds", f"{f['batches']}, {f['seconds']} s"),
        (
            "bytes returned to the driver per batch",
            f"{f['driver_result_bytes_per_batch']:,} at most (Spark's resultSize)",
        ),
        ("state rows per batch", " ".join(f"{n:,}" for n in f["state_rows"])),
        *_passthrough_rows(f),
        (
            f"latency p50 / p99 at {f['latency_rate']:,.0f}/s",
            f"{f['latency_p50_s']} s / {f['latency_p99_s']} s",
        ),
        *_cold_latency_rows(f),
        *_data_wait_rows(f),
        *_batch_time_rows(f.get("latency_batch") or {}),
        *_checkpoint_rows(f.get("latency_checkpoint_bytes") or []),
        *_burst_rows(f),
    ]
    if "baseline_records_per_s" in f:
        rows += [
            ("windowed join: records", f"{f['baseline_records']:,}"),
            ("windowed join: records/s", f"{f['baseline_records_per_s']:,}"),
            ("windowed join: pairs", f"{f['baseline_pairs']:,}"),
            (
                "windowed join: missed / extra",
                f"{f['baseline_pairs_missed']:,} / {f['baseline_pairs_extra']:,}",
            ),
            ("ratio of records/s", f"{f['records_per_s'] / f['baseline_records_per_s']:.1f}×"),
        ]
    for row in rows:
        table.add_row(*row)
    return table


def _where(f: dict) -> str:
    """The master, and the local cluster's workers when the bench ran on it."""
    master = f.get("spark_master", "?")
    if f.get("spark_workers"):
        return f"{master}: {f['spark_workers']} workers × {f['spark_worker_cores']} cores"
    return master


def _per_core(f: dict) -> str:
    per_core = f.get("records_per_s_per_core")
    return f"{per_core:,} ({f['task_cores']} cores)" if per_core else "—"


def _after_first(records_per_s: int | None) -> str:
    """Records/s after the first batch; a run of one batch (a small --records) has none."""
    return f"{records_per_s:,}" if records_per_s is not None else "— (one batch only)"


def _passthrough_rows(f: dict) -> list[tuple[str, str]]:
    """The same input passed through the same sink unchanged, if it ran, and the join's records/s
    as a fraction of the pass-through's (`join_to_passthrough`)."""
    if "passthrough_records_per_s" not in f:
        return []
    ratio = f.get("join_to_passthrough")
    written = f"{f['passthrough_records_out']:,}, " + (
        "each input record once, unchanged"
        if f["passthrough_unchanged"]
        else "NOT the input's records"
    )
    return [
        ("pass-through (same input, same sink): records/s", f"{f['passthrough_records_per_s']:,}"),
        (
            "pass-through: records/s after the first batch",
            _after_first(f.get("passthrough_sustained_records_per_s")),
        ),
        (
            "pass-through: batches, seconds",
            f"{f['passthrough_batches']}, {f['passthrough_seconds']} s",
        ),
        ("pass-through: records written", written),
        ("join / pass-through (records/s)", "—" if ratio is None else f"{ratio:.3f}"),
    ]


def _data_wait_rows(f: dict) -> list[tuple[str, str]]:
    """Latency from the later of a pair's records, and how many pairs waited for a later one."""
    if f.get("latency_after_later_record_p50_s") is None:
        return []
    after = f"{f['latency_after_later_record_p50_s']} s / {f['latency_after_later_record_p99_s']} s"
    waiting = f"{f['latency_pairs_waiting_for_data']:,} of {f['latency_pairs']:,}"
    burst = (
        f"{f['latency_largest_burst']:,} pairs, all visible within {f['latency_burst_seconds']} s"
    )
    return [
        ("  from the later of its records", after),
        ("  pairs certain only with a later record", waiting),
        (f"  most pairs certain within {f['latency_trigger_interval_s']} s", burst),
    ]


def _burst_rows(f: dict) -> list[tuple[str, str]]:
    """The burst part: how long until a release of many pairs at once was all visible."""
    if "burst_pairs_expected" not in f:
        return []
    seen = f"{f['burst_pairs']:,} of {f['burst_pairs_expected']:,} pairs"
    parts = f"{f['burst_wait_ms']} / {f['burst_batch_ms']} / {f['burst_visible_after_ms']} ms"
    batches = f.get("burst_batches", 1)
    read_in = "its batch / batch" if batches == 1 else f"its {batches} batches / batches"
    return [
        (f"burst: {f['burst_records']:,} records release", seen),
        ("burst: all visible within", f"{f['burst_seconds']} s"),
        (f"burst: wait for {read_in} / read", parts),
    ]


def _cold_latency_rows(f: dict) -> list[tuple[str, str]]:
    """The first latency run's p50 / p99, if there was one."""
    if f.get("cold_latency_p50_s") is None:
        return []
    return [
        (
            f"  first {f['cold_latency_seconds']:g} s run (cold), p50 / p99",
            f"{f['cold_latency_p50_s']} s / {f['cold_latency_p99_s']} s",
        )
    ]


def _batch_time_rows(batch: dict) -> list[tuple[str, str]]:
    """Where a batch of the latency run spends its time (medians), if Spark reported it."""
    if not batch:
        return []
    parts = (
        f"planning {batch['planning_ms']:.0f}, offset log {batch['offset_log_ms']:.0f}, "
        f"job with the tasks' Kafka transactions {batch['execution_ms']:.0f}, "
        f"commit log {batch['commit_log_ms']:.0f}"
    )
    rows = [
        ("latency: batch (median)", f"{batch['records']:,.0f} records, {batch['batch_ms']:.0f} ms"),
        ("latency: of which, ms", parts),
        (
            "latency: batch p99 / slowest",
            f"{batch['batch_p99_ms']:.0f} / {batch['batch_max_ms']:.0f} ms",
        ),
    ]
    if "state_commit_ms" in batch:
        state = f"load {batch['state_load_ms']:.0f}, commit {batch['state_commit_ms']:.0f}"
        rows.append(("latency: state store per task, ms", state))
    return rows


def _checkpoint_rows(sizes: list[int]) -> list[tuple[str, str]]:
    """The latency query's checkpoint on disk: the median size in each third of its run."""
    if not sizes:
        return []
    return [
        ("latency: checkpoint MB, thirds (median)", " / ".join(f"{b / 1e6:.1f}" for b in sizes))
    ]
