"""Token and ACL administration over REST (``/v1/auth``, ``/v1/acls``), in one place.

The CLI calls these functions directly; ``Client`` offers them as coroutines (run in a worker
thread, like its other admin calls) through ``AuthAdminMixin`` and ``SyncClient`` as blocking
methods, so the request bodies and the answers' models are written once.
"""

from __future__ import annotations

import asyncio

from spark_log.auth.models import (
    AclInfo,
    AclList,
    AclRemoved,
    TokenCreated,
    TokenInfo,
    TokenList,
    TokenRevoked,
    WhoAmI,
)
from spark_log.client.rest import RestClient

ALLOW = "allow"
DENY = "deny"


def create_token(rest: RestClient, principal: str, description: str = "") -> TokenCreated:
    """A new bearer token for ``principal``; its secret (``.token``) is returned this once."""
    body = {"principal": principal, "description": description}
    return TokenCreated.from_json(rest.request("POST", "/v1/auth/tokens", json_body=body).json())


def list_tokens(rest: RestClient) -> list[TokenInfo]:
    """Every token's id, principal and description (never a secret)."""
    return list(TokenList.from_json(rest.get_json("/v1/auth/tokens")).tokens)


def revoke_token(rest: RestClient, token_id: str) -> TokenRevoked:
    """Revoke a token on every node (TokenNotFoundError when there is none)."""
    return TokenRevoked.from_json(rest.request("DELETE", f"/v1/auth/tokens/{token_id}").json())


def whoami(rest: RestClient) -> WhoAmI:
    """The principal this client's credential authenticates, and whether the node checks."""
    return WhoAmI.from_json(rest.get_json("/v1/auth/whoami"))


def add_acl(
    rest: RestClient, principal: str, action: str, resource: str, permission: str = ALLOW
) -> AclInfo:
    """Allow (or deny) ``principal`` ``action`` on ``resource`` (``cluster`` or
    ``stream:<glob>``); an entry that exists already is returned, not added twice."""
    body = {
        "principal": principal,
        "action": action,
        "resource": resource,
        "permission": permission,
    }
    return AclInfo.from_json(rest.request("POST", "/v1/acls", json_body=body).json())


def list_acls(rest: RestClient) -> list[AclInfo]:
    return list(AclList.from_json(rest.get_json("/v1/acls")).acls)


def remove_acl(rest: RestClient, acl_id: str) -> AclRemoved:
    """Remove an ACL entry on every node (AclNotFoundError when there is none)."""
    return AclRemoved.from_json(rest.request("DELETE", f"/v1/acls/{acl_id}").json())


class AuthAdminMixin:
    """``Client``'s token and ACL calls: the functions above, off the event loop."""

    rest: RestClient

    async def create_token(self, principal: str, description: str = "") -> TokenCreated:
        return await asyncio.to_thread(create_token, self.rest, principal, description)

    async def list_tokens(self) -> list[TokenInfo]:
        return await asyncio.to_thread(list_tokens, self.rest)

    async def revoke_token(self, token_id: str) -> TokenRevoked:
        return await asyncio.to_thread(revoke_token, self.rest, token_id)

    async def whoami(self) -> WhoAmI:
        return await asyncio.to_thread(whoami, self.rest)

    async def add_acl(
        self, principal: str, action: str, resource: str, permission: str = ALLOW
    ) -> AclInfo:
        return await asyncio.to_thread(add_acl, self.rest, principal, action, resource, permission)

    async def list_acls(self) -> list[AclInfo]:
        return await asyncio.to_thread(list_acls, self.rest)

    async def remove_acl(self, acl_id: str) -> AclRemoved:
        return await asyncio.to_thread(remove_acl, self.rest, acl_id)
