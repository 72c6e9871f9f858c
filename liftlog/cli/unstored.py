"""A publish without an ack (``--ack-policy none``, or a stream whose policy is ``none``) hears
nothing back, so a paused or read-only stream drops its records unseen. ``liftlog publish``
then asks the stream's state once and says on stderr what was not stored, and how to fix it."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from spark_log.errors import LiftlogError

if TYPE_CHECKING:
    from spark_log.api_models import StreamDescription
    from spark_log.client import Client


async def warn_if_not_stored(client: Client, stream: str, unacked: int) -> None:
    """After ``unacked`` records went out without an ack: a warning on stderr when the stream
    is paused or read-only. A describe that fails says nothing: the records went out."""
    if unacked == 0:
        return
    try:
        described = await client.describe_stream(stream)
    except LiftlogError:
        return
    warning = not_stored_warning(described, unacked)
    if warning is not None:
        print(f"liftlog: warning: {warning}", file=sys.stderr, flush=True)


def not_stored_warning(stream: StreamDescription, unacked: int) -> str | None:
    """Why a stream did not store records published without an ack; None when it does."""
    records = "1 record was" if unacked == 1 else f"{unacked} records were"
    if stream.read_only:
        state, fix = "read-only", f"liftlog stream readwrite {stream.name}"
    elif stream.paused:
        state, fix = "paused", f"liftlog stream resume {stream.name}"
    else:
        return None
    return (
        f"stream {stream.name} is {state}: {records} published without an ack and not "
        f"stored (no ack, so no error came back); run `{fix}`, or publish with "
        "--ack-policy leader to see the refusal"
    )
