"""The wrapped data key znode's JSON: versioned, exact, and never the raw key."""

from __future__ import annotations

import os

import pytest

from coordinator.errors import ZNodeFormatError
from coordinator.partition_keys import PartitionKeyRecord, key_context
from spark_log.crypto import LocalMasterKeyProvider, MasterKey, new_data_key


def test_a_wrapped_key_round_trips_through_json():
    provider = LocalMasterKeyProvider(MasterKey.of(os.urandom(32)))
    data_key = new_data_key()
    record = PartitionKeyRecord.of(provider.wrap(data_key, key_context("s", 0)))
    data = record.to_json()
    assert data["version"] == 1 and data["key_id"] == provider.current_key_id
    assert data_key.hex() not in str(data)
    again = PartitionKeyRecord.from_json(data)
    assert provider.unwrap(again.wrapped_key(), key_context("s", 0)) == data_key


@pytest.mark.parametrize(
    "data",
    [
        {"version": 2, "key_id": "k", "wrapped": ""},
        {"version": 1, "key_id": "k"},
        {"version": 1, "key_id": "k", "wrapped": "AA==", "extra": 1},
        {"version": 1, "key_id": 7, "wrapped": "AA=="},
    ],
)
def test_unknown_shapes_are_refused(data):
    with pytest.raises(ZNodeFormatError):
        PartitionKeyRecord.from_json(data)


def test_a_wrapped_value_that_is_not_base64_is_refused():
    with pytest.raises(ZNodeFormatError, match="base64"):
        PartitionKeyRecord("k", "not base64!").wrapped_key()
