"""``/openapi.json`` says how to authenticate: a bearer token or a client certificate on every
route but the open ones, and what each route needs (its ACL action and resource), so the
document, Swagger UI's "Authorize" button and OpenAPI-driven tools agree with the node."""

from __future__ import annotations

from fastapi import FastAPI

from ingest.api.route_acl import rule_for
from spark_log.auth import Action, granting_actions
from spark_log.json_types import JsonObject

BEARER_SCHEME = "bearerAuth"
CERT_SCHEME = "clientCertificate"
SECURITY_SCHEMES = {
    BEARER_SCHEME: {
        "type": "http",
        "scheme": "bearer",
        "description": "a token `llt_<token_id>_<secret>` (POST /v1/auth/tokens), or the "
        "node's bootstrap token",
    },
    CERT_SCHEME: {
        "type": "mutualTLS",
        "description": "a client certificate of the node's CA; its subject CN is the principal",
    },
}
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def document_auth(app: FastAPI, enabled: bool) -> None:
    """Wrap ``app.openapi`` so the generated document carries the security requirements
    (none at all when the node checks no credentials)."""
    generate = app.openapi

    def openapi() -> JsonObject:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = generate()
        if enabled:
            _add_security(spec)
        app.openapi_schema = spec
        return spec

    # FastAPI's documented way to change the document is to replace this method
    app.openapi = openapi  # type: ignore[method-assign]


def _add_security(spec: JsonObject) -> None:
    spec.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
    for path, operations in spec.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in HTTP_METHODS:
                continue
            rule = rule_for(method, path)
            if rule is not None and rule.open:
                operation["security"] = []
                continue
            operation["security"] = [{BEARER_SCHEME: []}, {CERT_SCHEME: []}]
            if rule is not None and rule.action is not None:
                needs = f"Needs `{rule.action}` on `{rule.resource}`{_implied_by(rule.action)}."
            else:
                needs = "Needs any authenticated principal."
            operation["description"] = f"{operation.get('description', '')}\n\n{needs}".strip()


def _implied_by(action: Action) -> str:
    """`` (or `consume`, ... which imply it)`` for an action others imply; empty otherwise."""
    others = sorted(granting_actions(action) - {action})
    if not others:
        return ""
    return f" (or {', '.join(f'`{a}`' for a in others)}, which imply it)"
