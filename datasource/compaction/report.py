"""What a compaction run did, per partition and in total: returned to callers, printed by the
CLI (as a table or JSON) and summarised in the commit's metadata."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from spark_log.json_types import JsonObject

COMPACTED = "compacted"
UNCHANGED = "unchanged"
SKIPPED = "skipped"


@dataclass(frozen=True)
class PartitionResult:
    partition: int
    status: str
    """``compacted`` (files replaced), ``unchanged`` (computed, nothing to remove: files kept)
    or ``skipped`` (nothing to compute; ``reason`` says why)."""
    boundary: int | None = None
    records_before: int | None = None
    records_after: int | None = None
    files_removed: int = 0
    files_added: int = 0
    reason: str = ""


@dataclass(frozen=True)
class MaintenanceResult:
    optimize_files_removed: int = 0
    optimize_files_added: int = 0
    vacuumed_files: int = 0
    notes: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class CompactionReport:
    stream: str
    table_uri: str
    message: str
    read_version: int | None = None
    committed_version: int | None = None
    run_id: int | None = None
    partitions: tuple[PartitionResult, ...] = ()
    tombstones_removed: int = 0
    attempts: int = 0
    elapsed_s: float = 0.0
    maintenance: MaintenanceResult | None = None

    @property
    def committed(self) -> bool:
        return self.committed_version is not None

    @property
    def records_before(self) -> int:
        return sum(p.records_before or 0 for p in self.partitions if p.status != SKIPPED)

    @property
    def records_after(self) -> int:
        return sum(p.records_after or 0 for p in self.partitions if p.status != SKIPPED)

    def to_json(self) -> JsonObject:
        body = dataclasses.asdict(self)
        body["committed"] = self.committed
        return body


def commit_summary(partitions: tuple[PartitionResult, ...]) -> dict[str, dict[str, int | None]]:
    """The per-partition figures a compaction commit records in its metadata."""
    return {
        str(p.partition): {
            "boundary": p.boundary,
            "records_before": p.records_before,
            "records_after": p.records_after,
            "files_removed": p.files_removed,
            "files_added": p.files_added,
        }
        for p in partitions
        if p.status == COMPACTED
    }


def format_report(report: CompactionReport) -> list[str]:
    """Human lines: one per partition, then the totals."""
    lines = []
    for p in report.partitions:
        if p.status == SKIPPED:
            lines.append(f"  partition {p.partition}: skipped ({p.reason})")
            continue
        counts = f"{_n(p.records_before)} -> {_n(p.records_after)} records"
        files = f"{p.files_removed} file(s) removed, {p.files_added} added"
        verb = "compacted" if p.status == COMPACTED else "unchanged, files kept"
        lines.append(
            f"  partition {p.partition}: below offset {p.boundary}: {counts}; {files} ({verb})"
        )
    lines.append(report.message + f" ({report.elapsed_s:.1f}s)")
    if report.maintenance is not None:
        lines.extend(_maintenance_lines(report.maintenance))
    return lines


def _maintenance_lines(m: MaintenanceResult) -> list[str]:
    lines = [
        f"optimize: {m.optimize_files_removed} small file(s) -> {m.optimize_files_added}; "
        f"vacuum: {m.vacuumed_files} file(s) deleted"
    ]
    lines.extend(f"  note: {note}" for note in m.notes)
    if m.error:
        lines.append(f"  maintenance failed: {m.error}")
    return lines


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"
