"""The JSON documents of ``/v1/auth`` and ``/v1/acls`` (``spark_log.api_models`` style: frozen
dataclasses the app uses as response models and the client reads back)."""

from __future__ import annotations

from dataclasses import dataclass

from spark_log.json_model import JsonModel


@dataclass(frozen=True)
class TokenInfo(JsonModel):
    """A token as listed: never its secret."""

    token_id: str
    principal: str
    description: str
    created_ms: int


@dataclass(frozen=True)
class TokenCreated(JsonModel):
    """``POST /v1/auth/tokens``: ``token`` is the secret, shown this once and stored nowhere."""

    token_id: str
    principal: str
    description: str
    created_ms: int
    token: str

    def __repr__(self) -> str:
        return f"TokenCreated(token_id={self.token_id!r}, principal={self.principal!r})"


@dataclass(frozen=True)
class TokenList(JsonModel):
    tokens: tuple[TokenInfo, ...] = ()


@dataclass(frozen=True)
class TokenRevoked(JsonModel):
    token_id: str
    revoked: bool = True


@dataclass(frozen=True)
class AclInfo(JsonModel):
    acl_id: str
    principal: str
    action: str
    resource: str
    permission: str


@dataclass(frozen=True)
class AclList(JsonModel):
    acls: tuple[AclInfo, ...] = ()


@dataclass(frozen=True)
class AclRemoved(JsonModel):
    acl_id: str
    removed: bool = True


@dataclass(frozen=True)
class WhoAmI(JsonModel):
    """``GET /v1/auth/whoami``: the caller's principal and whether this node checks at all."""

    principal: str
    auth: str
