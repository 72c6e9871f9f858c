"""How a node hands freed native memory back to the operating system: the ``[memory]`` table
of a node config (docs/operations.md#memory).

A node's Python objects stay flat under load while its resident set climbs: the buffers it
frees (NATS reads, Arrow batches, delta-rs's commit state) stay inside the allocators that
served them. Arrow's default pool (mimalloc) keeps its own arenas, glibc keeps freed pages in
its heaps. Both are bounded here: Arrow allocates from the same heap as everything else, and
that heap is trimmed on a timer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from spark_log.errors import ConfigError

ArrowPool = Literal["system", "mimalloc", "jemalloc"]

DEFAULT_ARROW_POOL: ArrowPool = "system"
DEFAULT_RELEASE_INTERVAL_S = 0.0
MIN_RELEASE_INTERVAL_S = 0.1  # each release walks every heap under its lock


@dataclass(frozen=True)
class MemoryConfig:
    """``arrow_pool``: the allocator behind pyarrow's buffers. ``system`` (the default) is
    glibc's malloc, which the release below can trim; ``mimalloc`` and ``jemalloc`` are
    pyarrow's bundled pools, which keep what they freed for reuse.

    ``release_interval_s``: how often freed pages go back to the OS (glibc's
    ``malloc_trim``); 0, the default, turns it off. Elsewhere than glibc nothing is trimmed.
    Off by default: with it on, a fault test that freezes the lake's object store saw a
    node's REST API answer too late in two runs of three, which is not yet understood.
    """

    arrow_pool: ArrowPool = DEFAULT_ARROW_POOL
    release_interval_s: float = DEFAULT_RELEASE_INTERVAL_S

    def __post_init__(self) -> None:
        interval = self.release_interval_s
        if interval != 0 and not MIN_RELEASE_INTERVAL_S <= interval < math.inf:
            raise ConfigError(
                f"memory.release_interval_s must be 0 (off) or a number of seconds >= "
                f"{MIN_RELEASE_INTERVAL_S}, got {interval}"
            )
