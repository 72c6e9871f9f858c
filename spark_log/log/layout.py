"""File names of a partition directory (Kafka's layout, so operators recognise it).

A segment is named after its base offset, zero-padded to 20 digits so that a lexical sort of
the directory is also an offset sort.
"""

from __future__ import annotations

import logging
from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TMP_SUFFIX = ".tmp"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
OFFSET_DIGITS = 20
FILE_MODE = 0o644

HIGH_WATERMARK_FILE = "high-watermark"
RECOVERY_POINT_FILE = "recovery-point"
LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
CLEAN_SHUTDOWN_FILE = ".clean-shutdown"
RECOVERY_LOSS_FILE = "recovery-loss"
SPACE_PROBE_FILE = "space-probe" + TMP_SUFFIX
"""Written and removed to test for free space; a crash leaves it as a stray temp file."""

logger = logging.getLogger("liftlog.log")


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    """``{base_offset:020d}{suffix}`` inside ``directory``."""
    return directory / f"{base_offset:0{OFFSET_DIGITS}d}{suffix}"


def parse_base_offset(name: str, suffix: str) -> int | None:
    """The base offset encoded in a segment file name, or None if ``name`` is not one."""
    if not name.endswith(suffix):
        return None
    stem = name[: -len(suffix)]
    if len(stem) != OFFSET_DIGITS or not stem.isdigit():
        return None
    return int(stem)


def list_segment_bases(directory: Path) -> list[int]:
    """Base offsets of every ``.log`` segment file, ascending."""
    bases = (parse_base_offset(p.name, LOG_SUFFIX) for p in directory.iterdir())
    return sorted(b for b in bases if b is not None)


def remove_stray_files(directory: Path) -> None:
    """Delete half-written checkpoint temp files and indexes whose segment is gone.

    Both are left behind by a crash in the middle of an atomic write or a segment deletion;
    neither holds information we need.
    """
    bases = set(list_segment_bases(directory))
    for path in directory.iterdir():
        if path.name.endswith(TMP_SUFFIX) or _is_orphan_index(path.name, bases):
            logger.info("removing stray file %s", path)
            path.unlink(missing_ok=True)


def _is_orphan_index(name: str, bases: set[int]) -> bool:
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        base = parse_base_offset(name, suffix)
        if base is not None:
            return base not in bases
    return False


def delete_segment_files(directory: Path, base_offset: int) -> None:
    """Unlink a segment's log and index files (used for segments that were never opened)."""
    for suffix in SEGMENT_SUFFIXES:
        segment_path(directory, base_offset, suffix).unlink(missing_ok=True)
