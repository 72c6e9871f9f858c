"""Which principal a request's TLS extension names (pure: scopes built by hand; the real
handshake is tests/integration/security/test_api_tls.py)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import Request

from ingest.api.client_cert import client_cert_principal
from ingest.api.tls_extension import _rfc4514


def _request(tls: dict[str, Any] | None) -> Request:
    scope: dict[str, Any] = {"type": "http", "method": "GET", "path": "/", "headers": []}
    if tls is not None:
        scope["extensions"] = {"tls": tls}
    return Request(scope)


def _subject(*pairs: tuple[str, str]) -> tuple[tuple[tuple[str, str], ...], ...]:
    return tuple(((k, v),) for k, v in pairs)


def test_the_common_name_is_the_principal() -> None:
    subject = _subject(("organizationName", "Liftlog"), ("commonName", "alice"))
    assert client_cert_principal(_request({"client_cert_subject": subject})) == "alice"


def test_no_tls_or_no_certificate_is_no_principal() -> None:
    assert client_cert_principal(_request(None)) is None
    assert client_cert_principal(_request({"client_cert_subject": ()})) is None
    assert client_cert_principal(_request({})) is None


def test_an_ambiguous_or_missing_cn_names_nobody() -> None:
    two = _subject(("commonName", "alice"), ("commonName", "admin"))
    assert client_cert_principal(_request({"client_cert_subject": two})) is None
    none = _subject(("organizationName", "Liftlog"))
    assert client_cert_principal(_request({"client_cert_subject": none})) is None
    empty = _subject(("commonName", ""))
    assert client_cert_principal(_request({"client_cert_subject": empty})) is None


@pytest.mark.parametrize("cn", ["*", "", "two words", "tab\there"])
def test_a_cn_that_is_no_principal_name_names_nobody(cn: str) -> None:
    subject = _subject(("commonName", cn))
    assert client_cert_principal(_request({"client_cert_subject": subject})) is None


def test_subject_renders_as_rfc4514() -> None:
    subject = _subject(("organizationName", "Liftlog, Inc"), ("commonName", "alice"))
    assert _rfc4514(subject) == "CN=alice,O=Liftlog\\, Inc"
