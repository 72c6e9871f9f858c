"""The object-store options a lake may be given (``[lake.storage_options]``, the Spark source's
``lake.<NAME>`` options): an explicit allowlist of delta-rs / ``object_store`` names.

Dependency-free on purpose: the config loader checks keys with it, and importing the lake
package (delta-rs, pyarrow) just to validate a TOML file would slow every CLI start. Names are
case-insensitive, as delta-rs treats them; they are kept lower-case. A misspelt option (say
``AWS_ENDPOINT``) must be an error, never a silently ignored key that sends exports to AWS.
"""

from __future__ import annotations

from collections.abc import Mapping

from spark_log.errors import ConfigError

AWS_ACCESS_KEY_ID = "aws_access_key_id"
AWS_SECRET_ACCESS_KEY = "aws_secret_access_key"
AWS_SESSION_TOKEN = "aws_session_token"
AWS_REGION = "aws_region"
AWS_ENDPOINT_URL = "aws_endpoint_url"
AWS_ALLOW_HTTP = "aws_allow_http"
AWS_VIRTUAL_HOSTED_STYLE_REQUEST = "aws_virtual_hosted_style_request"
CONDITIONAL_PUT = "conditional_put"
AWS_S3_LOCKING_PROVIDER = "aws_s3_locking_provider"
DELTA_DYNAMO_TABLE_NAME = "delta_dynamo_table_name"
REQUEST_TIMEOUT = "timeout"
CONNECT_TIMEOUT = "connect_timeout"
RETRY_TIMEOUT = "retry_timeout"

SUPPORTED_STORAGE_OPTIONS: dict[str, str] = {
    AWS_ACCESS_KEY_ID: "access key id (or the AWS_ACCESS_KEY_ID environment variable)",
    AWS_SECRET_ACCESS_KEY: "secret access key (or AWS_SECRET_ACCESS_KEY)",
    AWS_SESSION_TOKEN: "session token of temporary credentials (or AWS_SESSION_TOKEN)",
    AWS_REGION: "region (default us-east-1)",
    AWS_ENDPOINT_URL: "endpoint of an S3-compatible store (SeaweedFS, MinIO, ...)",
    AWS_ALLOW_HTTP: '"true" to allow a plain-HTTP endpoint',
    AWS_VIRTUAL_HOSTED_STYLE_REQUEST: '"true" for bucket.host addressing (default: path style)',
    CONDITIONAL_PUT: 'how Delta commits stay atomic on S3: "etag" (default; If-None-Match)',
    AWS_S3_LOCKING_PROVIDER: '"dynamodb": commit through delta-rs\'s DynamoDB lock instead',
    DELTA_DYNAMO_TABLE_NAME: "the DynamoDB lock table (with aws_s3_locking_provider)",
    REQUEST_TIMEOUT: 'how long one request to the store may take (default "30s")',
    CONNECT_TIMEOUT: 'how long connecting to the store may take (default "5s")',
    RETRY_TIMEOUT: 'how long delta-rs retries one failing request (default "30s")',
}
"""Every supported option, with what it means (the docs list the same names)."""

SECRET_OPTIONS = frozenset({AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN})


def checked_storage_options(options: Mapping[str, str], where: str) -> dict[str, str]:
    """``options`` with lower-cased names; ConfigError naming an unknown name or a value that
    is not a string (TOML ``true`` for ``"true"`` is refused: delta-rs takes strings)."""
    checked: dict[str, str] = {}
    for name, value in options.items():
        key = str(name).lower()
        if key not in SUPPORTED_STORAGE_OPTIONS:
            raise ConfigError(
                f"unknown key {where}.{name}; supported: "
                f"{', '.join(sorted(SUPPORTED_STORAGE_OPTIONS))} (case-insensitive)"
            )
        if not isinstance(value, str):
            raise ConfigError(
                f"{where}.{name}: expected a string, got {type(value).__name__} "
                f'(write it quoted, e.g. {name} = "{value}")'
            )
        checked[key] = value
    return checked
