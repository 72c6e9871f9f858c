"""The key-provider interface: wraps and unwraps data keys, whatever holds the master key.

A local master key from the node config is one provider; a KMS (AWS KMS, Vault transit) is
another that only has to implement these three members. Data keys are always wrapped with a
context (stream and partition), so a wrapped key copied to another partition's znode does not
unwrap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class WrappedKey:
    """A data key as stored: which master key wrapped it, and the wrapped bytes."""

    key_id: str
    blob: bytes


@runtime_checkable
class KeyProvider(Protocol):
    """Wraps data keys under the current master key and unwraps them under any it knows."""

    @property
    def current_key_id(self) -> str:
        """The id new wraps (and rotations) use."""
        ...

    def wrap(self, data_key: bytes, context: bytes) -> WrappedKey:
        """``data_key`` wrapped under the current master key, bound to ``context``."""
        ...

    def unwrap(self, wrapped: WrappedKey, context: bytes) -> bytes:
        """The data key; KeyUnavailableError for an unknown key id, DecryptionError when the
        blob or the context does not authenticate."""
        ...
