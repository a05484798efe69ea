"""`gym-swe harnesses`: install the npm agent harnesses (and the Node they run on) into gym_swe's cache, and
list what is installed. See `gym_swe.integrations.harnesses`."""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from gym_swe.cli.options import command


def add_to(commands: Any) -> None:
    from gym_swe.integrations.harnesses.registry import HARNESSES

    harnesses = command(
        commands, "harnesses", "agent harnesses: install them, list them", ["gym-swe harnesses list"]
    )
    harness_commands = harnesses.add_subparsers(dest="harnesses_command", required=True, metavar="COMMAND")
    install = command(
        harness_commands,
        "install",
        "install harnesses (pinned npm packages, and Node) into gym_swe's cache; npm's downloads are "
        "cached beside them, so a reinstall works offline",
        ["gym-swe harnesses install pi opencode"],
    )
    install.add_argument("names", nargs="+", metavar="NAME", help=f"harnesses: {', '.join(HARNESSES)}")
    install.set_defaults(run=run_install)
    listing = command(
        harness_commands, "list", "the harnesses, and where each is installed", ["gym-swe harnesses list"]
    )
    listing.set_defaults(run=run_list)


def run_install(args: argparse.Namespace) -> int:
    from gym_swe.integrations.harnesses.install import install_harness
    from gym_swe.integrations.harnesses.registry import harness_named

    harnesses = [harness_named(name) for name in args.names]  # every name checked before any install
    for harness in harnesses:
        installed = install_harness(harness)
        print(f"{harness.name}: {installed.harness_dir}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from gym_swe.errors import missing_dependency
    from gym_swe.integrations.harnesses.install import INSTALL_COMMAND, installation
    from gym_swe.integrations.harnesses.registry import HARNESSES, MINI_SWE_AGENT, harness_named

    mini = importlib.util.find_spec("minisweagent") is not None  # not imported: it prints a banner
    where = "installed" if mini else str(missing_dependency("minisweagent", "mini-swe-agent", feature="It"))
    print(f"{MINI_SWE_AGENT}: a Python package, plays on the host; {where}")
    for name in HARNESSES:
        harness = harness_named(name)
        found = installation(harness)
        where = str(found.harness_dir) if found else f"not installed ({INSTALL_COMMAND} {name})"
        packages = " ".join(package.spec for package in harness.packages)
        print(f"{name}: {packages}, speaks {harness.dialect}; {where}")
    return 0
