"""The harness contract: what an agent harness is to gym_swe, and what one rollout's run of it looks like.

A `Harness` is an agent CLI that gym_swe runs unmodified inside an episode's sandbox. It says:

- its ``name`` (``gym-swe eval --harness NAME``) and the proxy ``dialect`` it speaks (one of
  `gym_swe.rollout.proxy.dialects`: ``"chat_completions"``, ``"responses"``, ``"anthropic_messages"``,
  ``"google_generate"``);
- how it is installed: ``packages``, the npm packages at pinned versions that `install` puts in a folder
  gym_swe owns (beside the Node that gym_swe installs for every harness);
- how one run is launched (`Harness.launch`): given a `HarnessRun` (where the proxy is for its dialect, the
  rollout's secret as its API key, the model name, the task, an empty home directory gym_swe made for it),
  the files to write there, its command line and its environment (`Launch`). Configure the CLI only through
  its own documented settings: its config file, environment variables, flags. Never patch it;
- how its end is read (`Harness.end`): from its exit (`HarnessExit`), whether it submitted (it ended on its
  own with a final answer), stopped, or failed, and why (`HarnessEnd`). `end_of_exit` is the usual reading.

The runner (`gym_swe.integrations.harnesses.runner`) does everything else the same way for every harness:
the sandbox, the proxy's socket and the forwarder that carries the CLI's HTTP to it, the timeout, and the
graded end of the episode. Every path a `HarnessRun` names is a path inside the sandbox.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

OUTPUT_TAIL_CHARS = 2000
"""How much of a failed harness's output its error keeps (the end, where a CLI says why it stopped)."""


@dataclass(frozen=True)
class NpmPackage:
    """An npm package at a pinned version."""

    name: str
    """The package's name on the npm registry (``"@mariozechner/pi-coding-agent"``)."""
    version: str
    """An exact version (``"0.73.1"``): a harness runs the version gym_swe is tested with."""

    @property
    def spec(self) -> str:
        """What ``npm install`` takes: ``name@version``."""
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class HarnessRun:
    """One rollout's run of a harness, as `Harness.launch` is told it. Every path is inside the sandbox."""

    base_url: str
    """The base URL of the harness's dialect on the proxy, as the sandbox reaches it (a forwarder on the
    sandbox's loopback), in the form that dialect's SDK takes (`RolloutHandle.base_url_for`): ``.../v1`` for
    chat completions and Responses, the rollout's root for Anthropic Messages and Google generateContent."""
    api_key: str
    """The rollout's secret: the API key in the harness's dialect (bearer token, ``x-api-key``, ...)."""
    model: str
    """The model's name, spelled as a model id may be (letters, digits, ``.``, ``_``, ``-``: the proxy's model
    name with anything else replaced). The proxy answers to any model name; use this one."""
    prompt: str
    """The task, as the harness's first (and only) user message."""
    workdir: str
    """The task's workspace (``/workspace``, ``/testbed``): the run starts there and its tools act on it."""
    home: str
    """An empty directory gym_swe made for this run: its ``HOME`` (set by the runner), where the harness's
    config files go (`Launch.files`), and where it may keep its state."""
    install_dir: str
    """The harness's installed npm prefix (its packages under ``node_modules/``), read-only."""
    node: str
    """The Node binary gym_swe installed (npm's ``node`` builds), read-only: run JavaScript CLIs with it."""
    max_turns: int
    """The rollout's turn budget: the proxy refuses the request past it (403) and the episode is truncated."""
    context_window: int
    """Tokens the model takes in all, prompt and answer (the proxy's ``max_model_len``): declare it where the
    harness asks for the model's context size."""
    max_output_tokens: int
    """Tokens one turn may sample (the proxy's ``max_tokens``): declare it where the harness asks."""

    def package_path(self, package: str, *parts: str) -> str:
        """A path inside an installed npm package: ``package_path("opencode-ai", "bin", "opencode")``."""
        return posixpath.join(self.install_dir, "node_modules", package, *parts)


@dataclass(frozen=True)
class Launch:
    """How one run starts: what `Harness.launch` returns."""

    argv: tuple[str, ...]
    """The command line (absolute paths: nothing of the harness is on the sandbox's PATH). It runs in
    `HarnessRun.workdir`, its stdin empty, with the sandbox's environment and ``env`` over it."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables over the sandbox's (``HOME`` is `HarnessRun.home` unless set here)."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Files written before the run, ``{path: text}``: the harness's config, under `HarnessRun.home`."""
    stdin: str | None = None
    """A file (one of ``files``, say) given to the CLI as its stdin; None: an empty stdin. For a CLI that
    reads its prompt from piped stdin: no prompt text on the command line, where it could read as a flag."""
    read_back: tuple[str, ...] = ()
    """Files read after the run, for `Harness.end` (`HarnessExit.files`): a session log, a result file."""


