"""The one-lake-per-cluster check against a fake ZooKeeper session and real local lakes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from coordinator.errors import VersionConflictError, ZNodeExistsError, ZNodeNotFoundError
from coordinator.znodes import LAKE_PATH, LakeRecord
from ingest.lake.identity import FAILURE_MEMORY_S, LakeIdentity
from spark_log.errors import LakeError
from spark_log.lake.errors import LakeIdentityError
from spark_log.lake.identity import IDENTITY_FILE, read_lake_id, write_lake_id
from tests.unit.ingest.conftest import ManualClock


class FakeSession:
    """The three znode calls the check makes, with ZooKeeper's versioning."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[dict[str, Any], int]] = {}
        self.calls = 0

    def absolute(self, path: str) -> str:
        return f"/root{path}"

    def get_json(self, path: str) -> tuple[dict[str, Any], int]:
        self.calls += 1
        if path not in self.nodes:
            raise ZNodeNotFoundError(path)
        return self.nodes[path]

    def create_json(self, path: str, data: dict[str, Any]) -> None:
        if path in self.nodes:
            raise ZNodeExistsError(path)
        self.nodes[path] = (data, 0)

    def set_json(self, path: str, data: dict[str, Any], version: int) -> int:
        if self.nodes[path][1] != version:
            raise VersionConflictError(path)
        self.nodes[path] = (data, version + 1)
        return version + 1

    def record(self) -> LakeRecord:
        return LakeRecord.from_json(self.nodes[LAKE_PATH][0])


def identity(
    session: FakeSession, lake: Path, broker: int, clock: ManualClock | None = None
) -> LakeIdentity:
    return LakeIdentity(session, str(lake), broker, clock or ManualClock())  # type: ignore[arg-type]


def test_the_first_exporter_claims_the_lake_and_the_others_match(tmp_path: Path) -> None:
    zk, lake = FakeSession(), tmp_path / "lake"
    identity(zk, lake, 1).verify()
    record = zk.record()
    assert record.file_written and record.claimed_by == 1
    assert read_lake_id(str(lake)) == record.lake_id
    identity(zk, lake, 2).verify()  # same storage, other broker


def test_an_existing_lake_keeps_its_id(tmp_path: Path) -> None:
    zk, lake = FakeSession(), tmp_path / "lake"
    write_lake_id(str(lake), "old-id")
    identity(zk, lake, 1).verify()
    assert zk.record().lake_id == "old-id"


@pytest.mark.parametrize("other_id", [None, "another-lake"])
def test_another_lake_is_refused(tmp_path: Path, other_id: str | None) -> None:
    zk = FakeSession()
    identity(zk, tmp_path / "lake", 1).verify()
    stray = tmp_path / "stray"
    if other_id:
        write_lake_id(str(stray), other_id)
    with pytest.raises(LakeIdentityError, match="will not export") as raised:
        identity(zk, stray, 2).verify()
    assert "/root/v1/lake" in str(raised.value)
    assert not (stray / IDENTITY_FILE).exists() or other_id


def test_the_claimant_restarted_on_an_empty_disk_is_refused_too(tmp_path: Path) -> None:
    zk, lake = FakeSession(), tmp_path / "lake"
    identity(zk, lake, 1).verify()
    (lake / IDENTITY_FILE).unlink()  # same path, other storage (unmounted share, new disk)
    with pytest.raises(LakeIdentityError):
        identity(zk, lake, 1).verify()
    assert not (lake / IDENTITY_FILE).exists()


def test_a_claimant_that_crashed_before_its_file_completes_the_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ingest.lake.identity.CLAIM_WAIT_S", 0.2)
    zk, lake = FakeSession(), tmp_path / "lake"
    claim = LakeRecord(lake_id="abc", uri=str(lake), claimed_by=1, claimed_at_ms=1)
    zk.create_json(LAKE_PATH, claim.to_json())
    with pytest.raises(LakeError, match="waiting for broker 1") as raised:
        identity(zk, lake, 2).verify()  # another broker does not guess
    assert not isinstance(raised.value, LakeIdentityError)
    identity(zk, lake, 1).verify()
    assert read_lake_id(str(lake)) == "abc" and zk.record().file_written
    identity(zk, lake, 2).verify()


def test_the_file_is_read_again_and_failures_are_remembered_briefly(
    tmp_path: Path, clock: ManualClock
) -> None:
    zk, lake = FakeSession(), tmp_path / "lake"
    check = identity(zk, lake, 2, clock)
    write_lake_id(str(lake), "abc")
    zk.create_json(LAKE_PATH, {**LakeRecord("abc", str(lake), 1, 1, True).to_json()})
    check.verify()
    (lake / IDENTITY_FILE).write_text(json.dumps({"version": 1, "lake_id": "xyz"}))
    with pytest.raises(LakeIdentityError):
        check.verify()  # storage changed under a running node
    calls = zk.calls
    with pytest.raises(LakeIdentityError):
        check.verify()
    assert zk.calls == calls, "a fresh failure is answered from memory"
    write_lake_id(str(lake), "abc")
    clock.advance(int(FAILURE_MEMORY_S * 1000) - 1)
    with pytest.raises(LakeIdentityError):
        check.verify()  # still remembered: the fixed file is not read yet
    assert zk.calls == calls
    clock.advance(1)
    check.verify()  # the memory expired: the file is read again, and it matches


def test_a_scheme_pyarrow_cannot_open_is_not_checked(caplog: pytest.LogCaptureFixture) -> None:
    zk = FakeSession()
    LakeIdentity(zk, "az://container/lake", 1).verify()  # type: ignore[arg-type]
    assert "not checked" in caplog.text and LAKE_PATH not in zk.nodes


def test_a_claim_completed_while_waiting_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zk, lake = FakeSession(), tmp_path / "lake"
    claim = LakeRecord(lake_id="abc", uri=str(lake), claimed_by=1, claimed_at_ms=1)
    zk.create_json(LAKE_PATH, claim.to_json())
    polls = 0

    def claimant_finishes(path: str) -> tuple[dict[str, Any], int]:
        nonlocal polls
        polls += 1
        if polls == 3:  # broker 1 writes its file while broker 2 waits
            write_lake_id(str(lake), "abc")
        return FakeSession.get_json(zk, path)

    monkeypatch.setattr(zk, "get_json", claimant_finishes)
    identity(zk, lake, 2).verify()
    assert polls >= 3
