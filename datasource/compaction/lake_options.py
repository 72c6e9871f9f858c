"""The lake's store options for a compaction run: the operator's ``--lake-option KEY=VALUE``
flags over the standard environment (``AWS_*``), never the cluster's ``describe`` (which must
not carry secrets).

delta-rs reads the ``AWS_*`` environment on its own, but pyarrow's S3 filesystem does not
know delta-rs's names (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``), and the job's tasks may run
in other processes or machines than the driver. So for an ``s3://`` lake the environment's
values are copied into the options once, on the driver, and travel with the tasks. A flag
wins over the Spark session conf ``spark.liftlog.lake.<NAME>`` (``session_conf.py``), which
wins over the environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from datasource.compaction.errors import InvalidCompactionOptionError
from spark_log.lake.storage import S3_SCHEMES, LakeStorage
from spark_log.storage_options import checked_storage_options

S3_ENVIRONMENT = {
    "AWS_ENDPOINT_URL": "aws_endpoint_url",
    "AWS_ENDPOINT_URL_S3": "aws_endpoint_url",
    "AWS_REGION": "aws_region",
    "AWS_DEFAULT_REGION": "aws_region",
    "AWS_ACCESS_KEY_ID": "aws_access_key_id",
    "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key",
    "AWS_SESSION_TOKEN": "aws_session_token",
    "AWS_ALLOW_HTTP": "aws_allow_http",
}
"""Environment variables an ``s3://`` lake takes, and the option each sets (delta-rs names;
earlier entries win over later ones that set the same option)."""


def parse_lake_options(pairs: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` flags as options (keys lower-cased, as delta-rs treats them); a name the
    lake does not support is an error (ConfigError), never a silently ignored flag."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidCompactionOptionError(
                f"--lake-option takes KEY=VALUE (e.g. AWS_REGION=us-east-1), not {pair!r}"
            )
        options[key.strip().lower()] = value
    return checked_storage_options(options, "--lake-option")


def from_environment(table_uri: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The options the environment gives the lake (only an ``s3://`` lake takes any)."""
    found: dict[str, str] = {}
    if LakeStorage(table_uri).scheme not in S3_SCHEMES:
        return found
    for variable, option in S3_ENVIRONMENT.items():
        value = environ.get(variable)
        if value and option not in found:
            found[option] = value
    return found


def with_environment(
    table_uri: str, options: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, str]:
    """``options`` completed from the environment for the lake's scheme (options win)."""
    return {**from_environment(table_uri, environ), **{k.lower(): v for k, v in options.items()}}
