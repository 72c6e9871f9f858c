"""``/v1/auth`` (tokens, whoami) and ``/v1/acls``: managing who may do what, through any node.

Every change is a ZooKeeper write; every other node applies it from its watch of the tokens
and ACLs within moments, and this node re-reads them before it answers, so a client that sees
the answer can rely on this node applying the change (a revoked token is refused at once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request, Response

from coordinator import auth_store
from coordinator.errors import CoordinatorError
from ingest.api.auth import principal_of
from ingest.api.auth_models import AclCreate, TokenCreate
from ingest.api.auth_openapi import document_auth
from ingest.security.node_auth import NodeAuth
from spark_log.auth import AclEntry, TokenRecord
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
from spark_log.auth.tokens import check_principal

if TYPE_CHECKING:
    from ingest.admin.node_view import NodeView

log = logging.getLogger("liftlog.auth")

# An answer holding a secret must not be kept by a proxy or browser cache.
NO_STORE = {"Cache-Control": "no-store"}


def install_auth_routes(app: FastAPI, node: NodeView, auth: NodeAuth) -> None:
    """The routes, and the security requirements in ``/openapi.json``."""
    _token_routes(app, node, auth)
    _acl_routes(app, node, auth)
    document_auth(app, auth.enabled)

    @app.get("/v1/auth/whoami", tags=["auth"], response_model=WhoAmI)
    async def whoami(request: Request) -> WhoAmI:
        """The principal this request authenticated as (``anonymous`` with auth disabled)."""
        return WhoAmI(principal_of(request), "enabled" if auth.enabled else "disabled")


async def _apply_here(auth: NodeAuth) -> None:
    """Re-read the tokens and ACLs after a change, before answering. The change is stored
    already; should the re-read fail, the watch applies it later, so that is only logged."""
    if not auth.enabled:
        return
    try:
        await asyncio.to_thread(auth.cache.refresh)
    except CoordinatorError as exc:
        log.warning("could not re-read tokens and ACLs after a change: %s", exc.message)


def _token_routes(app: FastAPI, node: NodeView, auth: NodeAuth) -> None:
    @app.post("/v1/auth/tokens", status_code=201, tags=["auth"], response_model=TokenCreated)
    async def create_token(body: TokenCreate, response: Response) -> TokenCreated:
        """A new bearer token for a principal. The token is in this answer only: it is
        stored hashed and cannot be shown again."""
        check_principal(body.principal)
        now_ms = int(time.time() * 1000)
        issued, record = await asyncio.to_thread(
            auth_store.create_token, node.zk, body.principal, body.description, now_ms
        )
        await _apply_here(auth)
        response.headers.update(NO_STORE)
        return TokenCreated(
            record.token_id, record.principal, record.description, now_ms, issued.text
        )

    @app.get("/v1/auth/tokens", tags=["auth"], response_model=TokenList)
    async def list_tokens() -> TokenList:
        """Every token's id, principal and description (never a secret)."""
        records = await asyncio.to_thread(auth_store.list_tokens, node.zk)
        return TokenList(tuple(_token_info(r) for r in sorted(records, key=_by_creation)))

    @app.delete("/v1/auth/tokens/{token_id}", tags=["auth"], response_model=TokenRevoked)
    async def revoke_token(token_id: str) -> TokenRevoked:
        """Revoke a token: every node refuses it within moments. 404 when unknown."""
        await asyncio.to_thread(auth_store.revoke_token, node.zk, token_id)
        await _apply_here(auth)
        return TokenRevoked(token_id)


def _acl_routes(app: FastAPI, node: NodeView, auth: NodeAuth) -> None:
    @app.get("/v1/acls", tags=["auth"], response_model=AclList)
    async def list_acls() -> AclList:
        entries = await asyncio.to_thread(auth_store.list_acls, node.zk)
        return AclList(tuple(_acl_info(e) for e in sorted(entries, key=_acl_order)))

    @app.post("/v1/acls", status_code=201, tags=["auth"], response_model=AclInfo)
    async def add_acl(body: AclCreate) -> AclInfo:
        """Allow (or deny) a principal an action on ``cluster`` or ``stream:<glob>``."""
        entry = await asyncio.to_thread(
            auth_store.add_acl,
            node.zk,
            body.principal,
            body.action,
            body.resource,
            body.permission,
        )
        await _apply_here(auth)
        return _acl_info(entry)

    @app.delete("/v1/acls/{acl_id}", tags=["auth"], response_model=AclRemoved)
    async def remove_acl(acl_id: str) -> AclRemoved:
        """Remove an ACL entry: every node applies it within moments. 404 when unknown."""
        await asyncio.to_thread(auth_store.remove_acl, node.zk, acl_id)
        await _apply_here(auth)
        return AclRemoved(acl_id)


def _token_info(record: TokenRecord) -> TokenInfo:
    return TokenInfo(record.token_id, record.principal, record.description, record.created_ms)


def _acl_info(entry: AclEntry) -> AclInfo:
    return AclInfo(
        entry.acl_id, entry.principal, str(entry.action), entry.resource, str(entry.permission)
    )


def _by_creation(record: TokenRecord) -> tuple[int, str]:
    return (record.created_ms, record.token_id)


def _acl_order(entry: AclEntry) -> tuple[str, str, str, str]:
    return (entry.principal, entry.resource, str(entry.action), entry.acl_id)
