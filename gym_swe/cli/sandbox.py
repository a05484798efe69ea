"""`gym-swe sandbox prune`: remove what crashed runs left (local workspaces and cgroups, containers)."""

from __future__ import annotations

import argparse
from typing import Any

from gym_swe.cli.options import command
from gym_swe.errors import GymSweError


def add_to(commands: Any) -> None:
    sandbox = command(commands, "sandbox", "sandbox housekeeping", ["gym-swe sandbox prune"])
    sandbox_commands = sandbox.add_subparsers(dest="sandbox_command", required=True, metavar="COMMAND")
    prune = command(
        sandbox_commands,
        "prune",
        "remove what crashed runs left behind (containers, workspaces, cgroups)",
        ["gym-swe sandbox prune", "gym-swe sandbox prune --all"],
    )
    prune.add_argument(
        "--all", action="store_true", help="remove every gym_swe container, also those of runs still going"
    )
    prune.set_defaults(run=run_prune)


def run_prune(args: argparse.Namespace) -> int:
    from gym_swe.sandbox.cgroups import prune_cgroups
    from gym_swe.sandbox.local import prune_workspaces

    workspaces = prune_workspaces()
    print(f"local: removed {len(workspaces)} leftover workspace(s)")
    cgroups = prune_cgroups()
    if cgroups:
        print(f"local: removed {len(cgroups)} leftover cgroup(s)")
    try:
        from gym_swe.sandbox.docker import prune

        containers = prune(all_owners=args.all)
        listed = ": " + " ".join(containers) if containers else ""
        print(f"docker: removed {len(containers)} container(s){listed}")
    except GymSweError as error:
        print(f"docker: skipped ({error})")
    return 0
