"""A replica whose disk ran out of space: what counts as that, the stall, and its backoff.

A full disk is the one storage failure that fixes itself from outside (another stream is
deleted, the volume grows), so a replica stalled by it retries on its own instead of staying
offline until a restart; any other I/O failure still takes the replica offline for good. The
rules here are pure (no I/O, no clock, no asyncio) so they are unit-tested directly.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from spark_log.log.errors import FsyncError

OUT_OF_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
"""No space left, quota exceeded: each clears once space is freed. Not EFBIG: a file at its
size limit stays there whatever is freed (and a small probe file succeeds), so it would stall
and resume forever; it takes the replica offline like any other I/O error."""

STORAGE_RETRY_INITIAL_S = 0.1
STORAGE_RETRY_MAX_S = 5.0
_MAX_DOUBLINGS = 64  # past this the cap has long been reached; keeps the float finite


def is_out_of_space(exc: BaseException) -> bool:
    """Whether ``exc``, or an error it was explicitly raised from (``__cause__``: a
    ``StorageError`` wraps the ``OSError``), is an out-of-space ``OSError``.

    Never a failed fsync (``FsyncError``), whatever its errno: the kernel may have dropped the
    pages it could not write, so retrying once space is back would serve lost data. Nor an
    error merely raised while handling one (``__context__``): e.g. a cleanup failing after a
    full disk says nothing about what failed last."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, FsyncError):
            return False
        if isinstance(current, OSError) and current.errno in OUT_OF_SPACE_ERRNOS:
            return True
        current = current.__cause__
    return False


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: ``initial_s`` doubling (by ``factor``) up to ``max_s``."""

    initial_s: float = STORAGE_RETRY_INITIAL_S
    factor: float = 2.0
    max_s: float = STORAGE_RETRY_MAX_S

    def delay_s(self, attempt: int) -> float:
        """The wait before retry number ``attempt`` (0 for the first)."""
        exponent = min(max(attempt, 0), _MAX_DOUBLINGS)
        return min(self.max_s, self.initial_s * self.factor**exponent)

    def first_attempt(self, previous: StallEnd | None, now_s: float) -> int:
        """The attempt a new stall starts its backoff at: 0, unless the previous stall ended
        less than ``max_s`` ago. A disk with room for the probe but not for a cycle resumes
        and stalls again at once; restarting at ``initial_s`` each time would hammer it (and
        the log) forever, so the backoff keeps growing from where the last stall left it."""
        if previous is None or now_s - previous.at_s >= self.max_s:
            return 0
        return previous.attempt + 1


@dataclass(frozen=True, slots=True)
class StallEnd:
    """When the last stall ended (a monotonic time) and the backoff attempt it had reached."""

    at_s: float
    attempt: int


@dataclass(slots=True)
class StorageStall:
    """A replica refusing writes because its disk is full, until a retry finds space again."""

    message: str
    """The last out-of-space error (the first one, until a retry fails)."""
    since_ms: int
    """When the first write failed."""
    retries: int = 0
    """Retries that found the disk still full."""
    first_attempt: int = 0
    """Where the backoff starts (``Backoff.first_attempt``): a stall right after the last
    one goes on waiting as long as that one did."""

    @property
    def attempt(self) -> int:
        """The backoff attempt of the next retry."""
        return self.first_attempt + self.retries

    def retry_failed(self, message: str) -> None:
        self.retries += 1
        self.message = message
