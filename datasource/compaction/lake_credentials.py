"""Where a compaction run finds the lake's keys when no ``--lake-option`` gives them, and a
clear refusal when nothing does.

``liftlog standalone --lake s3`` writes its store's endpoint and keys as the ``[lake]`` table
of the credentials file (``--credentials-file``, ``LIFTLOG_CREDENTIALS_FILE``): the lowest
layer, under the ``AWS_*`` environment. An ``s3://`` lake left with no key at all would send
delta-rs down the AWS credential chain to the EC2 instance metadata service, which answers
off EC2 with a screen of retries and "Operation not supported"; the run is refused before
that, in one line naming the flag and the file. A credential source delta-rs finds on its own
(a profile, web identity, a container's or, with ``AWS_EC2_METADATA_DISABLED`` set, the
instance metadata) lets the run go on.
"""

from __future__ import annotations

from collections.abc import Mapping

from datasource.compaction.errors import CompactionError
from spark_log.client.credentials import ENV_CREDENTIALS_FILE
from spark_log.lake.storage import S3_SCHEMES, LakeStorage
from spark_log.storage_options import AWS_ACCESS_KEY_ID

AWS_CREDENTIAL_SOURCES = (
    "AWS_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_EC2_METADATA_DISABLED",
)
"""Variables that tell delta-rs's AWS chain where else to find credentials (setting
``AWS_EC2_METADATA_DISABLED=false`` says: use the instance metadata)."""


class LakeCredentialsMissingError(CompactionError):
    """An ``s3://`` lake with no access key from any source Liftlog reads and no other AWS
    credential source: refused before delta-rs goes looking on the network."""

    code = "lake_credentials_missing"


def check_lake_credentials(
    table_uri: str, options: Mapping[str, str], environ: Mapping[str, str]
) -> None:
    """LakeCredentialsMissingError when ``table_uri`` is on S3 and neither ``options`` (every
    layer merged) nor the environment give delta-rs a credential."""
    if LakeStorage(table_uri).scheme not in S3_SCHEMES or options.get(AWS_ACCESS_KEY_ID):
        return
    if any(environ.get(name) for name in AWS_CREDENTIAL_SOURCES):
        return
    raise LakeCredentialsMissingError(
        f"no credentials for the lake {table_uri}: pass --lake-option "
        "AWS_ACCESS_KEY_ID=... --lake-option AWS_SECRET_ACCESS_KEY=... (and AWS_ENDPOINT_URL "
        "for a store other than AWS), or the credentials file with their [lake] table "
        f"(--credentials-file or ${ENV_CREDENTIALS_FILE}; `liftlog standalone --lake s3` "
        "writes <data-dir>/credentials.toml), or source <data-dir>/lake.env"
    )
