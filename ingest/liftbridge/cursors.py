"""SetCursor and FetchCursor, on the node's ``CursorService`` (the cursors of ``__cursors``).

Any node answers: the service forwards a cursor to the leader of its ``__cursors`` partition
when this node does not lead it, so a client asking whichever node it believes leads cursors
is never refused. A cursor never set reads as -1, Liftbridge's answer, rather than NOT_FOUND.
"""

from __future__ import annotations

from ingest.liftbridge.calls import RpcCall
from ingest.liftbridge.groups import refuse_unassigned_checkpoint
from spark_log.cursor_record import NOTHING_PROCESSED
from spark_log.errors import CursorNotFoundError, InvalidRequestError
from spark_log.liftbridge import api_pb2 as pb


async def set_cursor(call: RpcCall, request: pb.SetCursorRequest) -> pb.SetCursorResponse:
    """Store the offset as the client gives it (gufo-liftbridge stores the next offset to
    read, the Go client the last one processed); a ``__group:`` cursor of a group with
    members takes only the checkpoints of partitions the group assigned (a Liftbridge group
    consumer's own checkpoint: ingest/liftbridge/groups.py)."""
    _require_target(request.stream, request.cursorId)
    await refuse_unassigned_checkpoint(call, request.cursorId, request.stream, request.partition)
    await call.services.cursors.set(
        request.stream, request.partition, request.cursorId, request.offset, forwarded=False
    )
    return pb.SetCursorResponse()


async def fetch_cursor(call: RpcCall, request: pb.FetchCursorRequest) -> pb.FetchCursorResponse:
    """The stored offset, or -1 for a cursor never set (or deleted)."""
    _require_target(request.stream, request.cursorId)
    try:
        cursor = await call.services.cursors.fetch(
            request.stream, request.partition, request.cursorId, forwarded=False
        )
    except CursorNotFoundError:
        return pb.FetchCursorResponse(offset=NOTHING_PROCESSED)
    return pb.FetchCursorResponse(offset=cursor.offset)


def _require_target(stream: str, cursor_id: str) -> None:
    if not stream:
        raise InvalidRequestError("no stream provided")
    if not cursor_id:
        raise InvalidRequestError("no cursorId provided")
