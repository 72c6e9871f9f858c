"""Encryption at rest: master keys, wrapped per-partition data keys and value ciphers.

See docs/security.md ("Encryption at rest") for the scheme and the reasons behind it.
"""

from spark_log.crypto.key_provider import KeyProvider, WrappedKey
from spark_log.crypto.local_provider import LocalMasterKeyProvider, master_key_provider
from spark_log.crypto.master_key import MasterKey, decode_key
from spark_log.crypto.value_cipher import ENCRYPTION_OVERHEAD, ValueCipher, new_data_key

__all__ = [
    "ENCRYPTION_OVERHEAD",
    "KeyProvider",
    "LocalMasterKeyProvider",
    "MasterKey",
    "ValueCipher",
    "WrappedKey",
    "decode_key",
    "master_key_provider",
    "new_data_key",
]
