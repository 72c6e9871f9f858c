"""Where a lake lives and how to reach it: one URI and one set of object-store options, turned
into what each library wants (delta-rs storage options, a pyarrow filesystem).

Every reader and writer of the lake (the exporter, the identity check, retention, the Spark
source's tasks, compaction's tasks) goes through this, so credentials and endpoints come from
configuration in one form and are never spelled in code. Option names are delta-rs's (the
``object_store`` keys, case-insensitive: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ALLOW_HTTP`` ...).

Delta commits are only safe when the store refuses a second create of one ``_delta_log``
entry. On S3 that needs conditional puts, which delta-rs uses only when told to, so an
``s3://`` lake gets ``conditional_put = "etag"`` unless the options choose otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pyarrow.fs as pafs

from spark_log.errors import LakeError
from spark_log.storage_options import CONNECT_TIMEOUT, REQUEST_TIMEOUT, RETRY_TIMEOUT

if TYPE_CHECKING:
    from spark_log.config import LakeConfig

S3_SCHEMES = frozenset({"s3", "s3a"})
CONDITIONAL_PUT_OPTION = "conditional_put"
CONDITIONAL_PUT_ETAG = "etag"
TRUE_WORDS = frozenset({"true", "1", "yes"})
DEFAULT_S3_REGION = "us-east-1"
STORE_TIMEOUTS = MappingProxyType(
    {REQUEST_TIMEOUT: "30s", CONNECT_TIMEOUT: "5s", RETRY_TIMEOUT: "30s"}
)
"""delta-rs's bounds on one object-store call, unless the options say otherwise. Without
them a store that accepts connections but never answers (hung, frozen, a black-holing proxy)
holds a call for object_store's own retry budget of 180 s per request, many requests per
export round: the lake's threads stay blocked for many minutes, the failure is neither
logged nor counted meanwhile, and a flush times out instead of reporting the lake error."""


def _frozen(options: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType({str(k).lower(): str(v) for k, v in options.items()})


@dataclass(frozen=True)
class LakeStorage:
    """A lake URI (local path, ``s3://``, ``gs://``, ``abfss://``...) and its store options."""

    uri: str
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _frozen(self.options))

    @property
    def scheme(self) -> str:
        """``file`` for local paths, else the URI's scheme."""
        return urlparse(self.uri).scheme if "://" in self.uri else "file"

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    @property
    def is_s3(self) -> bool:
        return self.scheme in S3_SCHEMES

    def __repr__(self) -> str:
        """The URI and the option names only: the values may be secrets."""
        return f"LakeStorage({self.uri!r}, options={sorted(self.options)})"

    def at(self, uri: str) -> LakeStorage:
        """The same store options for another URI in this lake (a stream's table)."""
        return LakeStorage(uri, self.options)

    def delta_options(self) -> dict[str, str]:
        """Storage options for delta-rs (``DeltaTable``, ``write_deltalake``)."""
        options = dict(self.options)
        if self.scheme in S3_SCHEMES:
            options.setdefault(CONDITIONAL_PUT_OPTION, CONDITIONAL_PUT_ETAG)
        if not self.is_local:
            for name, value in STORE_TIMEOUTS.items():
                options.setdefault(name, value)
        return options

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """A pyarrow filesystem and the path of ``uri`` inside it."""
        return self.filesystem_for(self.uri)

    def filesystem_for(self, uri: str) -> tuple[pafs.FileSystem, str]:
        """A pyarrow filesystem for ``uri`` (a file of this lake) and the path inside it."""
        try:
            if self.scheme in S3_SCHEMES:
                parsed = urlparse(uri)
                return _s3_filesystem(self.options), f"{parsed.netloc}{parsed.path}"
            resolved: tuple[pafs.FileSystem, str] = pafs.FileSystem.from_uri(uri)
            return resolved
        except (ValueError, OSError) as exc:
            raise LakeError(f"cannot open the lake's filesystem for {uri}: {exc}") from exc


def lake_storage(config: LakeConfig) -> LakeStorage:
    """The lake a node's config names, with its ``[lake.storage_options]``: the one way node
    code reaches the lake (exporter, identity check, retention, flush, describe)."""
    return LakeStorage(config.uri, config.storage_options)


def _s3_filesystem(options: Mapping[str, str]) -> pafs.S3FileSystem:
    """pyarrow's S3 filesystem from delta-rs-style options; a name the options lack is taken
    from the environment as delta-rs takes it (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
    ...), so both libraries see one store; without either, pyarrow's AWS defaults apply."""
    endpoint = _setting(options, "aws_endpoint_url") or _setting(options, "aws_endpoint")
    kwargs: dict[str, object] = {
        "region": _setting(options, "aws_region") or DEFAULT_S3_REGION,
        "access_key": _setting(options, "aws_access_key_id"),
        "secret_key": _setting(options, "aws_secret_access_key"),
        "session_token": _setting(options, "aws_session_token"),
    }
    if (_setting(options, "aws_virtual_hosted_style_request") or "").lower() in TRUE_WORDS:
        kwargs["force_virtual_addressing"] = True
    if endpoint:
        parsed = urlparse(endpoint)
        kwargs["endpoint_override"] = parsed.netloc or parsed.path
        kwargs["scheme"] = parsed.scheme or "https"
    http_allowed = (_setting(options, "aws_allow_http") or "").lower() in TRUE_WORDS
    if kwargs.get("scheme") == "http" and not http_allowed:
        raise LakeError(
            f"the lake's endpoint {endpoint} is plain HTTP; "
            'set AWS_ALLOW_HTTP = "true" to allow it'
        )
    return pafs.S3FileSystem(**{k: v for k, v in kwargs.items() if v is not None})


def _setting(options: Mapping[str, str], name: str) -> str | None:
    """An option, else the environment variable of the same name (upper-case)."""
    return options.get(name) or os.environ.get(name.upper()) or None
