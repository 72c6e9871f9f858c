"""Helpers of the encryption-at-rest tests: keys, node overrides, segment files, fetches."""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from pathlib import Path
from typing import Any

from crc32c import crc32c

from spark_log.auth_config import AuthConfig
from spark_log.encryption_config import EncryptionConfig
from spark_log.log import decode_header, decode_records
from spark_log.log.batch import CRC_END
from tests.integration.conftest import node_client

NO_AUTH = AuthConfig(enabled=False)
CRC_FIELD_POSITION = 12
"""The batch CRC sits after base_offset (8 bytes) and batch_length (4 bytes)."""


def new_master_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def encrypted_node_overrides(master_key: str, previous: str = "") -> dict[str, Any]:
    return {
        "auth": NO_AUTH,
        "encryption": EncryptionConfig(master_key=master_key, previous_master_key=previous),
    }


def segment_files(data_dir: str, stream: str) -> list[Path]:
    """Every segment file of ``stream`` under a node's data dir."""
    return sorted(Path(data_dir).glob(f"streams/{stream}@*/*/*.log"))


def segment_digests(data_dir: str, stream: str) -> dict[str, tuple[str, int]]:
    """Segment name → (SHA-256 of its bytes, mtime in ns): proves files were not rewritten."""
    return {
        f"{path.parent.name}/{path.name}": (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for path in segment_files(data_dir, stream)
    }


def files_contain(paths: list[Path], needle: bytes) -> bool:
    return any(needle in path.read_bytes() for path in paths)


def fetch_values(api_url: str, stream: str, **params: Any) -> list[str]:
    with node_client(api_url) as api:
        resp = api.get(
            f"/v1/streams/{stream}/partitions/0/records",
            params={"offset": 0, "max_records": 10000, "encoding": "utf-8", **params},
        )
    resp.raise_for_status()
    return [record["value"] for record in resp.json()["records"]]


def tamper_first_value(segment: Path) -> None:
    """Flip a byte inside the first stored value of the segment's first batch and recompute
    that batch's CRC, so only the encryption can notice."""
    data = bytearray(segment.read_bytes())
    header = decode_header(bytes(data))
    stored = decode_records(bytes(data[: header.size])).column("value").to_pylist()[0]
    at = bytes(data).index(stored) + len(stored) // 2
    data[at] ^= 0x01
    crc = crc32c(bytes(data[CRC_END : header.size]))
    struct.pack_into(">I", data, CRC_FIELD_POSITION, crc)
    segment.write_bytes(bytes(data))
