"""Is it safe to make Delta commits on this lake's store? Checked before a node's first export.

Delta's commit protocol is "create ``_delta_log/<version>.json`` unless it exists". Local and
network filesystems, GCS and Azure do that atomically; S3 only with conditional writes
(``If-None-Match: *``, delta-rs's ``conditional_put = "etag"``, object_store's default) or with
a lock (``aws_s3_locking_provider = "dynamodb"``). An S3-compatible store that ignores the
header accepts both of two racing creates: two exporters then both "commit" one version, one
commit silently replaces the other, and the lake loses records while both leaders believe they
exported. So an ``s3://`` lake is not trusted on its options alone:

1. options that turn the protection off are refused outright (``conditional_put`` other than
   ``etag``/``dynamo...`` without a locking provider);
2. the store is then probed with delta-rs itself: ``PROBE_WRITERS`` writers race to create
   version 0 of a fresh probe table under ``<lake>/_liftlog/commit-probe/``; every writer
   told "committed" must have its row in the table. One winner and the others refused is a
   store that enforces put-if-absent; more winners than rows means a commit was overwritten.

A store that cannot be checked (unreachable) is a transient LakeError; one that failed the
check is refused with UnsafeLakeStoreError, and nothing is committed to it. Exporters (before a
node's first export) and the compaction job (before it runs, once per table) both go through
``check_commit_safety``; ``action`` names which one refuses.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError

from spark_log.errors import LakeError
from spark_log.lake.errors import UnsafeLakeStoreError
from spark_log.lake.storage import CONDITIONAL_PUT_ETAG, CONDITIONAL_PUT_OPTION, LakeStorage

PROBE_DIR = "_liftlog/commit-probe"
PROBE_WRITERS = 4
PROBE_JOIN_TIMEOUT_S = 60.0
LOCKING_PROVIDER_OPTION = "aws_s3_locking_provider"
DYNAMO_LOCKING_PROVIDER = "dynamodb"
DYNAMO_CONDITIONAL_PUT_PREFIX = "dynamo"
PROBE_COLUMN = "writer"
PROBE_ERRORS = (DeltaError, OSError, ValueError, pa.ArrowException, threading.BrokenBarrierError)
EXPORT_ACTION = "export to"
"""How a refusal names what was refused (``refusing to export to s3://...``)."""
REMEDY = (
    'configure put-if-absent for Delta commits: conditional_put = "etag" in the lake\'s '
    "storage options ([lake.storage_options] of a node, --lake-option or lake.* options of a "
    "compaction) on a store that enforces If-None-Match (AWS S3, SeaweedFS, recent MinIO), or "
    'aws_s3_locking_provider = "dynamodb" with delta_dynamo_table_name'
)


@dataclass(frozen=True)
class ProbeOutcome:
    """What the racing writers were told, and what the table holds afterwards."""

    committed: int
    """Writers whose commit returned successfully."""
    refused: int
    """Writers whose commit failed as a lost race (CommitFailedError)."""
    rows: int
    """Rows the probe table holds (each writer wrote one)."""


def check_commit_safety(storage: LakeStorage, action: str = EXPORT_ACTION) -> None:
    """Return if Delta commits on ``storage`` are atomic; UnsafeLakeStoreError if not (never
    to be risked), LakeError if the store cannot be checked now. Only S3 lakes are probed:
    the other stores delta-rs writes to create files atomically by themselves. ``action``
    completes "refusing to ..." in the error (``export to``, ``commit a compaction to``)."""
    if not storage.is_s3:
        return
    refuse_unsafe_options(storage, action)
    judge(storage.uri, race_probe(storage), action)


def refuse_unsafe_options(storage: LakeStorage, action: str = EXPORT_ACTION) -> None:
    """Options that switch put-if-absent off are refused without touching the store."""
    options = storage.delta_options()
    if options.get(LOCKING_PROVIDER_OPTION, "").lower() == DYNAMO_LOCKING_PROVIDER:
        return
    mode = options.get(CONDITIONAL_PUT_OPTION, "").lower()
    if mode == CONDITIONAL_PUT_ETAG or mode.startswith(DYNAMO_CONDITIONAL_PUT_PREFIX):
        return
    raise UnsafeLakeStoreError(
        f"refusing to {action} {storage.uri}: its storage options set conditional_put = "
        f"{mode!r} and no locking provider, so two writers could both commit one Delta "
        f"version and one commit would be lost; {REMEDY}"
    )


def judge(uri: str, outcome: ProbeOutcome, action: str = EXPORT_ACTION) -> None:
    """The verdict on one probe: every writer told "committed" must be in the table."""
    if outcome.committed == outcome.rows and outcome.committed >= 1:
        return
    if outcome.committed == 0:
        raise LakeError(f"the commit probe on {uri} could not commit at all ({outcome})")
    raise UnsafeLakeStoreError(
        f"refusing to {action} {uri}: the store does not enforce put-if-absent — "
        f"{outcome.committed} of {PROBE_WRITERS} writers racing to create one Delta version "
        f"were told they committed, but the table holds {outcome.rows} row(s), so a commit "
        f"was silently overwritten; {REMEDY}"
    )


def race_probe(storage: LakeStorage) -> ProbeOutcome:
    """Race PROBE_WRITERS creates of version 0 of a fresh probe table; removed afterwards."""
    uri = f"{storage.uri.rstrip('/')}/{PROBE_DIR}/{uuid.uuid4().hex}"
    options = storage.at(uri).delta_options()
    results: list[Exception | None] = [None] * PROBE_WRITERS
    start = threading.Barrier(PROBE_WRITERS)

    def write(i: int) -> None:
        try:
            start.wait()
            table = pa.table({PROBE_COLUMN: pa.array([i], pa.int32())})
            write_deltalake(uri, table, mode="append", storage_options=options)
        except PROBE_ERRORS as exc:  # each writer's outcome is data here
            results[i] = exc

    threads = [threading.Thread(target=write, args=(i,), daemon=True) for i in range(PROBE_WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PROBE_JOIN_TIMEOUT_S)
    try:
        return _outcome(uri, options, results)
    finally:
        _remove(storage, uri)


def _outcome(uri: str, options: dict[str, str], results: list[Exception | None]) -> ProbeOutcome:
    failures = [r for r in results if r is not None]
    unexpected = [r for r in failures if not isinstance(r, CommitFailedError)]
    if unexpected:
        raise LakeError(f"the commit probe on {uri} failed: {unexpected[0]}") from unexpected[0]
    try:
        rows = DeltaTable(uri, storage_options=options).to_pyarrow_table().num_rows
    except (DeltaError, OSError, ValueError, pa.ArrowException) as exc:
        raise LakeError(f"cannot read back the commit probe {uri}: {exc}") from exc
    return ProbeOutcome(len(results) - len(failures), len(failures), rows)


def _remove(storage: LakeStorage, uri: str) -> None:
    """Best effort: a probe left behind is a few bytes under ``_liftlog/``, never read."""
    try:
        filesystem, path = storage.filesystem_for(uri)
        filesystem.delete_dir(path)
    except (LakeError, OSError, pa.ArrowException):
        return