@dataclass(frozen=True)
class HarnessExit:
    """How a run ended, as the runner saw it: what `Harness.end` reads."""

    exit_code: int
    """The CLI's exit status (negative: killed by that signal)."""
    timed_out: bool
    """The run outlived the runner's timeout and was killed, with every process it started."""
    output: str
    """Its stdout and stderr, bounded (head and tail kept)."""
    files: Mapping[str, str] = field(default_factory=dict)
    """The `Launch.read_back` files that existed after the run, ``{path: text}``."""
    turns: int = 0
    """Completions the proxy answered in this rollout."""
    interrupted: bool = False
    """The run was stopped from outside (the collection was stopped)."""


@dataclass(frozen=True)
class HarnessEnd:
    """What a run's end means for the episode: what `Harness.end` returns.

    The runner grades the episode from it (in a fresh sandbox, by gym_swe's grader, never from what the
    harness reports): ``submitted`` as after the env's own submit (terminated); otherwise a truncation whose
    end reason is ``reason``. A budget the proxy ended (``max_turns``, ``max_model_len``,
    ``generator_error``) comes first whatever the harness made of it: its failure after the proxy refused it
    is expected, so ``error`` is then not recorded."""

    submitted: bool
    """The harness ended on its own with a final answer (the model stopped calling tools)."""
    reason: str = "submitted"
    """The env's end reason when not submitted: ``"harness_timeout"``, ``"harness_failed"``,
    ``"harness_stopped"``, the harness's own turn limit (``"max_turns"``), ..."""
    error: str | None = None
    """Why the run failed, for the trajectory's ``error`` (a failed trajectory: left out of the loss, not
    scored): a crash, a bad configuration. None for what the agent did (a timeout, a turn limit)."""


@runtime_checkable
class Harness(Protocol):
    """An agent CLI gym_swe runs unmodified inside an episode's sandbox (see the module docstring).

    Plug one in: a module beside this one with an instance of a class that has these members, and a line for
    it in `gym_swe.integrations.harnesses.registry.HARNESSES`. Its tests (`tests/integrations/harnesses/`)
    drive the real CLI with a scripted model writing that harness's own tool calls."""

    name: str
    """Its name in ``--harness NAME`` and ``gym-swe harnesses install NAME``."""
    dialect: str
    """The proxy dialect it speaks (`gym_swe.rollout.proxy.dialects`)."""
    packages: tuple[NpmPackage, ...]
    """What `gym_swe.integrations.harnesses.install.install_harness` installs for it (into its own folder)."""

    def launch(self, run: HarnessRun) -> Launch:
        """The files, command line and environment of one run."""
        ...

    def end(self, exit: HarnessExit) -> HarnessEnd:
        """What the run's exit means (most harnesses: ``return end_of_exit(self.name, exit)``)."""
        ...


def end_of_exit(name: str, exit: HarnessExit) -> HarnessEnd:
    """The usual reading of a CLI's end: exit 0 is a final answer (submitted); a timeout is a truncation of
    the agent's doing (``"harness_timeout"``: a command it ran never returned), scored; any other exit is a
    failure (``"harness_failed"``), with the exit status and the end of the output as its error."""
    if exit.timed_out:
        return HarnessEnd(False, "harness_timeout")
    if exit.interrupted:
        return HarnessEnd(False, "harness_stopped")
    if exit.exit_code == 0:
        return HarnessEnd(True)
    tail = exit.output.strip()[-OUTPUT_TAIL_CHARS:]
    return HarnessEnd(False, "harness_failed", f"{name} exited with status {exit.exit_code}: {tail}")


def last_json_object(output: str) -> dict[str, Any]:
    """The last JSON object printed at the start of a line of ``output`` (the result a CLI prints at its end
    with a JSON output format, on one line or over several), or {} when there is none."""
    decoder, found = json.JSONDecoder(), {}
    for start in re.finditer(r"^\{", output, re.MULTILINE):
        try:
            value, _ = decoder.raw_decode(output, start.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            found = value
    return found
