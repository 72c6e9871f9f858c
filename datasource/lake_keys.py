"""Executor side: an encrypted partition's data key, asked of any node over REST.

The lake holds an encrypted stream's values as AES-GCM ciphertexts under each partition's
data key. A task that reads lake files asks a node for that key (allowed to whoever may
consume the stream, like a fetch), so Spark never holds the cluster's master key and the key
never travels inside the query plan.
"""

from __future__ import annotations

import base64
import binascii

from datasource.tasks import ReadSettings
from spark_log.api_models import PartitionDataKey
from spark_log.crypto import ValueCipher
from spark_log.errors import KeyUnavailableError
from spark_log.rest import RestClient


def partition_cipher(settings: ReadSettings, partition: int) -> ValueCipher | None:
    """The partition's value cipher when the stream is encrypted; None for a clear stream."""
    if not settings.encrypted:
        return None
    rest = RestClient(settings.servers, credentials=settings.credentials)
    path = f"/v1/streams/{settings.stream}/partitions/{partition}/data-key"
    answer = PartitionDataKey.from_json(rest.get_json(path))
    try:
        return ValueCipher(base64.b64decode(answer.data_key, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise KeyUnavailableError(
            f"the node sent an unusable data key for {settings.stream}/{partition}"
        ) from exc
