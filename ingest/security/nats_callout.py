"""The nodes' answer to nats-server's auth callout: who a NATS client is and what it may do.

nats-server hands every login it cannot settle itself (all but the nodes' own users) to
``$SYS.REQ.USER.AUTH`` as a JWT signed by the server; the nodes share that subject in a
queue group, so one of them answers each login. The answer is a JWT signed with the
callout's issuer key: an error, or a user placed in the nodes' account with the subjects its
principal's ACLs allow (``nats_grants``). The server then enforces those permissions itself,
so nothing a principal may not publish ever reaches a node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import nkeys

from ingest.security import nats_jwt
from ingest.security.nats_grants import NatsGrant, grant_for, super_user_grant
from ingest.security.node_auth import NodeAuth
from spark_log.auth import parse_token
from spark_log.errors import LiftlogError, UnauthenticatedError
from spark_log.nats_auth_config import NatsAuthConfig
from spark_log.stream_spec import StreamSpec

log = logging.getLogger("liftlog.nats_auth")

AUTH_CALLOUT_SUBJECT = "$SYS.REQ.USER.AUTH"
CALLOUT_QUEUE = "liftlog-auth-callout"
ANONYMOUS_PRINCIPAL = "anonymous"


class CalloutResponder:
    """Turns one authorization request into its signed answer (no I/O: the node's NATS
    subscription hands requests in and publishes what comes out)."""

    def __init__(
        self,
        config: NatsAuthConfig,
        auth: NodeAuth,
        streams: Callable[[], Iterable[StreamSpec]],
    ) -> None:
        self._account = config.account
        self._seed = config.issuer_seed()
        self._auth = auth
        self._streams = streams
        # what was handed out since the rights watch last looked: principal -> (grant,
        # token id or "" for the bootstrap token); a change the watch samples too late to
        # see (made and undone within one check) still finds the logins it applied to
        self._issued: dict[str, set[tuple[NatsGrant, str]]] = {}

    @property
    def issuer(self) -> str:
        return nats_jwt.public_key(self._seed)

    def answer(self, request_jwt: str) -> str:
        """The signed response; NatsJwtError when the request is not the server's."""
        request = nats_jwt.decode(request_jwt, nkeys.PREFIX_BYTE_SERVER)
        body = _mapping(request.get("nats"))
        user_nkey = str(body.get("user_nkey", ""))
        server_id = str(_mapping(body.get("server_id")).get("id", ""))
        response: dict[str, Any] = {"type": "authorization_response", "version": 2}
        try:
            principal, grant = self.authorize(_mapping(body.get("connect_opts")))
        except LiftlogError as exc:
            client = _mapping(body.get("client_info"))
            log.info("NATS login from %s refused: %s", client.get("host", "?"), exc.message)
            response["error"] = exc.message
        else:
            response["jwt"] = self._user_jwt(user_nkey, principal, grant)
        return nats_jwt.encode({"sub": user_nkey, "aud": server_id, "nats": response}, self._seed)

    def authorize(self, connect: Mapping[str, Any]) -> tuple[str, NatsGrant]:
        """The principal a login's token names and its grant; UnauthenticatedError else."""
        if not self._auth.enabled:
            return ANONYMOUS_PRINCIPAL, super_user_grant()
        token = str(connect.get("auth_token") or connect.get("pass") or "")
        if not token:
            raise UnauthenticatedError(
                "no Liftlog token: log in with it as the NATS token, or as the password of "
                "user=<principal>"
            )
        principal = self._auth.principal_for_token(token)
        user = str(connect.get("user") or "")
        if user and user != principal:
            raise UnauthenticatedError(f"NATS user {user!r} is not the token's principal")
        grant = self.grant(principal)
        self._issued.setdefault(principal, set()).add((grant, self._revocable_id(token)))
        return principal, grant

    def _revocable_id(self, token: str) -> str:
        """The id of a token stored in ZooKeeper, which can be revoked; "" for the
        bootstrap token (a node config's, revoked by changing every config)."""
        issued = parse_token(token)
        if issued is None or issued.token_id not in self._auth.snapshot().tokens:
            return ""
        return issued.token_id

    def take_issued(self) -> dict[str, set[tuple[NatsGrant, str]]]:
        """The logins granted since the last call, by principal."""
        issued, self._issued = self._issued, {}
        return issued

    def specs(self) -> tuple[StreamSpec, ...]:
        """The streams grants are derived from, as the node knows them now."""
        return tuple(self._streams())

    def grant(self, principal: str) -> NatsGrant:
        if principal in self._auth.config.super_users:
            return super_user_grant()
        return grant_for(
            lambda action, resource: self._auth.allows(principal, action, resource),
            self._streams(),
        )

    def _user_jwt(self, user_nkey: str, principal: str, grant: NatsGrant) -> str:
        user = {**grant.claims(), "type": "user", "version": 2}
        claims = {"sub": user_nkey, "aud": self._account, "name": principal, "nats": user}
        return nats_jwt.encode(claims, self._seed)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
