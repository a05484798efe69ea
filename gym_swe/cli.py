"""The ``gym-swe`` command.

    gym-swe envs                                   the registered envs, their task sources and counts
    gym-swe play ENV [--task-id ID] [--tasks SRC] [--sandbox local|docker]
    gym-swe validate --env ENV [--tasks SRC] [--sandbox local|docker] [--json PATH] [-v] [--exclude-test ID]
                                                   gold fix -> resolved, no fix -> not, for every task
    gym-swe prepare --tasks SRC [--task-id ID]     checkouts and environments for local SWE sandboxes
    gym-swe eval --env ENV --generator hf|vllm|vllm-server|openai-chat --model M [-n 4] [--out PATH]
                 [--harness mini-swe-agent]
    gym-swe view trajectories.jsonl [-o PAGE.html] [--outcome resolved|unresolved|failed] [--min-reward R]
    gym-swe images build [--method auto|debootstrap|python] [--name NAME] [--force] [--tasks SRC]
                         [--harness mini-swe-agent]
    gym-swe sandbox prune [--all]

Each subcommand imports what it needs when it runs, so ``gym-swe --help`` is instant; its ``--help`` shows
the defaults and examples. Errors gym_swe raises on purpose are one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gym_swe.errors import ConfigError, GymSweError, unknown_name

Handler = Callable[[argparse.Namespace], int]


def _images_build(args: argparse.Namespace) -> int:
    from gym_swe.sandbox.images import build_base_image

    build_base_image(name=args.name, method=args.method, mirror=args.mirror, force=args.force)
    if args.tasks:
        from gym_swe.tasks.images import build_task_image
        from gym_swe.tasks.repos import RepoSource
        from gym_swe.tasks.swe import load_swe_tasks

        source = RepoSource(args.repo_source)
        for task in load_swe_tasks(args.tasks):
            build_task_image(task, source, base=args.name, force=args.force)
    if args.harness:
        from gym_swe.integrations.harness_image import build_harness_image

        build_harness_image(base=args.name, force=args.force)
    return 0


def _prepare(args: argparse.Namespace) -> int:
    from gym_swe.tasks.environments import prepare_environment
    from gym_swe.tasks.repos import RepoSource
    from gym_swe.tasks.swe import load_swe_tasks

    source = RepoSource(args.repo_source)
    tasks = load_swe_tasks(args.tasks)
    selected = [tasks.get(task_id) for task_id in args.task_id] if args.task_id else list(tasks)
    failed: list[tuple[str, str]] = []
    for number, task in enumerate(selected, start=1):  # a failure does not stop the others: all are listed
        count = f"[{number}/{len(selected)}]"
        try:
            prepared = prepare_environment(task, source)
        except GymSweError as error:
            failed.append((task.instance_id, str(error)))
            print(f"{count} {task.instance_id}: FAILED ({str(error).splitlines()[0][:200]})", flush=True)
            continue
        print(f"{count} {task.instance_id}: ready (Python {prepared.python}, {prepared.path})", flush=True)
    print(f"prepared {len(selected) - len(failed)}/{len(selected)} task(s) of {args.tasks!r}")
    for task_id, message in failed:
        print(f"\n{task_id}: {message}", file=sys.stderr)
    return 1 if failed else 0


def _validate(args: argparse.Namespace) -> int:
    from gym_swe.validate import Progress, print_table, validate

    rows = validate(
        args.env,
        tasks=args.tasks,
        sandbox=args.sandbox,
        workers=args.workers,
        repo_source=args.repo_source,
        task_ids=args.task_id,
        exclude_tests=args.exclude_test or (),
        progress=Progress(),  # on stderr: the bar, the tasks in flight, each verdict as it lands
    )
    print_table(rows, verbose=args.verbose)
    if args.json:
        import json

        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)
        print(f"report: {args.json}")
    return 0 if all(row["ok"] for row in rows) else 1


def _sandbox_prune(args: argparse.Namespace) -> int:
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


def _envs(args: argparse.Namespace) -> int:
    from gym_swe.registration import ENVS, TASK_SOURCES

    print(f"{'env':<16} {'task source':<16} tasks")
    for spec in ENVS:
        for source, count in TASK_SOURCES[spec["id"]]().items():
            print(f"{spec['id']:<16} {source:<16} {count}")
    return 0


PLAY_HELP = """Type a tool call as the model would write it, on one line or pasted over several, e.g.
  <tool_call>{{"name": "str_replace_editor",
              "arguments": {{"command": "view", "path": "{path}"}}}}</tool_call>
