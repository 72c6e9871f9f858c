"""The ``[limits]`` a stream create must stay within: name length, partitions per stream, and
the cluster's number of streams and partitions.

Checked by the node that takes the create, before ZooKeeper is written. An identical spec that
already exists passes (creation stays idempotent at the limit). Two creates racing on different
nodes may together pass a count bound by one stream: the bound is there to stop runaway
clients, not to be an exact quota.
"""

from __future__ import annotations

from coordinator.streams import StreamStore
from spark_log.errors import InvalidRequestError, LimitExceededError
from spark_log.json_types import JsonMapping
from spark_log.limits_config import LimitsConfig
from spark_log.stream_spec import StreamSpec


def check_stream_limits(store: StreamStore, limits: LimitsConfig, spec: StreamSpec) -> None:
    """Raise InvalidRequestError (the spec alone is over a bound) or LimitExceededError (the
    cluster would be); blocking (ZooKeeper reads), so run it in a thread."""
    check_spec_limits(limits, spec)
    existing = store.list()
    if any(record.spec.name == spec.name for record in existing):
        return  # idempotent or conflicting create: the store answers it
    if len(existing) + 1 > limits.max_streams:
        raise LimitExceededError(
            f"the cluster holds {len(existing)} streams; limits.max_streams is "
            f"{limits.max_streams}: delete a stream or raise the limit"
        )
    total = sum(record.spec.partitions for record in existing)
    if total + spec.partitions > limits.max_partitions_total:
        raise LimitExceededError(
            f"the cluster holds {total} partitions; {spec.partitions} more would pass "
            f"limits.max_partitions_total ({limits.max_partitions_total})"
        )


def check_spec_limits(limits: LimitsConfig, spec: StreamSpec) -> None:
    """The bounds a spec is over on its own, whatever the cluster holds."""
    if len(spec.name) > limits.max_stream_name_length:
        raise InvalidRequestError(
            f"stream name of {len(spec.name)} characters is longer than "
            f"limits.max_stream_name_length ({limits.max_stream_name_length})"
        )
    if spec.partitions > limits.max_partitions_per_stream:
        raise InvalidRequestError(
            f'"partitions" {spec.partitions} is more than limits.max_partitions_per_stream '
            f"({limits.max_partitions_per_stream})"
        )


def check_growth_limits(
    store: StreamStore, limits: LimitsConfig, name: str, changes: JsonMapping
) -> None:
    """An alter that grows a stream stays within the bounds a create of that size would:
    partitions per stream and the cluster's total (blocking: ZooKeeper reads)."""
    wanted = changes.get("partitions")
    if not isinstance(wanted, int):
        return
    if wanted > limits.max_partitions_per_stream:
        raise InvalidRequestError(
            f'"partitions" {wanted} is more than limits.max_partitions_per_stream '
            f"({limits.max_partitions_per_stream})"
        )
    existing = store.list()
    current = next((r.spec.partitions for r in existing if r.spec.name == name), wanted)
    total = sum(record.spec.partitions for record in existing)
    if wanted > current and total + wanted - current > limits.max_partitions_total:
        raise LimitExceededError(
            f"the cluster holds {total} partitions; {wanted - current} more would pass "
            f"limits.max_partitions_total ({limits.max_partitions_total})"
        )
