"""``POST /v1/encryption/rotate``: re-wrap every partition's data key under the current master
key of the node that receives the call (docs/security.md, "Encryption at rest").

Only the wrapped-key znodes change; segments and lake files keep their bytes, because the
data keys themselves do not change.
"""

from __future__ import annotations

import asyncio
import base64

from fastapi import FastAPI, Response

from coordinator.partition_keys import key_context, read_key, rewrap_all
from ingest.admin.node_view import NodeView
from spark_log.api_models import EncryptionRotation, PartitionDataKey
from spark_log.crypto import KeyProvider
from spark_log.errors import (
    EncryptionUnavailableError,
    InvalidRequestError,
    PartitionNotFoundError,
)


def install_encryption_routes(app: FastAPI, node: NodeView) -> None:
    @app.post("/v1/encryption/rotate", tags=["cluster"], response_model=EncryptionRotation)
    async def rotate_master_key() -> EncryptionRotation:
        """Re-wrap every data key under this node's master key; the node must also hold the
        previous master key (``previous_master_key``) to unwrap the keys it re-wraps."""
        return await rotate(node)

    @app.get(
        "/v1/streams/{stream}/partitions/{partition}/data-key",
        tags=["records"],
        response_model=PartitionDataKey,
    )
    async def data_key(stream: str, partition: int, response: Response) -> PartitionDataKey:
        """The partition's data key (base64), for readers of the lake's encrypted values;
        allowed to whoever may consume the stream. The answer is a secret: no cache keeps
        it (``Cache-Control: no-store``)."""
        found = await partition_data_key(node, stream, partition)
        response.headers["Cache-Control"] = "no-store"
        return found


async def rotate(node: NodeView) -> EncryptionRotation:
    provider = _provider(node, "rotate to")
    result = await asyncio.to_thread(rewrap_all, node.zk, provider)
    return EncryptionRotation(result.key_id, result.rewrapped, result.unchanged)


async def partition_data_key(node: NodeView, stream: str, partition: int) -> PartitionDataKey:
    record = await asyncio.to_thread(node.store.get, stream)
    if not record.spec.encryption:
        raise InvalidRequestError(f"stream {stream!r} is not encrypted: it has no data key")
    if not 0 <= partition < record.spec.partitions:
        raise PartitionNotFoundError(f"stream {stream!r} has no partition {partition}")
    provider = _provider(node, "unwrap data keys with")
    wrapped, _version = await asyncio.to_thread(read_key, node.zk, stream, partition)
    key = provider.unwrap(wrapped.wrapped_key(), key_context(stream, partition))
    return PartitionDataKey(stream, partition, base64.b64encode(key).decode("ascii"))


def _provider(node: NodeView, what: str) -> KeyProvider:
    provider = node.replicas.key_provider
    if provider is None:
        raise EncryptionUnavailableError(
            f"this node has no master key to {what}: set [encryption] master_key "
            "(and, for a rotation, previous_master_key)"
        )
    return provider
