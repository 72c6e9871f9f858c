"""A small blocking REST client over the nodes' `/v1` API (stdlib only).

The core may not depend on an HTTP library, and every caller that is async runs these calls in
a thread. Connection failures fall over to the next server; error bodies become typed errors.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from spark_log.client.credentials import ClientCredentials
from spark_log.client.scheme_hint import https_hint
from spark_log.errors import InvalidRequestError, LiftlogError, UnavailableError
from spark_log.json_types import JsonValue
from spark_log.wire import error_from_json

DEFAULT_SERVER = "http://127.0.0.1:9644"
DEFAULT_REST_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RestResponse:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> JsonValue:
        return json.loads(self.body)


def parse_servers(servers: str | list[str] | tuple[str, ...]) -> list[str]:
    """Accept ``"http://a:1,http://b:2"`` or a list; strip trailing slashes."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    urls = [s.strip().rstrip("/") for s in items if s.strip()]
    if not urls:
        raise InvalidRequestError("no server URL given")
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise InvalidRequestError(f"server URL must start with http:// or https://: {url!r}")
    return urls


class RestClient:
    """``credentials``: what to present to the nodes; None reads them from the environment
    (``LIFTLOG_TOKEN``, ...) or the credentials file (see ``spark_log.client.credentials``).
    ``servers`` None: the credentials' ``server`` (``LIFTLOG_SERVER``, the file's), else
    ``DEFAULT_SERVER``."""

    def __init__(
        self,
        servers: str | list[str] | None = None,
        timeout_s: float = DEFAULT_REST_TIMEOUT_S,
        credentials: ClientCredentials | None = None,
    ) -> None:
        self.credentials = ClientCredentials.resolve() if credentials is None else credentials
        self.servers = parse_servers(servers or self.credentials.server or DEFAULT_SERVER)
        self.timeout_s = timeout_s
        self._ssl_context = self.credentials.ssl_context()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, object] | None = None,
        json_body: object = None,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        server: str | None = None,
        timeout_s: float | None = None,
    ) -> RestResponse:
        """Send to ``server`` or the first server that answers; raise typed errors."""
        query = urllib.parse.urlencode({k: v for k, v in (params or {}).items() if v is not None})
        hdrs = {**self.credentials.headers(), **(headers or {})}
        if json_body is not None:
            data = json.dumps(json_body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        last: Exception | None = None
        hint: str | None = None
        for base in [server] if server else self.servers:
            url = f"{base}{path}" + (f"?{query}" if query else "")
            req = _build_request(url, data, method, hdrs)
            try:
                with urllib.request.urlopen(
                    req, timeout=timeout_s or self.timeout_s, context=self._ssl_context
                ) as resp:
                    headers = {k.lower(): v for k, v in resp.headers.items()}
                    return RestResponse(resp.status, headers, resp.read())
            except urllib.error.HTTPError as exc:
                raise _typed_error(exc) from None
            except (urllib.error.URLError, OSError) as exc:
                last = exc
                hint = hint or _scheme_hint(base, exc)
        answered = f"no Liftlog node answered ({', '.join(self.servers)}): {last}"
        raise UnavailableError(f"{hint} ({answered})" if hint else answered)

    def get_json(
        self,
        path: str,
        *,
        params: Mapping[str, object] | None = None,
        headers: dict[str, str] | None = None,
        server: str | None = None,
        timeout_s: float | None = None,
    ) -> JsonValue:
        """The decoded JSON body of a GET (``request``'s options)."""
        response = self.request(
            "GET", path, params=params, headers=headers, server=server, timeout_s=timeout_s
        )
        return response.json()


def _build_request(
    url: str, data: bytes | None, method: str, headers: dict[str, str]
) -> urllib.request.Request:
    """urllib copies ordinary headers onto a redirect's target, which would hand a bearer
    token to whatever host a (compromised or misconfigured) node redirects to; an unredirected
    header is sent to ``url`` only."""
    req = urllib.request.Request(url, data=data, method=method)
    for name, value in headers.items():
        if name.lower() == "authorization":
            req.add_unredirected_header(name, value)
        else:
            req.add_header(name, value)
    return req


def _scheme_hint(base: str, exc: Exception) -> str | None:
    """The "use https://..." hint when ``base`` dialled plain HTTP into a TLS port (the node
    dropped the connection unanswered); None for a refused connection or any other failure."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if not isinstance(reason, http.client.RemoteDisconnected | ConnectionResetError):
        return None
    return https_hint(base)


def _typed_error(exc: urllib.error.HTTPError) -> LiftlogError:
    return error_from_response(exc.code, exc.read())


def error_from_response(status: int, body: bytes) -> LiftlogError:
    """A node's error answer as its typed error (``status`` kept on it)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return UnavailableError(f"HTTP {status}: {body[:200]!r}")
    if isinstance(payload, dict) and "error" in payload:
        err = error_from_json(payload["error"])
    else:
        err = LiftlogError(f"HTTP {status}: {payload}")
    err.status = status
    return err
