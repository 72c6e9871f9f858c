"""The lake's identity file and the ZooKeeper record's JSON (pure: local files, no ZooKeeper)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.znodes import LakeRecord
from spark_log.errors import LakeError
from spark_log.lake.identity import IDENTITY_FILE, read_lake_id, write_lake_id


def test_identity_round_trip_creates_the_lake_directory(tmp_path: Path) -> None:
    lake = tmp_path / "new" / "lake"
    assert read_lake_id(str(lake)) is None
    write_lake_id(str(lake), "abc123")
    assert read_lake_id(str(lake)) == "abc123"
    assert read_lake_id(f"file://{lake}") == "abc123"


@pytest.mark.parametrize(
    "body", [b"not json", b'{"version": 2, "lake_id": "x"}', b'{"version": 1, "lake_id": ""}']
)
def test_a_damaged_identity_file_is_an_error_not_a_missing_one(tmp_path: Path, body: bytes) -> None:
    (tmp_path / IDENTITY_FILE).write_bytes(body)
    with pytest.raises(LakeError, match="identity file"):
        read_lake_id(str(tmp_path))


def test_an_unwritable_lake_is_a_lake_error(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the lake's directory should be")
    with pytest.raises(LakeError):
        write_lake_id(str(blocker / "lake"), "x")


def test_lake_record_json_round_trip() -> None:
    record = LakeRecord(lake_id="abc", uri="s3://b/lake", claimed_by=2, claimed_at_ms=5)
    assert LakeRecord.from_json(record.to_json()) == record
    assert record.to_json()["version"] == 1