or {{"name": "bash", "arguments": {{"command": "ls"}}}}, or a plain shell command as a shortcut for bash.
`submit` submits for grading, `/help` shows this, `/quit` (or Ctrl-D) ends without grading.
{ctrl_c}"""
CTRL_C = {
    True: "Ctrl-C stops a running command; the game goes on.",
    False: "Ctrl-C does not end the game; a running command ends when it is done or at its timeout.",
}

# An entry that opens one of these is read until it closes: a call pasted over lines is one action.
_CLOSING = {
    "<tool_call>": "</tool_call>",
    "<function=": "</function>",
    "<tool_code>": "</tool_code>",
    "```": "```",
}


def _complete(text: str) -> bool:
    """Whether a typed entry is a whole action (a multi-line tool call is read until it closes)."""
    text = text.strip()
    for opening, closing in _CLOSING.items():
        if text.startswith(opening):
            return closing in text[len(opening) :]
    if not text.startswith(("{", "[")):
        return True
    depth, in_string, escaped = 0, False, False
    for char in text:
        if escaped:
            escaped = False
        elif in_string and char == "\\":
            escaped = True
        elif char == '"':
            in_string = not in_string
        elif not in_string and char in "{[":
            depth += 1
        elif not in_string and char in "}]":
            depth -= 1
    return depth <= 0


def _read_entry(prompt: str) -> str:
    """One entry from the terminal: a line, or the lines of a pasted tool call up to its end (an empty line
    ends it early). Raises EOFError at the end of input."""
    lines = [input(prompt)]
    while not _complete("\n".join(lines)):
        try:
            line = input("... ")
        except EOFError:
            break
        if not line.strip():
            break
        lines.append(line)
    return "\n".join(lines).strip()


def _action(entry: str) -> str:
    """What the env gets for a typed entry: tool calls as typed, a bare JSON call in <tool_call> tags (the
    format the prompt shows, so a parse error's hint matches it), anything else as a bash command."""
    import json

    if entry == "submit":
        return '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
    if entry.startswith("{"):
        return f"<tool_call>{entry}</tool_call>"
    if entry.startswith(("<", "[", "```")):
        return entry
    return f"<tool_call>{json.dumps({'name': 'bash', 'arguments': {'command': entry}})}</tool_call>"


def _step(env: Any, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """``env.step`` in a thread, so that Ctrl-C comes here while it runs: the first stops the running command
    (where the sandbox can: ``Sandbox.interrupt()``), a second one ends the game."""
    import threading
    import time

    outcome: dict[str, Any] = {}
    done = threading.Event()  # not Thread.join: a Ctrl-C inside join() can leave is_alive() wrong

    def run() -> None:
        try:
            outcome["result"] = env.step(action)
        except BaseException as error:  # handed to the main thread, which raises it
            outcome["error"] = error
        finally:
            done.set()

    threading.Thread(target=run, name="gym-swe-play-step", daemon=True).start()
    interrupt = _interrupt(env)
    started, announced, interrupted = time.monotonic(), False, False
    while not done.is_set():
        try:
            done.wait(0.2)
            if not announced and not done.is_set() and time.monotonic() - started > 1.0:
                announced = True  # a sign that something runs, once it runs long enough to wonder
                print("... running" + (" (Ctrl-C stops it)" if interrupt else ""), flush=True)
        except KeyboardInterrupt:
            if interrupted:
                raise
            interrupted = True
            if interrupt is not None:
                interrupt()
                print("\n^C: stopping the command", flush=True)
            else:
                print(
                    "\n^C: this sandbox cannot stop a running command; it ends at its timeout (bash's "
                    '"timeout" argument). Ctrl-C again ends the game.',
                    flush=True,
                )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _interrupt(env: Any) -> Callable[[], Any] | None:
    """The sandbox's way to stop the command it runs now, from another thread, where it has one."""
    interrupt = getattr(env.unwrapped.sandbox, "interrupt", None)
    return interrupt if callable(interrupt) else None


def _print_grade(grade: dict[str, Any]) -> None:
    """The hidden tests' outcomes, each with its group (FAIL_TO_PASS, PASS_TO_PASS) where a task has them."""
    group_of = {name: group for group, names in (grade.get("groups") or {}).items() for name in names}
    width = max((len(group) for group in group_of.values()), default=0)
    for test in grade["tests"]:
        group = f"{group_of.get(test['name'], ''):<{width}} " if width else ""
        print(f"  {test['outcome']:<8} {group}{test['name']}")
    if group_of:
        print(
            "  (FAIL_TO_PASS: failed before the fix, must pass after it; PASS_TO_PASS: passed before, must "
            "still pass)"
        )
    if grade.get("rejection"):
        print(f"  submission rejected: {grade['rejection']}")
    if grade.get("error"):
        print(f"  grading error: {grade['error']}")


def _play(args: argparse.Namespace) -> int:
    import gymnasium

    import gym_swe  # noqa: F401  (registers the envs)

    _check_env(args.env)
    kwargs = {"sandbox": args.sandbox}
    if args.tasks:
        kwargs["tasks"] = args.tasks
    env = gymnasium.make(args.env, **kwargs)
    try:
        options = {"task_id": args.task_id} if args.task_id else None
        observation, info = env.reset(seed=args.seed, options=options)
        help_text = PLAY_HELP.format(
            path=env.unwrapped.sandbox.workdir, ctrl_c=CTRL_C[_interrupt(env) is not None]
        )
        print(observation)
        print(f"\n[task {info['task_id']}] {help_text}")
        max_turns = env.unwrapped.max_turns
        while True:
            turn = len(env.unwrapped.history) + 1
            try:
                entry = _read_entry(f"\n[turn {turn}/{max_turns}] > ")
            except EOFError:
                entry = "/quit"
            except KeyboardInterrupt:
                print("\n(Ctrl-C: type /quit or press Ctrl-D to end the game)")
                continue
            if not entry:
                continue
            if entry == "/quit":
                print("quit without grading")
                return 0
            if entry == "/help":
                print(help_text)
                continue
            observation, reward, terminated, truncated, info = _step(env, _action(entry))
            print(observation)
            if terminated or truncated:
                grade = info["grade"]
                print(
                    f"\n=== episode over ({info['end_reason']}): {grade['passed']}/{grade['total']} hidden "
                    f"tests passed, reward {reward:.2f} ==="
                )
                _print_grade(grade)
                return 0
    except KeyboardInterrupt:
        print("\nquit without grading")
        raise
    finally:
        env.close()


def _check_env(env_id: str) -> None:
    """Fail at once, with the nearest name, on an env id gym_swe does not register."""
    from gym_swe.registration import ENVS

    known = [spec["id"] for spec in ENVS]
    if env_id.removeprefix("gym_swe:") not in known:
        raise ConfigError(unknown_name("env", env_id, known))


def _eval(args: argparse.Namespace) -> int:
    _check_env(args.env)
    from gym_swe.rollout.run_eval import run_eval

    if args.harness == "mini-swe-agent":
        from gym_swe.integrations.mini_swe_agent import collect_with_harness

        return run_eval(args, play=collect_with_harness)
    return run_eval(args)


def _view(args: argparse.Namespace) -> int:
    from gym_swe.rollout.view import load_trajectories, select, write_html

    trajectories = load_trajectories(args.trajectories)
    shown = select(trajectories, outcomes=args.outcome, min_reward=args.min_reward)
    out = args.output or str(args.trajectories).rsplit(".", 1)[0] + ".html"
    write_html(shown, out, title=f"gym_swe: {args.trajectories}")
    which = f"{len(shown)} of {len(trajectories)}" if len(shown) != len(trajectories) else str(len(shown))
    print(f"{which} episodes -> {out}")
    return 0


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Each option's help ends with its default (where it has one); the examples keep their lines."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        if (
            "%(default)" in help_text
            or not action.option_strings
            or action.default in (None, False, argparse.SUPPRESS)
        ):
            return help_text
        return help_text + " (default: %(default)s)"


def _command(
    commands: Any, name: str, help_text: str, examples: Sequence[str] = ()
) -> argparse.ArgumentParser:
    """A subcommand whose --help shows its defaults and how it is typed."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples) if examples else None
    return commands.add_parser(
        name, help=help_text, description=help_text, epilog=epilog, formatter_class=HelpFormatter
    )


REPO_SOURCE_HELP = (
    "SWE tasks: a directory of repository mirrors (owner__name.git, owner/name.git, owner/name, name.git) "
    "or a JSON file mapping 'owner/name' to a path or URL"
)
SANDBOX_HELP = "where agent commands run: local (a bubblewrap jail per episode) or docker (a container)"


def build_parser() -> argparse.ArgumentParser:
    from gym_swe.sandbox.docker import BASE_IMAGE
    from gym_swe.sandbox.images import DEBIAN_MIRROR, METHODS

    parser = argparse.ArgumentParser(
        prog="gym-swe",
        description="Software-engineering RL environments.",
        epilog="examples:\n  gym-swe envs\n  gym-swe play CodeDebug-v0\n  gym-swe eval --help",
        formatter_class=HelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    envs = _command(
        commands, "envs", "list the registered envs with their task sources and counts", ["gym-swe envs"]
    )
    envs.set_defaults(handler=_envs)

    play = _command(
        commands,
        "play",
        "play an episode in the terminal, typing what the model would, and get graded at the end",
        [
            "gym-swe play CodeDebug-v0 --task-id GymSwe/3",
            "gym-swe play SWEGym-v0 --task-id gymswe__semverkit-1 --sandbox docker",
        ],
    )
    play.add_argument("env", help="env id: CodeDebug-v0 or SWEGym-v0")
    play.add_argument("--task-id", help="the task to play (default: one picked by --seed)")
    play.add_argument("--tasks", help="task source (default: the env's bundled tasks)")
    play.add_argument("--sandbox", default="local", choices=["local", "docker"], help=SANDBOX_HELP)
    play.add_argument("--seed", type=int, help="picks the task when no --task-id is given (default: random)")
    play.set_defaults(handler=_play)

    validate = _command(
        commands,
        "validate",
        "check every task: its fix resolves it and no fix does not",
        ["gym-swe validate --env SWEGym-v0 --tasks bundled --json report.json"],
    )
    validate.add_argument("--env", required=True, help="CodeDebug-v0 or SWEGym-v0")
    validate.add_argument("--tasks", default="bundled", help="task source")
    validate.add_argument("--task-id", action="append", help="only this task (repeatable)")
    validate.add_argument("--sandbox", default="local", choices=["local", "docker"], help=SANDBOX_HELP)
    validate.add_argument("--workers", type=int, default=2, help="tasks graded at once")
    validate.add_argument("--repo-source", help=REPO_SOURCE_HELP)
    validate.add_argument(
        "--exclude-test", action="append", metavar="ID",
        help="SWE tasks: leave out this test id, e.g. one that needs the network (repeatable)",
    )  # fmt: skip
    validate.add_argument(
        "-v", "--verbose", action="store_true", help="print each test's outcome and the test runs' log tails"
    )
    validate.add_argument("--json", help="write the report (per-test outcomes, log tails) to this path")
    validate.set_defaults(handler=_validate)

    prepare = _command(
        commands,
        "prepare",
        "make checkouts and environments for local SWE sandboxes (the network is used here only)",
        ["gym-swe prepare --tasks bundled",
         "gym-swe prepare --tasks lite.parquet --task-id pallets__flask-4992 --repo-source mirrors"],
    )  # fmt: skip
    prepare.add_argument("--tasks", default="bundled", help="SWE task source")
    prepare.add_argument("--task-id", action="append", help="only this task (repeatable)")
    prepare.add_argument("--repo-source", help=REPO_SOURCE_HELP)
    prepare.set_defaults(handler=_prepare)

    evaluate = _command(
        commands,
        "eval",
        "evaluate a model on an env: pass@1, pass@k, trajectories",
        [
            "gym-swe eval --env CodeDebug-v0 --generator hf --model Qwen/Qwen2.5-0.5B-Instruct --limit 8",
            "gym-swe eval --env CodeDebug-v0 --generator vllm-server --base-url http://127.0.0.1:8000 "
            "--model NAME --tokenizer PATH -n 4",
        ],
    )
    evaluate.add_argument("--env", required=True, help="CodeDebug-v0 or SWEGym-v0")
    evaluate.add_argument("--tasks", default="bundled", help="task source")
    evaluate.add_argument("--task-id", action="append", help="only this task (repeatable)")
    evaluate.add_argument("--limit", type=int, help="only the first N tasks")
    evaluate.add_argument("--sandbox", default="local", choices=["local", "docker"], help=SANDBOX_HELP)
    evaluate.add_argument(
        "--generator",
        required=True,
        choices=["hf", "vllm", "vllm-server", "openai-chat"],
        help="hf (transformers), vllm (in-process), vllm-server or openai-chat (an endpoint at --base-url)",
    )
    evaluate.add_argument(
        "--model", required=True, help="a model directory or Hugging Face id (servers: the served name)"
    )
    evaluate.add_argument("--base-url", help="vllm-server / openai-chat endpoint")
    evaluate.add_argument("--tokenizer", help="tokenizer path (default: the model's)")
    evaluate.add_argument("--api-key", help="for openai-chat (default: OPENAI_API_KEY)")
    evaluate.add_argument("-n", "--samples", type=int, default=1, help="samples per task")
    evaluate.add_argument(
        "--k", type=int, action="append", help="pass@k to report (repeatable; default: 1 and n)"
    )
    evaluate.add_argument("--max-turns", type=int, help="turns per episode (default: the env's)")
    evaluate.add_argument("--max-tokens", type=int, default=1024, help="tokens per turn")
    evaluate.add_argument("--max-model-len", type=int, default=8192, help="tokens per trajectory")
    evaluate.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    evaluate.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling: the top-p mass")
    evaluate.add_argument(
        "--seed", type=int, help="a run seed: makes a run repeatable (hf); samples still differ"
    )
    evaluate.add_argument("--parallel", type=int, default=8, help="episodes at once")
    evaluate.add_argument(
        "--harness",
        choices=["mini-swe-agent"],
        help="play each episode with this agent harness, unmodified, through gym_swe's proxy "
        "(default: gym_swe's own tool loop)",
    )
    evaluate.add_argument("--out", default="trajectories.jsonl", help="where to save the trajectories")
    evaluate.add_argument("--export-sft", help="also write the resolved trajectories as a chat SFT dataset")
    evaluate.set_defaults(handler=_eval)

    view = _command(
        commands,
        "view",
        "write trajectories as one HTML page to read episodes turn by turn",
        [
            "gym-swe view trajectories.jsonl",
            "gym-swe view trajectories.jsonl --outcome failed -o failed.html",
        ],
    )
    view.add_argument("trajectories", help="a .jsonl file from gym-swe eval")
    view.add_argument("-o", "--output", help="the HTML file (default: beside the .jsonl)")
    view.add_argument(
        "--outcome",
        action="append",
        choices=["resolved", "unresolved", "failed"],
        help="only episodes with this outcome (repeatable); failed: ended on an error, not graded",
    )
    view.add_argument("--min-reward", type=float, help="only episodes with at least this reward")
    view.set_defaults(handler=_view)

    images = _command(commands, "images", "Docker images for the docker sandbox", ["gym-swe images build"])
    images_commands = images.add_subparsers(dest="images_command", required=True, metavar="COMMAND")
    build = _command(
        images_commands,
        "build",
        "build the base image (python3, git, patch, pytest), and with --tasks the SWE task images",
        ["gym-swe images build", "gym-swe images build --tasks bundled"],
    )
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
    build.add_argument("--repo-source", help="with --tasks: a directory of repository mirrors")
    build.add_argument(
        "--harness",
        choices=["mini-swe-agent"],
        help="also build the image with this agent harness installed (wheels downloaded on this host, "
        "installed offline), for running its CLI inside a docker sandbox",
    )
    build.set_defaults(handler=_images_build)

    sandbox = _command(commands, "sandbox", "sandbox housekeeping", ["gym-swe sandbox prune"])
    sandbox_commands = sandbox.add_subparsers(dest="sandbox_command", required=True, metavar="COMMAND")
    prune = _command(
        sandbox_commands,
        "prune",
        "remove what crashed runs left behind (containers, workspaces, cgroups)",
        ["gym-swe sandbox prune", "gym-swe sandbox prune --all"],
    )
    prune.add_argument(
        "--all", action="store_true", help="remove every gym_swe container, also those of runs still going"
    )
    prune.set_defaults(handler=_sandbox_prune)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    handler: Handler = args.handler
    try:
        return handler(args)
    except GymSweError as error:
        print(f"gym-swe: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
