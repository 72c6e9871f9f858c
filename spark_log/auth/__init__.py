"""Who a caller is and what it may do: bearer tokens, ACL entries and the authorization rule.

Pure logic (stdlib only): ZooKeeper storage lives in ``coordinator.auth_store``, the REST
checks in ``ingest.api.auth``.
"""

from spark_log.auth.acl import (
    CLUSTER_RESOURCE,
    IMPLIES,
    STREAM_RESOURCE_PREFIX,
    AclEntry,
    Action,
    Permission,
    authorize,
    check_resource_pattern,
    granting_actions,
    schema_resource,
    stream_resource,
)
from spark_log.auth.tokens import (
    TOKEN_PREFIX,
    IssuedToken,
    TokenRecord,
    digest_matches,
    new_token,
    parse_token,
    secret_digest,
)

__all__ = [
    "CLUSTER_RESOURCE",
    "IMPLIES",
    "STREAM_RESOURCE_PREFIX",
    "TOKEN_PREFIX",
    "AclEntry",
    "Action",
    "IssuedToken",
    "Permission",
    "TokenRecord",
    "authorize",
    "check_resource_pattern",
    "digest_matches",
    "granting_actions",
    "new_token",
    "parse_token",
    "schema_resource",
    "secret_digest",
    "stream_resource",
]
