"""mini-swe-agent (PyPI ``mini-swe-agent``), unmodified, as a gym_swe harness.

The agent runs on the host as it ships: its own ``DefaultAgent`` loop, its own prompts (the built-in
``mini.yaml``: one ``bash`` tool), its own litellm model class. Two things are gym_swe's:

- its model is pointed at a rollout of the interception proxy through its own configuration
  (``model_kwargs.api_base`` and ``api_key``), so gym_swe generates every turn and records the token ids;
- its commands run in the episode's gym_swe sandbox through `SandboxEnvironment`, a mini-swe-agent
  ``Environment`` whose ``execute`` is the sandbox's ``exec``: the agent's code stays in the jail or
  container.

Its submission (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` as a command's first output line) ends the
episode, which the env then grades as after its own ``submit``: in a fresh sandbox, by gym_swe's grader. An
agent that stops otherwise (its step limit, the proxy's turn or token budget) is graded as truncated.

    with ProxyServer(generator, sampling, max_model_len=8192) as proxy:
        env = gymnasium.make("CodeDebug-v0")
        trajectory = run_episode(env, proxy, "GymSwe/0")

A harness that must run inside the sandbox: `run_episode_inside` runs mini-swe-agent's own CLI in the
episode's local jail or docker container, which still has no network; the proxy serves a unix socket bound
into the sandbox (`inside_sandbox_options`), and a small forwarder on the sandbox's loopback carries the CLI's
HTTP to it. In a container the CLI comes from the harness image (`gym_swe.integrations.harness_image`).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from gym_swe.errors import ConfigError, missing_dependency
from gym_swe.integrations.harnesses.base import HarnessEnd
from gym_swe.integrations.harnesses.collector import play_in_threads
from gym_swe.integrations.harnesses.runner import end_episode
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.proxy import ProxyServer
from gym_swe.rollout.stopping import Stop, Stopped
from gym_swe.rollout.trajectory import Trajectory
from gym_swe.sandbox.base import Sandbox
from gym_swe.sandbox.docker import PROXY_SOCKET_DIR

if TYPE_CHECKING:
    from gym_swe.rollout.proxy.server import RolloutHandle

SUBMIT_MARK = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


# Run inside a sandbox beside an agent harness that must live there: it listens on the jail's own loopback
# (the sandbox has no network) and carries each connection to the proxy's unix socket bound into the jail.
FORWARDER = r"""
import socket, subprocess, sys, threading

SOCKET, PORT = sys.argv[1], int(sys.argv[2])


def pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(listener):
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX)
        upstream.connect(SOCKET)
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


