"""``liftlog auth ...`` (tokens, whoami) and ``liftlog acl ...``: who may do what, over REST.

A created token is printed once (it is stored hashed and cannot be shown again); listings
never show secrets. Changes apply on every node within moments (ZooKeeper watches).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from liftlog.cli.common import (
    Subcommands,
    add_json_arg,
    add_server_arg,
    print_result,
    print_table,
    rest,
)
from spark_log.auth import Action
from spark_log.client import auth_admin


def add_auth_parser(sub: Subcommands) -> None:
    auth = sub.add_parser("auth", help="bearer tokens (create, list, revoke) and whoami")
    asub = auth.add_subparsers(title="auth commands", metavar="COMMAND")
    token = asub.add_parser("token", help="create, list or revoke bearer tokens")
    tsub = token.add_subparsers(title="token commands", metavar="COMMAND")
    create = _leaf(tsub, "create", "a new token for a principal (printed once)", _token_create)
    create.add_argument("principal", help="who the token authenticates (a plain name)")
    create.add_argument("--description", default="", help="what the token is for (default: none)")
    _leaf(tsub, "list", "every token's id, principal and description (no secrets)", _token_list)
    revoke = _leaf(tsub, "revoke", "revoke a token on every node", _token_revoke)
    revoke.add_argument("token_id", help="the token's id (see `liftlog auth token list`)")
    _leaf(asub, "whoami", "the principal your credentials authenticate as", _whoami)


def add_acl_parser(sub: Subcommands) -> None:
    acl = sub.add_parser("acl", help="allow or deny principals actions on streams and cluster")
    asub = acl.add_subparsers(title="acl commands", metavar="COMMAND")
    add = _leaf(asub, "add", "add an ACL entry (allow, or deny with --deny)", _acl_add)
    add.add_argument("--principal", required=True, help="a principal, or '*' for everyone")
    add.add_argument(
        "--action",
        required=True,
        choices=[str(a) for a in Action],
        help="the action allowed or denied (docs/security.md lists what each covers)",
    )
    add.add_argument(
        "--resource", required=True, help="'cluster' or 'stream:<name or glob>' (stream:orders-*)"
    )
    add.add_argument(
        "--deny", action="store_true", help="deny instead of allow (default: allow; a deny wins)"
    )
    _leaf(asub, "list", "every ACL entry", _acl_list)
    remove = _leaf(asub, "remove", "remove an ACL entry on every node", _acl_remove)
    remove.add_argument("acl_id", help="the entry's id (see `liftlog acl list`)")


def _leaf(
    sub: Subcommands, name: str, helptext: str, run: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=helptext)
    add_json_arg(parser, "the server's answer")
    add_server_arg(parser)
    parser.set_defaults(run=run)
    return parser


def _token_create(args: argparse.Namespace) -> int:
    created = auth_admin.create_token(rest(args), args.principal, args.description)
    if args.json:
        print(json.dumps(created.to_json(), indent=2))
        return 0
    print(f"token {created.token_id} for {created.principal} (shown once, keep it secret):")
    print(created.token)
    return 0


def _token_list(args: argparse.Namespace) -> int:
    tokens = auth_admin.list_tokens(rest(args))
    if args.json:
        print(json.dumps([t.to_json() for t in tokens], indent=2))
        return 0
    print_table(
        ["TOKEN_ID", "PRINCIPAL", "CREATED_MS", "DESCRIPTION"],
        [[t.token_id, t.principal, t.created_ms, t.description] for t in tokens],
    )
    return 0


def _token_revoke(args: argparse.Namespace) -> int:
    answer = auth_admin.revoke_token(rest(args), args.token_id)
    return print_result(args, answer.to_json(), f"revoked token {args.token_id}")


def _whoami(args: argparse.Namespace) -> int:
    me = auth_admin.whoami(rest(args))
    return print_result(args, me.to_json(), f"{me.principal} (auth {me.auth})")


def _acl_add(args: argparse.Namespace) -> int:
    permission = auth_admin.DENY if args.deny else auth_admin.ALLOW
    entry = auth_admin.add_acl(rest(args), args.principal, args.action, args.resource, permission)
    line = f"acl {entry.acl_id}: {entry.permission} {entry.principal} {entry.action} "
    return print_result(args, entry.to_json(), line + f"on {entry.resource}")


def _acl_list(args: argparse.Namespace) -> int:
    acls = auth_admin.list_acls(rest(args))
    if args.json:
        print(json.dumps([a.to_json() for a in acls], indent=2))
        return 0
    print_table(
        ["ACL_ID", "PRINCIPAL", "PERMISSION", "ACTION", "RESOURCE"],
        [[a.acl_id, a.principal, a.permission, a.action, a.resource] for a in acls],
    )
    return 0


def _acl_remove(args: argparse.Namespace) -> int:
    answer = auth_admin.remove_acl(rest(args), args.acl_id)
    return print_result(args, answer.to_json(), f"removed acl {args.acl_id}")
