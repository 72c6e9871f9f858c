"""The node's verdict on its lake's store: may Delta commits be made there at all?

Checked once per node, on a lake thread, before the first export (``commit_safety``); a safe
verdict is kept for the node's life, an unsafe one too (only a config change, which takes a
restart, can change it). A store that could not be checked is asked again on the next round.
Every refusal is counted (``liftlog_lake_unsafe_store_refusals_total``) and the reason is what
flush answers and describe shows.
"""

from __future__ import annotations

import logging
import threading

from ingest.metrics import NodeMetrics
from spark_log.lake.commit_safety import check_commit_safety
from spark_log.lake.errors import UnsafeLakeStoreError
from spark_log.lake.storage import LakeStorage

log = logging.getLogger("liftlog.lake")


class LakeSafety:
    """Thread-safe, checked lazily: a node whose partitions never export never probes."""

    def __init__(self, storage: LakeStorage, metrics: NodeMetrics) -> None:
        self._storage = storage
        self._metrics = metrics
        self._lock = threading.Lock()
        self._safe = False
        self._refusal: UnsafeLakeStoreError | None = None

    @property
    def refusal(self) -> str | None:
        """Why this node refuses to export (None: it does not, or has not checked yet)."""
        refusal = self._refusal
        return None if refusal is None else f"{refusal.code}: {refusal.message}"

    def verify(self) -> None:
        """Return if exports may commit; UnsafeLakeStoreError (counted) if never, LakeError
        if the store cannot be checked right now."""
        with self._lock:
            if self._safe:
                return
            if self._refusal is None:
                self._check()
            if self._refusal is not None:
                self._metrics.lake_unsafe_store_refusals.inc()
                raise self._refusal

    def _check(self) -> None:
        try:
            check_commit_safety(self._storage)
        except UnsafeLakeStoreError as exc:
            log.error("%s", exc.message)
            self._refusal = exc
        else:
            self._safe = True
