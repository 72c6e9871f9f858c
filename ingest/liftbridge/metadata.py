"""FetchMetadata and FetchPartitionMetadata. (not served yet)"""

from __future__ import annotations

from ingest.liftbridge.calls import RpcCall
from spark_log.errors import InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb


async def fetch_metadata(
    call: RpcCall, request: pb.FetchMetadataRequest
) -> pb.FetchMetadataResponse:
    raise InvalidRequestError("fetch_metadata is not served yet")


async def fetch_partition_metadata(
    call: RpcCall, request: pb.FetchPartitionMetadataRequest
) -> pb.FetchPartitionMetadataResponse:
    raise InvalidRequestError("fetch_partition_metadata is not served yet")
