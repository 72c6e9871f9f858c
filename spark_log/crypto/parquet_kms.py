"""Parquet modular encryption of an encrypted stream's lake files, keyed by the partition's
data key.

In the Parquet key-management scheme (pyarrow's ``CryptoFactory``, parquet-mr's
``PropertiesDrivenCryptoFactory``) every file gets fresh random data keys; those are wrapped by
key-encryption keys, which a KMS client wraps with a named *master key*. Here the master key of
partition ``p`` of stream ``s`` is that partition's data key, named ``liftlog/<s>/<p>``
(``master_key_id``), and the KMS client wraps locally with AES-GCM: no KMS server exists, and
whoever holds the data key (a node, or a reader that fetched it over REST) can read the file.

The wrapped form is parquet-mr's ``LocalWrapKmsClient`` format, so Spark's own Parquet reader
reads the files with a small subclass of that client that returns the data key:
``{"masterKeyVersion": "NO_VERSION", "encryptedKey": base64(nonce ‖ ciphertext ‖ tag)}``, AES-GCM
under the master key with a 12-byte random nonce and the master key's identifier (UTF-8) as
associated data. The key material is stored inside each file (nothing beside the files to
lose), and the plaintext data key is never written anywhere.

Only the ``value`` column is encrypted, with a plaintext (signed) footer: the offset, time and
key statistics stay readable, so Delta add actions, offset pruning and readers without the key
keep working on the other columns.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import os
from collections.abc import Mapping

import pyarrow.parquet.encryption as pe
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from spark_log.errors import DecryptionError, KeyUnavailableError

MASTER_KEY_PREFIX = "liftlog"
ENCRYPTED_COLUMNS = ("value",)
"""Encrypted with a column key; everything else (and the footer) stays clear."""
NO_VERSION = "NO_VERSION"
"""parquet-mr's ``LocalWrapKmsClient.LOCAL_WRAP_NO_KEY_VERSION``: local keys have no versions."""
VERSION_FIELD = "masterKeyVersion"
ENCRYPTED_KEY_FIELD = "encryptedKey"
NONCE_BYTES = 12
TAG_BYTES = 16
ALGORITHM = "AES_GCM_V1"
DATA_KEY_BITS = 256
MASTER_KEY_BYTES = 32
"""A partition's data key (AES-256), the master key of its files."""
KEY_CACHE = dt.timedelta(minutes=10)
"""How long a CryptoFactory keeps unwrapped key-encryption keys (one factory per reader)."""


def master_key_id(stream: str, partition: int) -> str:
    """The master-key identifier of a partition's files (stable for the stream's life, as the
    data key it names: the table directory already tells incarnations apart)."""
    return f"{MASTER_KEY_PREFIX}/{stream}/{partition}"


def wrap_locally(key: bytes, master_key: bytes, master_key_identifier: str) -> str:
    """``key`` sealed under ``master_key`` in parquet-mr's local-wrap format."""
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(master_key).encrypt(nonce, key, master_key_identifier.encode())
    encoded = base64.b64encode(nonce + sealed).decode("ascii")
    return json.dumps({VERSION_FIELD: NO_VERSION, ENCRYPTED_KEY_FIELD: encoded})


def unwrap_locally(wrapped: str, master_key: bytes, master_key_identifier: str) -> bytes:
    """The inverse of ``wrap_locally`` (and of parquet-mr's ``LocalWrapKmsClient.wrapKey``).

    DecryptionError when the wrapped key is malformed, or does not authenticate under this
    master key and identifier (the wrong partition's key, or an altered file)."""
    sealed = _sealed_bytes(wrapped, master_key_identifier)
    try:
        return AESGCM(master_key).decrypt(
            sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], master_key_identifier.encode()
        )
    except InvalidTag as exc:
        raise DecryptionError(
            f"the Parquet key wrapped under {master_key_identifier} does not authenticate "
            "with the data key given (the wrong key, or an altered file)"
        ) from exc


def _sealed_bytes(wrapped: str, master_key_identifier: str) -> bytes:
    """``nonce ‖ ciphertext ‖ tag`` out of the JSON of a locally wrapped key."""
    try:
        fields = json.loads(wrapped)
        version = fields[VERSION_FIELD]
        sealed = base64.b64decode(fields[ENCRYPTED_KEY_FIELD], validate=True)
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise DecryptionError(
            f"malformed Parquet key material for {master_key_identifier}: {exc}"
        ) from exc
    if version != NO_VERSION:
        raise DecryptionError(f"master key versions are not supported locally: {version!r}")
    if len(sealed) < NONCE_BYTES + TAG_BYTES:
        raise DecryptionError(f"the Parquet key wrapped under {master_key_identifier} is short")
    return sealed


# pyarrow ships no type information, so its KmsClient base class is Any to mypy
class LocalWrapKmsClient(pe.KmsClient):  # type: ignore[misc]
    """A KMS client over data keys held in memory, keyed by master-key identifier: wraps and
    unwraps locally, never calls out. An identifier it has no key for is KeyUnavailableError
    (a file of another partition or stream)."""

    def __init__(self, master_keys: Mapping[str, bytes]) -> None:
        pe.KmsClient.__init__(self)
        self._keys = dict(master_keys)

    def __repr__(self) -> str:
        return f"LocalWrapKmsClient({sorted(self._keys)})"

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        return wrap_locally(key_bytes, self._key(master_key_identifier), master_key_identifier)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        return unwrap_locally(wrapped_key, self._key(master_key_identifier), master_key_identifier)

    def _key(self, master_key_identifier: str) -> bytes:
        key = self._keys.get(master_key_identifier)
        if key is None:
            raise KeyUnavailableError(
                f"the file is encrypted under {master_key_identifier}; "
                f"this reader holds keys for {sorted(self._keys)}"
            )
        return key


class PartitionFileCrypto:
    """File encryption and decryption properties of one partition's lake files."""

    def __init__(self, stream: str, partition: int, data_key: bytes) -> None:
        if len(data_key) != MASTER_KEY_BYTES:
            raise KeyUnavailableError(
                f"a data key is {MASTER_KEY_BYTES} bytes, not {len(data_key)} "
                f"({stream}/{partition})"
            )
        self.master_key_id = master_key_id(stream, partition)
        keys = {self.master_key_id: data_key}
        self._factory = pe.CryptoFactory(lambda _config: LocalWrapKmsClient(keys))
        self._connection = pe.KmsConnectionConfig()

    def __repr__(self) -> str:
        return f"PartitionFileCrypto({self.master_key_id})"

    def encryption_properties(self) -> pe.FileEncryptionProperties:
        """Fresh properties for one new file (each file gets its own random data keys)."""
        config = pe.EncryptionConfiguration(
            footer_key=self.master_key_id,
            column_keys={self.master_key_id: list(ENCRYPTED_COLUMNS)},
            encryption_algorithm=ALGORITHM,
            plaintext_footer=True,
            double_wrapping=True,
            cache_lifetime=KEY_CACHE,
            internal_key_material=True,
            data_key_length_bits=DATA_KEY_BITS,
        )
        return self._factory.file_encryption_properties(self._connection, config)

    def decryption_properties(self) -> pe.FileDecryptionProperties:
        """Properties that read this partition's files (the keys come from each footer)."""
        config = pe.DecryptionConfiguration(cache_lifetime=KEY_CACHE)
        return self._factory.file_decryption_properties(self._connection, config)
