"""Master keys, data-key wrapping and rotation (pure logic, no cluster)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from spark_log.crypto import LocalMasterKeyProvider, MasterKey, WrappedKey, master_key_provider
from spark_log.crypto.value_cipher import new_data_key
from spark_log.encryption_config import EncryptionConfig
from spark_log.errors import ConfigError, DecryptionError, KeyUnavailableError

CONTEXT = b"orders/0"


def _b64(material: bytes) -> str:
    return base64.b64encode(material).decode()


def test_wrap_then_unwrap_returns_the_data_key():
    provider = LocalMasterKeyProvider(MasterKey.of(os.urandom(32)))
    data_key = new_data_key()
    wrapped = provider.wrap(data_key, CONTEXT)
    assert wrapped.key_id == provider.current_key_id
    assert data_key not in wrapped.blob
    assert provider.unwrap(wrapped, CONTEXT) == data_key


def test_a_key_wrapped_for_another_partition_does_not_unwrap():
    provider = LocalMasterKeyProvider(MasterKey.of(os.urandom(32)))
    wrapped = provider.wrap(new_data_key(), CONTEXT)
    with pytest.raises(DecryptionError):
        provider.unwrap(wrapped, b"orders/1")


def test_a_tampered_wrapped_key_is_refused():
    provider = LocalMasterKeyProvider(MasterKey.of(os.urandom(32)))
    wrapped = provider.wrap(new_data_key(), CONTEXT)
    blob = bytearray(wrapped.blob)
    blob[-1] ^= 1
    with pytest.raises(DecryptionError):
        provider.unwrap(WrappedKey(wrapped.key_id, bytes(blob)), CONTEXT)


def test_an_unknown_master_key_id_is_key_unavailable():
    old = LocalMasterKeyProvider(MasterKey.of(os.urandom(32)))
    new = LocalMasterKeyProvider(MasterKey.of(os.urandom(32)))
    wrapped = old.wrap(new_data_key(), CONTEXT)
    with pytest.raises(KeyUnavailableError, match=wrapped.key_id):
        new.unwrap(wrapped, CONTEXT)


def test_rotation_provider_unwraps_old_keys_and_wraps_under_the_new_one():
    old_key, new_key = MasterKey.of(os.urandom(32)), MasterKey.of(os.urandom(32))
    data_key = new_data_key()
    wrapped_old = LocalMasterKeyProvider(old_key).wrap(data_key, CONTEXT)
    rotating = LocalMasterKeyProvider(new_key, (old_key,))
    rewrapped = rotating.wrap(rotating.unwrap(wrapped_old, CONTEXT), CONTEXT)
    assert rewrapped.key_id == new_key.key_id != old_key.key_id
    assert LocalMasterKeyProvider(new_key).unwrap(rewrapped, CONTEXT) == data_key


def test_key_ids_are_stable_and_do_not_reveal_the_key():
    material = os.urandom(32)
    assert MasterKey.of(material).key_id == MasterKey.of(material).key_id
    assert MasterKey.of(material).key_id not in material.hex()
    assert material.hex() not in repr(MasterKey.of(material))


def test_master_key_from_inline_file_and_env(tmp_path: Path):
    material = os.urandom(32)
    key_file = tmp_path / "master.key"
    key_file.write_text(_b64(material) + "\n")
    expected = MasterKey.of(material).key_id
    for config, env in (
        (EncryptionConfig(master_key=_b64(material)), {}),
        (EncryptionConfig(master_key_file=str(key_file)), {}),
        (EncryptionConfig(master_key_env="LIFTLOG_TEST_KEY"), {"LIFTLOG_TEST_KEY": _b64(material)}),
    ):
        provider = master_key_provider(config, env)
        assert provider is not None and provider.current_key_id == expected


def test_no_master_key_means_no_provider():
    assert master_key_provider(EncryptionConfig(), {}) is None
    assert not EncryptionConfig().enabled


@pytest.mark.parametrize(
    "config, env, match",
    [
        (EncryptionConfig(master_key="not base64!"), {}, "base64"),
        (EncryptionConfig(master_key=_b64(b"short")), {}, "32 bytes"),
        (EncryptionConfig(master_key_env="MISSING_KEY"), {}, "MISSING_KEY is not set"),
        (EncryptionConfig(master_key_file="/nonexistent/master.key"), {}, "cannot read"),
    ],
)
def test_bad_master_keys_fail_at_load(config: EncryptionConfig, env: dict[str, str], match: str):
    with pytest.raises(ConfigError, match=match):
        master_key_provider(config, env)


def test_config_allows_one_source_per_key_and_hides_the_secret():
    secret = _b64(os.urandom(32))
    with pytest.raises(ConfigError, match="at most one"):
        EncryptionConfig(master_key=secret, master_key_env="X")
    with pytest.raises(ConfigError, match="needs a current"):
        EncryptionConfig(previous_master_key=secret)
    assert secret not in repr(EncryptionConfig(master_key=secret, previous_master_key=secret))
