"""The streams to compact, as the cluster describes them (REST): table URI and settings.

The compaction job needs no ZooKeeper and no node internals: ``describe`` names the stream's
Delta table (``lake.uri``) and carries its spec, which is all a run needs.
"""

from __future__ import annotations

from typing import Any

from datasource.compaction.errors import UnsupportedLakeError
from datasource.compaction.settings import CompactionTarget
from spark_log.rest import RestClient
from spark_log.stream_spec import DEFAULT_DELETE_RETENTION_MS


def describe_target(client: RestClient, stream: str) -> CompactionTarget:
    """The stream's target from ``GET /v1/streams/{stream}``."""
    return target_from_describe(client.get_json(f"/v1/streams/{stream}"))


def target_from_describe(body: dict[str, Any]) -> CompactionTarget:
    lake = body.get("lake")
    if not lake:
        raise UnsupportedLakeError(
            f"stream {body['name']} has no lake (the cluster's lake is disabled): "
            "nothing to compact"
        )
    return CompactionTarget(
        stream=body["name"],
        table_uri=lake["uri"],
        partitions=len(body["partitions"]),
        delete_retention_ms=int(body.get("delete_retention_ms", DEFAULT_DELETE_RETENTION_MS)),
        compaction_enabled=bool(body.get("compaction", False)),
        compaction_interval_s=body.get("compaction_interval_s"),
    )


def scheduled_streams(client: RestClient) -> list[str]:
    """Streams with compaction on and an interval: what ``--watch`` looks after."""
    return [
        s["name"]
        for s in client.get_json("/v1/streams")["streams"]
        if s.get("compaction") and s.get("compaction_interval_s")
    ]