listener = socket.create_server(("127.0.0.1", PORT))
threading.Thread(target=serve, args=(listener,), daemon=True).start()
sys.exit(subprocess.call(sys.argv[3:]))
"""


def _import_minisweagent() -> Any:
    # mini-swe-agent prints a banner and litellm fetches a model-price list from the internet at import
    # time; neither is wanted in a trainer (and there may be no internet).
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
        import minisweagent
    except ImportError:
        raise missing_dependency("minisweagent", "mini-swe-agent") from None
    # litellm logs every call at INFO and prints hints of its own: one line per turn of every episode.
    litellm.suppress_debug_info = True
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return minisweagent


@dataclass
class SandboxEnvironmentConfig:
    cwd: str = ""
    """Where commands start (default: the sandbox's workspace)."""
    env: dict[str, str] = field(default_factory=dict)
    timeout: int = 60
    """Seconds a command may run; a timeout kills its whole process group."""

    def model_dump(self, **_: Any) -> dict[str, Any]:  # what mini-swe-agent calls on its configs
        return asdict(self)


class SandboxEnvironment:
    """A mini-swe-agent ``Environment`` whose commands run in a gym_swe sandbox. A failing command is data
    (its return code and output), as in mini-swe-agent's own environments; a submission raises its
    ``Submitted``, which ends the agent's loop. Once ``stop`` is set, a command raises `Stopped` instead of
    running, which ends the agent's loop too."""

    def __init__(self, sandbox: Sandbox, stop: Stop | None = None, **config: Any) -> None:
        self.sandbox = sandbox
        self.stop = stop
        self.config = SandboxEnvironmentConfig(**config)
        self.config.cwd = self.config.cwd or sandbox.workdir
        self.commands = 0

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        from minisweagent.exceptions import Submitted

        if self.stop is not None and self.stop.is_set():
            raise Stopped("the run was stopped")
        command = action.get("command", "") if isinstance(action, Mapping) else str(action)
        self.commands += 1
        result = self.sandbox.exec(
            command, timeout=timeout or self.config.timeout, cwd=cwd or self.config.cwd, env=self.config.env
        )
        output: dict[str, Any] = {
            "output": result.output,
            "returncode": result.exit_code,
            "exception_info": "",
        }
        if result.timed_out:
            output["exception_info"] = (
                f"The command timed out after {timeout or self.config.timeout} seconds."
            )
        lines = result.output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT_MARK and result.exit_code == 0:
            submission = "".join(lines[1:])
            raise Submitted(
                {
                    "role": "exit",
                    "content": submission,
                    "extra": {"exit_status": "Submitted", "submission": submission},
                }
            )
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        # The sandbox shares the host's kernel (a jail or a container), so the host's uname is its own.
        return {**self.config.model_dump(), **platform.uname()._asdict(), **kwargs}

    def serialize(self) -> dict[str, Any]:
        kind = f"{type(self).__module__}.{type(self).__name__}"
        return {"info": {"config": {"environment": self.config.model_dump(), "environment_type": kind}}}


@dataclass
class MiniSweAgentConfig:
    """How the agent is set up; everything else is mini-swe-agent's own configuration file."""

    config_file: str = "mini.yaml"
    """A mini-swe-agent config (a built-in name or a path); its model and environment sections are kept
    except where the proxy and the sandbox must be (model name, api_base, api_key, environment)."""
    step_limit: int | None = None
    """The agent's step limit (None: the env's max_turns)."""
    command_timeout: int = 60
    overrides: dict[str, Any] = field(default_factory=dict)
    """Merged over the config file, as mini's ``-c key=value`` would be: {"agent": {...}, "model": {...}}."""


def build_agent(
    rollout: RolloutHandle, environment: SandboxEnvironment, config: MiniSweAgentConfig, step_limit: int
) -> Any:
    """A mini-swe-agent ``DefaultAgent`` whose model is ``rollout`` of the proxy (`RolloutHandle`)."""
    _import_minisweagent()
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.config import get_config_from_spec
    from minisweagent.models import get_model
    from minisweagent.utils.serialize import recursive_merge

    try:
        base = get_config_from_spec(config.config_file)
    except FileNotFoundError as error:
        raise ConfigError(f"mini-swe-agent config {config.config_file!r} not found: {error}") from None
    merged = recursive_merge(base, config.overrides)
    model_config = recursive_merge(
        merged.get("model", {}),
        {
            "model_class": "litellm",
            # litellm's "openai/" provider: any OpenAI-compatible endpoint at api_base.
            "model_name": f"openai/{rollout.model}",
            "model_kwargs": {"api_base": rollout.base_url, "api_key": rollout.secret, "drop_params": True},
            "cost_tracking": "ignore_errors",  # a local model has no price
        },
    )
    environment.config.env = {**merged.get("environment", {}).get("env", {}), **environment.config.env}
    agent_config = {key: value for key, value in merged.get("agent", {}).items() if key != "agent_class"}
    agent_config.update(step_limit=step_limit, cost_limit=0.0, output_path=None)
    agent_config.pop("mode", None)  # the interactive agent's; DefaultAgent asks no one
    return DefaultAgent(get_model(config=model_config), environment, **agent_config)


def task_statement(messages: Sequence[Mapping[str, Any]]) -> str:
    """The env's task message, for mini-swe-agent's ``{{task}}``. gym_swe's prompt ends with "call submit"
    (its own tool); mini-swe-agent's template says how this agent submits."""
    text = str(messages[-1].get("content") or "")
    return text.replace("call submit", "submit as described below")


def run_episode(
    env: Any,
    proxy: Any,
    task_id: str,
    sample_index: int = 0,
    config: MiniSweAgentConfig | None = None,
    seed: int | None = None,
    stop: Stop | None = None,
) -> Trajectory:
    """One mini-swe-agent episode of ``task_id`` in ``env`` (a gym_swe env) through ``proxy`` (a running
    `ProxyServer`): the agent's trajectory as the proxy recorded it, graded by the env. A failure (the
    sandbox, the harness, the generator) is recorded on the trajectory, not raised. Once ``stop`` is set the
    rollout ends (the agent's next request is refused, its next command not run) and the episode is not
    graded: it did not end."""
    config = config or MiniSweAgentConfig()
    stop = stop or Stop()
    unwrapped = env.unwrapped
    env_id = getattr(getattr(env, "spec", None), "id", "") or ""
    try:
        _, info = env.reset(seed=seed, options={"task_id": task_id})
    except Exception as error:
        trajectory = Trajectory(task_id=task_id, sample_index=sample_index, env_id=env_id)
        trajectory.error, trajectory.end_reason = (
            f"reset failed: {type(error).__name__}: {error}",
            "env_error",
        )
        return trajectory
    rollout: RolloutHandle = proxy.open_rollout(task_id, sample_index, env_id, max_turns=unwrapped.max_turns)
    status, harness_error = "", None
    try:
        with stop.hook(lambda: rollout.end("stopped")):
            environment = SandboxEnvironment(unwrapped.sandbox, stop, timeout=config.command_timeout)
            agent = build_agent(rollout, environment, config, config.step_limit or unwrapped.max_turns)
            status = str(agent.run(task_statement(info["messages"])).get("exit_status", ""))
    except ConfigError:
        rollout.finish("harness_error")
        unwrapped.truncate("harness_error")
        raise
    except Exception as error:  # the harness stopped on an error: when the proxy ended it, that is a budget
        harness_error = f"{type(error).__name__}: {error}"
    if stop.is_set():  # stopped from outside: nothing to grade, and no grading sandbox to make now
        trajectory = rollout.finish("stopped")
        trajectory.end_reason, trajectory.error = "stopped", "stopped before the episode ended"
        return trajectory
    return _end_episode(env, rollout, status, harness_error)


def _end_episode(env: Any, rollout: RolloutHandle, status: str, harness_error: str | None) -> Trajectory:
    """The graded end (`gym_swe.integrations.harnesses.runner.end_episode`) of mini-swe-agent's exit status:
    Submitted as after the env's own submit; its step limit a truncation at ``max_turns``; anything else a
    truncation, with the harness's error if it raised one."""
    if status == "Submitted":
        end = HarnessEnd(True)
    elif status == "LimitsExceeded":
        end = HarnessEnd(False, "max_turns", harness_error)
    else:
        end = HarnessEnd(False, "harness_stopped", harness_error)
    return end_episode(env, rollout, end)


def run_episodes(
    envs: Sequence[Any] | Callable[[], Any],
    proxy: Any,
    task_ids: Sequence[str],
    samples_per_task: int = 1,
    parallel: int = 8,
    config: MiniSweAgentConfig | None = None,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    stop: Stop | None = None,
) -> list[Trajectory]:
    """``samples_per_task`` mini-swe-agent episodes of each task, each in a thread with an env of its own:
    ``envs`` is a list of envs (as many episodes at once; the caller closes them) or a factory (up to
    ``parallel`` at once; closed here). Trajectories in task order, samples of a task together. Stopping is
    `gym_swe.rollout.collector.collect`'s: Ctrl-C in this thread, or ``stop`` set elsewhere (then `Stopped`),
    ends every episode still running, ungraded and unreported (`play_in_threads`)."""

    def play(env: Any, task_id: str, index: int, stop: Stop) -> Trajectory:
        return run_episode(env, proxy, task_id, index, config, stop=stop)

    return play_in_threads(envs, task_ids, play, samples_per_task, parallel, on_trajectory, stop)


def collect_with_harness(
    envs: Sequence[Any] | Callable[[], Any],
    generator: Any,
    task_ids: Sequence[str],
    samples_per_task: int = 1,
    sampling: SamplingParams | None = None,
    max_model_len: int = 8192,
    parallel: int = 8,
    seed: int | None = None,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    config: MiniSweAgentConfig | None = None,
    on_turn: Callable[[], None] | None = None,
    stop: Stop | None = None,
) -> list[Trajectory]:
    """`gym_swe.rollout.collector.collect`'s surface, with mini-swe-agent playing the episodes through a
    proxy over ``generator`` (started and stopped here): what ``gym-swe eval --harness mini-swe-agent`` and
    ``trainers/grpo.py --harness mini-swe-agent`` call. ``on_turn`` is called after each of the model's
    turns (the harness steps no env until it submits: its turns are the proxy's completions)."""
    if seed is not None:
        raise ConfigError(
            "a run seed is not supported with a harness: the proxy sends no per-request seeds (the harness "
            "decides when it asks), so the run would not repeat; leave the seed out"
        )
    with ProxyServer(generator, sampling, max_model_len=max_model_len, on_turn=on_turn) as proxy:
        return run_episodes(envs, proxy, task_ids, samples_per_task, parallel, config, on_trajectory, stop)


# -- the agent inside the sandbox ------------------------------------------------------------------------
JAIL_SOCKET_DIR = PROXY_SOCKET_DIR  # where the proxy's socket directory appears, in a jail or a container
JAIL_PORT = 8765  # on the jail's own loopback: nothing outside the jail can reach it, nor it anything


def inside_sandbox_options(
    socket_dir: str, python_prefix: str | None = None, sandbox: str = "local"
) -> dict[str, Any]:
    """``sandbox_options`` for an env whose agent runs inside its sandbox, which still has no network: the
    proxy's socket directory bound read-only is its one way out, and only to the proxy.

    ``sandbox="local"``: the jail also gets the Python environment that holds mini-swe-agent (default: this
    one) bound read-only. ``sandbox="docker"``: the container runs the harness image (``gym-swe images build
    --harness mini-swe-agent``), which has mini-swe-agent installed; a docker env of CodeDebug-v0 (whose tasks
    run in the base image the harness image derives from).

    Several sandboxes at once: give each env a directory of its own, with the proxy serving a socket there
    too (``proxy.listen(f"{directory}/proxy.sock")``), so that code in one sandbox that floods its socket
    with connections fills only its own (see `gym_swe.rollout.proxy.connections`)."""
    if sandbox == "docker":
        if python_prefix is not None:
            raise ConfigError("python_prefix is for sandbox='local'; in docker the harness image holds mini")
        from gym_swe.integrations.harness_image import HARNESS_IMAGE

        return {"image": HARNESS_IMAGE, "pull": False, "proxy_socket_dir": os.path.realpath(socket_dir)}
    if sandbox != "local":
        raise ConfigError(f"sandbox must be 'local' or 'docker', got {sandbox!r}")
    prefix = os.path.realpath(python_prefix or sys.prefix)
    base = os.path.realpath(sys.base_prefix if python_prefix is None else python_prefix)
    binds = {prefix: prefix, base: base, os.path.realpath(socket_dir): JAIL_SOCKET_DIR}
    return {"ro_binds": binds}


def run_episode_inside(
    env: Any,
    proxy: Any,
    task_id: str,
    sample_index: int = 0,
    step_limit: int | None = None,
    timeout: float = 1800,
    python: str | None = None,
) -> Trajectory:
    """One episode with mini-swe-agent's own CLI (``mini``) running *inside* the episode's sandbox (a local
    jail or a docker container), its commands run there by its own local environment. ``proxy`` serves a
    unix socket (``ProxyServer(..., unix_socket=DIR/proxy.sock)``) and ``env`` was made with
    ``sandbox_options=inside_sandbox_options(DIR, sandbox=...)``. ``python``: the interpreter that has
    mini-swe-agent, as the sandbox sees it (default: this one in a jail, the harness image's in docker).
    Graded by gym_swe in a fresh sandbox, as `run_episode`."""
    unwrapped = env.unwrapped
    backend = unwrapped.sandbox_backend
    if backend not in ("local", "docker"):
        raise ConfigError(f"run_episode_inside needs sandbox='local' or 'docker', got {backend!r}")
    if backend == "docker" and not unwrapped.sandbox_options.get("proxy_socket_dir"):
        raise ConfigError(
            "run_episode_inside with sandbox='docker' needs the proxy's socket bound into the container: "
            "make the env with sandbox_options=inside_sandbox_options(DIR, sandbox='docker')"
        )
    socket_name = os.path.basename(proxy.unix_socket or "")
    if not socket_name:
        raise ConfigError(
            "run_episode_inside needs a proxy serving a unix socket (ProxyServer(unix_socket=...))"
        )
    if backend == "docker":
        from gym_swe.integrations.harness_image import HARNESS_IMAGE, HARNESS_PYTHON, require_harness_image

        if unwrapped.sandbox_options.get("image") == HARNESS_IMAGE:
            require_harness_image()
        python = python or HARNESS_PYTHON
    env_id = getattr(getattr(env, "spec", None), "id", "") or ""
    _, info = env.reset(options={"task_id": task_id})
    rollout: RolloutHandle = proxy.open_rollout(task_id, sample_index, env_id, max_turns=unwrapped.max_turns)
    sandbox = unwrapped.sandbox
    python = python or os.path.join(sys.prefix, "bin", "python")
    sandbox.write_file("/tmp/gym_swe_forward.py", FORWARDER)
    sandbox.write_file("/tmp/gym_swe_task.txt", task_statement(info["messages"]))
    settings = {
        "model.model_kwargs.api_base": f"http://127.0.0.1:{JAIL_PORT}/rollout/{rollout.id}/v1",
        "model.model_kwargs.api_key": rollout.secret,
        "model.cost_tracking": "ignore_errors",
        "agent.step_limit": step_limit or unwrapped.max_turns,
        "agent.cost_limit": 0,
    }
    command = " ".join(
        [
            "MSWEA_CONFIGURED=1 MSWEA_SILENT_STARTUP=1 LITELLM_LOCAL_MODEL_COST_MAP=True",
            "MSWEA_GLOBAL_CONFIG_DIR=/tmp/mini-swe-agent HOME=/tmp",
            shlex.quote(python), "/tmp/gym_swe_forward.py",
            f"{JAIL_SOCKET_DIR}/{socket_name}", str(JAIL_PORT),
            shlex.quote(python), "-m", "minisweagent.run.mini", "-m", shlex.quote(f"openai/{rollout.model}"),
            "-c", "mini.yaml", *(f"-c {shlex.quote(f'{k}={v}')}" for k, v in settings.items()),
            '-y --exit-immediately -t "$(cat /tmp/gym_swe_task.txt)" -o /tmp/gym_swe_mini.traj.json',
        ]
    )  # fmt: skip
    result = sandbox.exec(command, timeout=timeout)
    status = ""
    try:
        saved = json.loads(sandbox.read_file("/tmp/gym_swe_mini.traj.json"))
        status = str(saved.get("info", {}).get("exit_status", ""))
    except (OSError, ValueError):
        pass  # the agent never saved its trajectory: it did not start, or died
    failure = (
        None if status else f"mini exited {result.exit_code} without a trajectory: {result.output[-500:]}"
    )
    return _end_episode(env, rollout, status, failure)
