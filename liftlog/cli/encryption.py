"""``liftlog encryption ...``: master keys for encryption at rest (docs/security.md).

``generate-key`` prints a new random master key (base64 of 32 bytes) for ``[encryption]``;
``rotate`` asks a node to re-wrap every partition's data key under its current master key.
"""

from __future__ import annotations

import argparse
import base64
import os

from liftlog.cli.common import Subcommands, add_json_arg, add_server_arg, print_result, rest
from spark_log.api_models import EncryptionRotation
from spark_log.encryption_config import MASTER_KEY_BYTES


def add_encryption_parser(sub: Subcommands) -> None:
    encryption = sub.add_parser(
        "encryption", help="encryption at rest: generate a master key, rotate master keys"
    )
    esub = encryption.add_subparsers(title="encryption commands", metavar="COMMAND")
    generate = esub.add_parser(
        "generate-key", help="print a new random master key (base64) for [encryption] master_key"
    )
    generate.set_defaults(run=_generate_key)
    rotate = esub.add_parser(
        "rotate",
        help="re-wrap every data key under the nodes' current master key (no data rewritten)",
    )
    add_json_arg(rotate, "the result")
    add_server_arg(rotate)
    rotate.set_defaults(run=_rotate)


def _generate_key(_args: argparse.Namespace) -> int:
    print(base64.b64encode(os.urandom(MASTER_KEY_BYTES)).decode("ascii"))
    return 0


def _rotate(args: argparse.Namespace) -> int:
    response = rest(args).request("POST", "/v1/encryption/rotate")
    result = EncryptionRotation.from_json(response.json())
    line = (
        f"data keys now wrapped by master key {result.key_id}: "
        f"{result.rewrapped} re-wrapped, {result.unchanged} already current"
    )
    return print_result(args, result.to_json(), line)
