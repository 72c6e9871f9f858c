"""``liftlog cluster ...``: cluster-wide admin actions over REST (decommission a broker)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from liftlog.cli.common import add_json_arg, add_server_arg, rest
from spark_log.api_models import DecommissionPlan


def add_cluster_parser(sub: Any) -> None:
    cluster = sub.add_parser("cluster", help="cluster-wide admin actions (decommission a broker)")
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
