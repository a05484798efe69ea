"""`gym-swe images build`: the docker sandbox's base image, and with ``--tasks``, ``--harness`` or ``--serve``
the images built on it (SWE tasks' environments, an agent harness, gym-swe serve as an OpenEnv server)."""

from __future__ import annotations

import argparse
from typing import Any

from gym_swe.cli.options import add_harness, add_repo_source, command
from gym_swe.integrations.harnesses.registry import MINI_SWE_AGENT


def add_to(commands: Any) -> None:
    from gym_swe.sandbox.docker import BASE_IMAGE
    from gym_swe.sandbox.images import DEBIAN_MIRROR, METHODS

    images = command(commands, "images", "Docker images for the docker sandbox", ["gym-swe images build"])
    images_commands = images.add_subparsers(dest="images_command", required=True, metavar="COMMAND")
    build = command(
        images_commands,
        "build",
        "build the base image (python3, git, patch, pytest), and with --tasks the SWE task images",
        ["gym-swe images build", "gym-swe images build --tasks bundled",
         "gym-swe images build --harbor bundled",
         "gym-swe images build --tasks lite.jsonl --repo-source mirrors --task-id django__django-16139"],
    )  # fmt: skip
    build.add_argument("--name", default=BASE_IMAGE, help="image name")
    build.add_argument(
        "--method",
        choices=METHODS,
        default="auto",
        help="debootstrap from Debian packages, or the official python image (auto: whichever "
        "a registry allows)",
    )
    build.add_argument("--mirror", default=DEBIAN_MIRROR, help="Debian mirror for debootstrap")
    build.add_argument("--force", action="store_true", help="rebuild even when the image is up to date")
    build.add_argument("--tasks", help="also build the images of these SWE tasks (e.g. bundled)")
    build.add_argument("--task-id", action="append", help="with --tasks: only this task's image (repeatable)")
    build.add_argument(
        "--harbor",
        help="also build the images of these Harbor tasks (bundled, a task folder or a folder of them), from "
        "each one's environment/Dockerfile",
    )
    add_repo_source(build, "with --tasks: a directory of repository mirrors")
    add_harness(
        build,
        "also build the image with this agent harness installed (mini-swe-agent: wheels downloaded on "
        "this host, installed offline; an npm harness: its installed folder and Node copied in), for "
        "running its CLI inside a docker sandbox",
    )
    build.add_argument(
        "--serve",
        action="store_true",
        help="also build gym-swe-serve:latest, gym-swe serve as an OpenEnv environment in a container "
        "(wheels and bubblewrap downloaded on this host, installed offline)",
    )
    build.add_argument(
        "--serve-dir",
        help="with --serve: also write the image's OpenEnv package (openenv.yaml, server/, wheels) here, "
        "for openenv build and openenv push",
    )
    build.set_defaults(run=run_build)


def run_build(args: argparse.Namespace) -> int:
    from gym_swe.errors import ConfigError
    from gym_swe.sandbox.images import build_base_image

    if args.serve_dir and not args.serve:
        raise ConfigError("--serve-dir needs --serve")
    if args.task_id and not args.tasks:
        raise ConfigError("--task-id needs --tasks")

    harbor_tasks = None
    if args.harbor:  # read (and checked) before anything is built
        from gym_swe.tasks.harbor import load_harbor_tasks

        harbor_tasks = [task for task in load_harbor_tasks(args.harbor) if task.dockerfile is not None]
    build_base_image(name=args.name, method=args.method, mirror=args.mirror, force=args.force)
    if args.tasks:
        from gym_swe.tasks.images import build_task_image
        from gym_swe.tasks.repos import RepoSource
        from gym_swe.tasks.swe import load_swe_tasks

        source = RepoSource(args.repo_source)
        tasks = load_swe_tasks(args.tasks)
        # --task-id as prepare and validate take it: a file of SWE-bench's 300 or 500 records is built only
        # for the tasks asked for (an unknown or refused id fails here, before any image is built)
        selected = [tasks.get(task_id) for task_id in args.task_id] if args.task_id else list(tasks)
        for task in selected:
            build_task_image(task, source, base=args.name, force=args.force)
    for harbor_task in harbor_tasks or ():
        from gym_swe.tasks.harbor_images import harbor_image

        harbor_image(harbor_task, force=args.force)
    if args.harness == MINI_SWE_AGENT:
        from gym_swe.integrations.harness_image import build_harness_image

        build_harness_image(base=args.name, force=args.force)
    elif args.harness:
        from gym_swe.integrations.harnesses.image import build_harness_image as build_npm_harness_image
        from gym_swe.integrations.harnesses.registry import harness_named

        build_npm_harness_image(harness_named(args.harness), base=args.name, force=args.force)
    if args.serve:
        from gym_swe.integrations.openenv_image import build_serve_image

        build_serve_image(base=args.name, force=args.force, keep=args.serve_dir)
    return 0
