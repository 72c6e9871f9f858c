"""Executor side: an encrypted partition's data key, asked of any node over REST.

An encrypted stream's lake files are Parquet modular-encrypted under each partition's data key
(``spark_log.crypto.parquet_kms``). A task that reads lake files asks a node for that key
(allowed to whoever may consume the stream, like a fetch), so Spark never holds the cluster's
master key and the key never travels inside the query plan.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field

from datasource.tasks import ReadSettings
from spark_log.api_models import PartitionDataKey
from spark_log.client.credentials import ClientCredentials
from spark_log.client.rest import RestClient
from spark_log.crypto.parquet_kms import PartitionFileCrypto
from spark_log.crypto.value_cipher import DATA_KEY_BYTES
from spark_log.errors import KeyUnavailableError


@dataclass(frozen=True)
class LakeKeySource:
    """Where a compaction task asks for an encrypted stream's data keys: the nodes and what
    to present to them (picklable, shipped with the task as a read's settings are; the key
    itself is fetched on the executor and never travels in the plan)."""

    servers: tuple[str, ...]
    stream: str
    credentials: ClientCredentials = field(default_factory=ClientCredentials, repr=False)

    def file_crypto(self, partition: int) -> PartitionFileCrypto:
        """The partition's file keys, fetched from a node now."""
        rest = RestClient(list(self.servers), credentials=self.credentials)
        return fetch_file_crypto(rest, self.stream, partition)


def partition_crypto(settings: ReadSettings, partition: int) -> PartitionFileCrypto | None:
    """The partition's file keys when the stream is encrypted; None for a clear stream."""
    if not settings.encrypted:
        return None
    return fetch_file_crypto(
        RestClient(settings.servers, credentials=settings.credentials), settings.stream, partition
    )


def fetch_file_crypto(rest: RestClient, stream: str, partition: int) -> PartitionFileCrypto:
    """The partition's file keys, from its data key as a node hands it out."""
    path = f"/v1/streams/{stream}/partitions/{partition}/data-key"
    answer = PartitionDataKey.from_json(rest.get_json(path))
    try:
        key = base64.b64decode(answer.data_key, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise KeyUnavailableError(
            f"the node sent an unusable data key for {stream}/{partition}"
        ) from exc
    if len(key) != DATA_KEY_BYTES:
        raise KeyUnavailableError(
            f"the node sent a {len(key)}-byte data key for {stream}/{partition}"
        )
    return PartitionFileCrypto(stream, partition, key)
