"""``liftlog cluster ...``: cluster-wide admin actions over REST (decommission a broker, the
activity stream)."""

from __future__ import annotations

import argparse
import json

from liftlog.cli.common import Subcommands, add_json_arg, add_server_arg, print_result, rest
from spark_log.api_models import ActivityStatus, DecommissionPlan

ACTIVITY_ROUTE = "/v1/cluster/activity"


def add_cluster_parser(sub: Subcommands) -> None:
    cluster = sub.add_parser(
        "cluster", help="cluster-wide admin actions (decommission, activity stream)"
    )
    csub = cluster.add_subparsers(title="cluster commands", metavar="COMMAND")
    retire = csub.add_parser(
        "decommission",
        help="move every replica off a broker (reassignments onto the other live brokers)",
    )
    retire.add_argument("broker", type=int, help="the broker id to empty")
    retire.add_argument(
        "--dry-run", action="store_true", help="only print the plan (default: run it)"
    )
    add_json_arg(retire, "the plan")
    add_server_arg(retire)
    retire.set_defaults(run=_decommission)
    activity = csub.add_parser(
        "activity", help="record admin operations in the __activity stream (opt-in)"
    )
    activity.add_argument(
        "action",
        choices=["enable", "disable", "status"],
        help="switch recording on or off, or show whether it is on",
    )
    add_json_arg(activity, "the state")
    add_server_arg(activity)
    activity.set_defaults(run=_activity)


def _decommission(args: argparse.Namespace) -> int:
    body = {"broker_id": args.broker, "dry_run": args.dry_run}
    response = rest(args).request("POST", "/v1/cluster/decommission", json_body=body)
    plan = DecommissionPlan.from_json(response.json())
    if args.json:
        print(json.dumps(plan.to_json(), indent=2))
        return 0
    for move in plan.moves:
        print(
            f"{move.stream}/{move.partition}: {list(move.replicas)} -> {list(move.target_replicas)}"
        )
    verb = "submitted" if plan.submitted else "dry run, nothing submitted"
    print(f"broker {plan.broker_id}: {len(plan.moves)} partition(s) to move ({verb})")
    if plan.submitted:
        print("follow with: liftlog stream reassign STREAM --status")
    return 0


def _activity(args: argparse.Namespace) -> int:
    client = rest(args)
    if args.action == "status":
        response = client.request("GET", ACTIVITY_ROUTE)
    else:
        body = {"enabled": args.action == "enable"}
        response = client.request("PUT", ACTIVITY_ROUTE, json_body=body)
    state = ActivityStatus.from_json(response.json())
    line = f"activity {'enabled' if state.enabled else 'disabled'} ({state.stream}"
    return print_result(args, state.to_json(), f"{line}, {state.pending} queued)")
