"""The streams to compact, as the cluster describes them (REST): table URI and settings.

The compaction job needs no ZooKeeper and no node internals: ``describe`` names the stream's
Delta table (``lake.uri``) and carries its spec. How to reach the lake's store (endpoint,
credentials) is the operator's to give (``lake_options``, the Spark session conf
``spark.liftlog.lake.*``) or the environment's, never describe's: describe must not carry
secrets.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from datasource.compaction.errors import UnsupportedLakeError
from datasource.compaction.lake_options import from_environment
from datasource.compaction.settings import CompactionTarget
from datasource.lake_keys import LakeKeySource
from spark_log.api_models import StreamDescription, StreamList
from spark_log.client.rest import RestClient


def describe_target(
    client: RestClient,
    stream: str,
    lake_options: Mapping[str, str] | None = None,
    file_options: Mapping[str, str] | None = None,
) -> CompactionTarget:
    """The stream's target from ``GET /v1/streams/{stream}``, reached with ``lake_options``
    (the lake's store options: the operator's, since describe carries no secrets) over the
    environment's, over ``file_options`` (the credentials file's ``[lake]``)."""
    described = StreamDescription.from_json(client.get_json(f"/v1/streams/{stream}"))
    keys = LakeKeySource(tuple(client.servers), described.name, client.credentials)
    return target_from_describe(described, lake_options, keys, file_options)


def target_from_describe(
    described: StreamDescription,
    lake_options: Mapping[str, str] | None = None,
    keys: LakeKeySource | None = None,
    file_options: Mapping[str, str] | None = None,
) -> CompactionTarget:
    """The target from a describe (what ``Client.describe_stream`` returns, too); ``keys``:
    where an encrypted stream's data keys are fetched (without it, its files are not
    rewritten)."""
    if described.lake is None:
        raise UnsupportedLakeError(
            f"stream {described.name} has no lake (the cluster's lake is disabled): "
            "nothing to compact"
        )
    return CompactionTarget(
        stream=described.name,
        table_uri=described.lake.uri,
        partitions=len(described.partitions),
        delete_retention_ms=described.delete_retention_ms,
        compaction_enabled=described.compaction,
        compaction_interval_s=described.compaction_interval_s,
        storage_options={k.lower(): v for k, v in (lake_options or {}).items()},
        environment_options={
            **(file_options or {}),
            **from_environment(described.lake.uri, os.environ),
        },
        encrypted=described.encryption,
        keys=keys if described.encryption else None,
    )


def scheduled_streams(client: RestClient) -> list[str]:
    """Streams with compaction on and an interval: what ``--watch`` looks after."""
    listed = StreamList.from_json(client.get_json("/v1/streams"))
    return [s.name for s in listed.streams if s.compaction and s.compaction_interval_s]
