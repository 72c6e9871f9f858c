"""The KMS client of the lake's Parquet modular encryption: local AES-GCM wrapping under a
partition's data key, in parquet-mr's ``LocalWrapKmsClient`` format (a vector produced by
parquet-mr 1.17 checks it), and what a file written with it looks like to readers with and
without the key."""

from __future__ import annotations

import base64
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_log.crypto import new_data_key
from spark_log.crypto.parquet_kms import (
    LocalWrapKmsClient,
    PartitionFileCrypto,
    master_key_id,
    unwrap_locally,
    wrap_locally,
)
from spark_log.errors import DecryptionError, KeyUnavailableError
from spark_log.lake.layout import FILE_SCHEMA

MASTER_KEY = bytes(range(32))
KEY = bytes(range(100, 116))
IDENTIFIER = "liftlog/orders/3"
PARQUET_MR_WRAPPED = (
    '{"encryptedKey":"SWhpZRSmLyedEHraiSrwAHOpV/sK4ynyG9OgZUN0Q10yGIuDkRVxm7IFMm8=",'
    '"masterKeyVersion":"NO_VERSION"}'
)
"""``LocalWrapKmsClient.wrapKey(KEY, IDENTIFIER)`` of parquet-mr 1.17.0 (Spark 4.x's), with a
subclass whose ``getMasterKeyFromServer`` returns MASTER_KEY."""


def test_the_master_key_id_names_the_stream_and_partition():
    assert master_key_id("orders", 3) == IDENTIFIER


def test_a_key_wrapped_by_parquet_mr_unwraps():
    assert unwrap_locally(PARQUET_MR_WRAPPED, MASTER_KEY, IDENTIFIER) == KEY


def test_a_wrapped_key_has_parquet_mrs_fields_and_layout():
    wrapped = json.loads(wrap_locally(KEY, MASTER_KEY, IDENTIFIER))
    assert wrapped["masterKeyVersion"] == "NO_VERSION"
    sealed = base64.b64decode(wrapped["encryptedKey"])
    assert len(sealed) == 12 + len(KEY) + 16  # nonce, ciphertext, tag
    assert unwrap_locally(json.dumps(wrapped), MASTER_KEY, IDENTIFIER) == KEY


def test_wrapping_is_randomised():
    assert wrap_locally(KEY, MASTER_KEY, IDENTIFIER) != wrap_locally(KEY, MASTER_KEY, IDENTIFIER)


def test_a_wrapped_key_is_bound_to_its_master_key_and_identifier():
    wrapped = wrap_locally(KEY, MASTER_KEY, IDENTIFIER)
    with pytest.raises(DecryptionError, match="does not authenticate"):
        unwrap_locally(wrapped, new_data_key(), IDENTIFIER)
    with pytest.raises(DecryptionError, match="does not authenticate"):
        unwrap_locally(wrapped, MASTER_KEY, "liftlog/orders/4")


@pytest.mark.parametrize(
    "wrapped",
    [
        "not json",
        '{"masterKeyVersion": "NO_VERSION"}',
        '{"masterKeyVersion": "NO_VERSION", "encryptedKey": "!!"}',
        '{"masterKeyVersion": "NO_VERSION", "encryptedKey": "AAAA"}',
        '{"masterKeyVersion": "v2", "encryptedKey": "AAAA"}',
    ],
)
def test_malformed_key_material_is_a_decryption_error(wrapped):
    with pytest.raises(DecryptionError):
        unwrap_locally(wrapped, MASTER_KEY, IDENTIFIER)


def test_the_client_knows_only_the_keys_it_was_given():
    client = LocalWrapKmsClient({IDENTIFIER: MASTER_KEY})
    assert client.unwrap_key(client.wrap_key(KEY, IDENTIFIER), IDENTIFIER) == KEY
    with pytest.raises(KeyUnavailableError, match="liftlog/orders/4"):
        client.wrap_key(KEY, "liftlog/orders/4")
    assert "MASTER" not in repr(client) and MASTER_KEY.hex() not in repr(client)


def _rows() -> pa.Table:
    return pa.table(
        {
            "offset": pa.array([7, 8, 9], pa.int64()),
            "timestamp": pa.array([1, 2, 3], pa.timestamp("us", tz="UTC")),
            "key": pa.array([b"k7", None, b"k9"]),
            "value": pa.array([b"secret-7", b"secret-8", b""]),
            "headers": pa.nulls(3, FILE_SCHEMA.field("headers").type),
            "subject": pa.array(["a", "b", "c"]),
        },
        schema=FILE_SCHEMA,
    )


@pytest.fixture
def encrypted_file(tmp_path):
    path = tmp_path / "part.parquet"
    crypto = PartitionFileCrypto("orders", 3, MASTER_KEY)
    pq.write_table(_rows(), path, encryption_properties=crypto.encryption_properties())
    return path


def test_the_file_has_a_plaintext_footer_naming_the_column_key(encrypted_file):
    data = encrypted_file.read_bytes()
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1"  # "PARE" would be an encrypted footer
    assert b"secret-7" not in data
    metadata = pq.ParquetFile(encrypted_file).metadata  # no key needed for the footer
    assert metadata.num_rows == 3 and metadata.schema.to_arrow_schema().names == FILE_SCHEMA.names
    offsets = metadata.row_group(0).column(FILE_SCHEMA.names.index("offset")).statistics
    assert (offsets.min, offsets.max) == (7, 9)
    # the value column's crypto metadata: internal key material of a column key (not the
    # footer's) wrapped under the partition's master key; no other column has any
    column_key = re.compile(
        rb'\x05value.{1,3}\{"keyMaterialType":"PKMT1","internalStorage":true,'
        rb'"isFooterKey":false,"masterKeyID":"liftlog/orders/3"',
        re.DOTALL,
    )
    assert len(column_key.findall(data)) == 1
    assert data.count(b'"isFooterKey":false') == 1


def test_without_the_key_only_the_value_column_is_unreadable(encrypted_file):
    clear = pq.read_table(encrypted_file, columns=["offset", "key", "subject"])
    assert clear.column("offset").to_pylist() == [7, 8, 9]
    assert clear.column("key").to_pylist() == [b"k7", None, b"k9"]
    with pytest.raises(OSError, match="decrypt"):
        pq.read_table(encrypted_file, columns=["value"])


def test_with_the_key_every_column_reads(encrypted_file):
    crypto = PartitionFileCrypto("orders", 3, MASTER_KEY)
    table = pq.read_table(encrypted_file, decryption_properties=crypto.decryption_properties())
    assert table.equals(_rows())


def test_a_wrong_key_fails_clearly(encrypted_file):
    """pyarrow passes the KMS client's typed errors through."""
    wrong = PartitionFileCrypto("orders", 3, new_data_key())
    with pytest.raises(DecryptionError, match="does not authenticate"):
        pq.read_table(encrypted_file, decryption_properties=wrong.decryption_properties())
    other = PartitionFileCrypto("orders", 4, MASTER_KEY)
    with pytest.raises(KeyUnavailableError, match="liftlog/orders/3"):
        pq.read_table(encrypted_file, decryption_properties=other.decryption_properties())
