"""`gym-swe play`: an episode in the terminal, the player typing what the model would, graded at the end.

An entry is a tool call as a model writes it (pasted over several lines, it is read until it closes), a bare
JSON call, or a plain shell command as a shortcut for bash. ``env.step`` runs in a thread so that Ctrl-C stops
the running command (where the sandbox can) instead of the game.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gym_swe.cli.options import ENV_HELP, add_sandbox, check_env, command

if TYPE_CHECKING:
    import gymnasium


def add_to(commands: Any) -> None:
    parser = command(
        commands,
        "play",
        "play an episode in the terminal, typing what the model would, and get graded at the end",
        [
            "gym-swe play CodeDebug-v0 --task-id GymSwe/3",
            "gym-swe play SWEGym-v0 --task-id gymswe__semverkit-1 --sandbox docker",
        ],
    )
    parser.add_argument("env", help=ENV_HELP)
    parser.add_argument("--task-id", help="the task to play (default: one picked by --seed)")
    parser.add_argument("--tasks", help="task source (default: the env's bundled tasks)")
    add_sandbox(parser)
    parser.add_argument(
        "--seed", type=int, help="picks the task when no --task-id is given (default: random)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import gymnasium  # gym_swe, this package's parent, has registered the envs

    from gym_swe.envs.unwrapped import tool_env

    check_env(args.env)
    kwargs = {"sandbox": args.sandbox}
    if args.tasks:
        kwargs["tasks"] = args.tasks
    env = gymnasium.make(args.env, **kwargs)
    try:
        options = {"task_id": args.task_id} if args.task_id else None
        observation, info = env.reset(seed=args.seed, options=options)
        inner = tool_env(env)
        assert inner.sandbox is not None  # reset made it
        help_text = PLAY_HELP.format(path=inner.sandbox.workdir, ctrl_c=CTRL_C[_interrupt(env) is not None])
        print(observation)
        print(f"\n[task {info['task_id']}] {help_text}")
        max_turns = inner.max_turns
        while True:
            turn = len(inner.history) + 1
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


def _step(env: gymnasium.Env[str, Any], action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
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
    result: tuple[str, float, bool, bool, dict[str, Any]] = outcome["result"]
    return result


def _interrupt(env: gymnasium.Env[str, Any]) -> Callable[[], Any] | None:
    """The sandbox's way to stop the command it runs now, from another thread, where it has one."""
    from gym_swe.envs.unwrapped import tool_env

    interrupt = getattr(tool_env(env).sandbox, "interrupt", None)
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
