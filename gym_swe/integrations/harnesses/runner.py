"""One episode with an npm harness, run inside the episode's own sandbox (a local jail or a docker container).

The sandbox still has no network. Three things are put in it for the run, for this episode only (the
reset's ``sandbox_options``: the fresh sandboxes grading makes get none of them):

- the installed harnesses, read-only at `HARNESS_MOUNT` (``files="bind"``: the host's `harness_root`,
  bound; ``files="image"``: already in the harness image, for envs whose sandboxes run gym_swe's base image);
- the directory of a unix socket the proxy serves, read-only at `PROXY_SOCKET_DIR`: its one way out, and
  only to the proxy;
- a forwarder (`FORWARDER`, run by the harness's Node) on the sandbox's loopback, port `FORWARDER_PORT`,
  that carries the CLI's HTTP to that socket. The CLI is told the forwarder's address as its base URL.

An episode: reset; open a rollout on the proxy; ask the harness how to launch (`Harness.launch`) with its
dialect's base URL, the rollout's secret as its API key and the model name; write its files; run it with a
timeout; read its end (`Harness.end`); then end the episode (`end_episode`): the rollout finishes first, then
the env grades, as after its own submit when the harness submitted, else as a truncation with the reason.

    with ProxyServer(generator, sampling, unix_socket=f"{directory}/proxy.sock") as proxy:
        env = gymnasium.make("CodeDebug-v0")
        trajectory = run_episode(env, proxy, "pi", "GymSwe/0")
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from gym_swe.errors import ConfigError
from gym_swe.integrations.harnesses.base import Harness, HarnessEnd, HarnessExit, HarnessRun
from gym_swe.integrations.harnesses.install import (
    harness_folder,
    harness_root,
    node_binary,
    node_folder,
    node_package,
    require_installed,
)
from gym_swe.integrations.harnesses.registry import harness_named
from gym_swe.rollout.stopping import Stop
from gym_swe.rollout.trajectory import Trajectory
from gym_swe.sandbox.docker import PROXY_SOCKET_DIR

if TYPE_CHECKING:
    from gym_swe.rollout.proxy.handle import RolloutHandle

HARNESS_MOUNT = "/opt/gym-swe/harnesses"
"""Where the installed harnesses (`harness_root`) appear in a sandbox, bound or copied into an image."""
RUN_DIR = "/tmp/gym_swe-harness"
"""Where a run's own files go in the sandbox (its private /tmp): the forwarder, and the harness's home."""
FORWARDER_PORT = 8765
NODE_OPTIONS = "--disable-wasm-trap-handler"
"""Node's options for the forwarder and the harness: WebAssembly without the guard regions it otherwise
reserves (about 10 GB of address space per instance), which a jail's address-space limit (a local sandbox
without cgroups: gym_swe not run as root) refuses; Node's fetch parses HTTP with WebAssembly, so Pi and Gemini
CLI could make no request at all there."""
"""The forwarder's port on the sandbox's own loopback: nothing outside the sandbox reaches it, nor it them."""
FILES_FROM = ("bind", "image")
DEFAULT_TIMEOUT = 1800.0
"""Seconds a harness run may take, all turns together; past it the run and everything it started are
killed and the episode is truncated (``"harness_timeout"``)."""

# How the env hears that the harness submitted: its own submit tool, as a tool-calling model would call it.
SUBMIT_ACTION = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"id": "submit001", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
    ],
}

FORWARDER = "forward.js"
"""The forwarder, a script beside this module (package data), run by the harness's Node."""


def task_prompt(messages: Sequence[Mapping[str, Any]]) -> str:
    """The env's task message as a CLI harness's prompt: gym_swe's prompt ends with "call submit" (its own
    tool, which a CLI does not have); a CLI's run ends when its model stops calling tools."""
    text = str(messages[-1].get("content") or "")
    return text.replace("call submit", "stop and say so")


def harness_sandbox_options(
    harness: Harness | str, backend: str, socket_dir: str, files: str = "bind"
) -> dict[str, Any]:
    """The ``sandbox_options`` (a reset's) that put ``harness`` and the proxy's socket directory
    ``socket_dir`` into an episode's sandbox (see the module docstring). ``files="image"`` runs the harness
    image (``gym-swe images build --harness NAME``) in place of the env's image: for envs whose sandboxes run
    gym_swe's base image (CodeDebug-v0), and docker only."""
    harness = harness_named(harness) if isinstance(harness, str) else harness
    if files not in FILES_FROM:
        raise ConfigError(f"files must be one of {FILES_FROM}, got {files!r}")
    socket_dir = os.path.realpath(socket_dir)
    if backend == "local":
        if files == "image":
            raise ConfigError("files='image' is for sandbox='docker' (a local jail binds the harness)")
        require_installed(harness)
        return {"ro_binds": {str(harness_root()): HARNESS_MOUNT, socket_dir: PROXY_SOCKET_DIR}}
    if backend != "docker":
        raise ConfigError(f"a harness runs in sandbox 'local' or 'docker', not {backend!r}")
    if files == "image":
        from gym_swe.integrations.harnesses.image import harness_image, require_harness_image

        require_harness_image(harness)
        return {"image": harness_image(harness), "pull": False, "proxy_socket_dir": socket_dir}
    require_installed(harness)
    return {"ro_binds": {str(harness_root()): HARNESS_MOUNT}, "proxy_socket_dir": socket_dir}


def harness_run(
    harness: Harness, rollout: RolloutHandle, proxy: Any, prompt: str, workdir: str, max_turns: int
) -> HarnessRun:
    """What ``harness`` is told of its run: its dialect's base URL rewritten to the forwarder's address."""
    base_url = rollout.base_url_for(harness.dialect)
    if not base_url.startswith(proxy.url):
        raise ConfigError(f"rollout URL {base_url!r} is not on the proxy at {proxy.url!r}")
    installed = posixpath.join(HARNESS_MOUNT, harness_folder(harness))
    node = posixpath.join(HARNESS_MOUNT, node_folder(), node_binary(node_package()))
    return HarnessRun(
        base_url=f"http://127.0.0.1:{FORWARDER_PORT}" + base_url[len(proxy.url) :],
        api_key=rollout.secret,
        model=re.sub(r"[^A-Za-z0-9._-]+", "-", rollout.model).strip("-") or "model",
        prompt=prompt,
        workdir=workdir,
        home=f"{RUN_DIR}/home",
        install_dir=installed,
        node=node,
        max_turns=max_turns,
        context_window=int(proxy.max_model_len),
        max_output_tokens=int(proxy.sampling.max_tokens),
    )


def run_episode(
    env: Any,
    proxy: Any,
    harness: Harness | str,
    task_id: str,
    sample_index: int = 0,
    *,
    socket: str | None = None,
    files: str = "bind",
    timeout: float = DEFAULT_TIMEOUT,
    stop: Stop | None = None,
) -> Trajectory:
    """One episode of ``task_id`` in ``env`` (a gym_swe env, sandbox ``local`` or ``docker``) played by
    ``harness`` (a `Harness` or its name) inside the episode's sandbox, through ``proxy`` (a running
    `ProxyServer`), graded by the env in a fresh sandbox.

    ``socket``: a unix socket the proxy serves (its ``unix_socket``, the default, or one from
    ``proxy.listen(path)``), alone in its directory, which is bound into the sandbox: give each env a socket
    of its own when several run at once (the collector does). ``files``: where the harness's files come
    from (see `harness_sandbox_options`). ``timeout``: seconds the harness may run. Once ``stop`` is set the
    rollout ends and the running harness is interrupted; the episode is not graded (it did not end).

    A failure (the sandbox, the harness, the generator) is recorded on the trajectory, not raised; a
    configuration that cannot work (no socket, a harness not installed) is raised before the episode."""
    harness = harness_named(harness) if isinstance(harness, str) else harness
    stop = stop or Stop()
    unwrapped = env.unwrapped
    socket = socket or proxy.unix_socket
    if not socket:
        raise ConfigError(
            "a harness inside the sandbox reaches the proxy through a unix socket: start the proxy with "
            "ProxyServer(..., unix_socket=PATH) or pass socket=proxy.listen(PATH)"
        )
    if files == "image" and hasattr(unwrapped, "image_for"):
        raise ConfigError(
            "files='image' runs the harness image in place of the sandbox's own, but this env runs each "
            "task's own image (SWEGym-v0): use files='bind', which binds the installed harness into it"
        )
    options = harness_sandbox_options(harness, unwrapped.sandbox_backend, os.path.dirname(socket), files)
    env_id = getattr(getattr(env, "spec", None), "id", "") or ""
    try:
        _, info = env.reset(options={"task_id": task_id, "sandbox_options": options})
    except ConfigError:
        raise
    except Exception as error:
        trajectory = Trajectory(task_id=task_id, sample_index=sample_index, env_id=env_id)
        trajectory.error = f"reset failed: {type(error).__name__}: {error}"
        trajectory.end_reason = "env_error"
        return trajectory
    rollout: RolloutHandle = proxy.open_rollout(task_id, sample_index, env_id, max_turns=unwrapped.max_turns)
    sandbox = unwrapped.sandbox
    with stop.hook(lambda: rollout.end("stopped")):
        try:
            run = harness_run(
                harness, rollout, proxy, task_prompt(info["messages"]), sandbox.workdir, unwrapped.max_turns
            )
            end = harness.end(_play(sandbox, harness, run, os.path.basename(socket), timeout, rollout))
        except ConfigError:
            rollout.finish("harness_error")
            unwrapped.truncate("harness_error")
            raise
        except Exception as error:  # the sandbox died under the harness, or its files could not be written
            end = HarnessEnd(False, "harness_failed", f"{type(error).__name__}: {error}")
    if stop.is_set():  # stopped from outside: nothing to grade, and no grading sandbox to make now
        trajectory = rollout.finish("stopped")
        trajectory.end_reason, trajectory.error = "stopped", "stopped before the episode ended"
        return trajectory
    return end_episode(env, rollout, end)


def _play(
    sandbox: Any, harness: Harness, run: HarnessRun, socket_name: str, timeout: float, rollout: RolloutHandle
) -> HarnessExit:
    """Write the run's files, run the harness behind the forwarder, and read back what it asked for."""
    launch = harness.launch(run)
    forwarder = f"{RUN_DIR}/{FORWARDER}"
    sandbox.write_file(forwarder, resources.files(__package__).joinpath(FORWARDER).read_text("utf-8"))
    for path, text in launch.files.items():
        sandbox.write_file(path, text)
    words = [run.node, forwarder, f"{PROXY_SOCKET_DIR}/{socket_name}", str(FORWARDER_PORT), *launch.argv]
    stdin = f" < {shlex.quote(launch.stdin)}" if launch.stdin else ""
    command = f"mkdir -p {shlex.quote(run.home)} && exec {shlex.join(words)}{stdin}"
    env = {"HOME": run.home, "NODE_OPTIONS": NODE_OPTIONS, **launch.env}
    result = sandbox.exec(command, timeout=timeout, cwd=run.workdir, env=env)
    files = {}
    for path in launch.read_back:
        try:
            files[path] = sandbox.read_file(path).decode("utf-8", errors="replace")
        except (OSError, ValueError):
            pass  # the harness never wrote it
    return HarnessExit(
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        output=result.output,
        files=files,
        turns=rollout.turns,
        interrupted=result.interrupted,
    )


def end_episode(env: Any, rollout: RolloutHandle, end: HarnessEnd) -> Trajectory:
    """Finish the rollout, then grade: as after the env's own submit when the harness submitted, else as a
    truncation with the reason. A budget the proxy ended comes first (see `HarnessEnd`); a harness that failed
    on a reply cut at ``max_tokens`` is truncated (``"max_tokens"``), not failed. The rollout ends
    before grading: the code under test runs while grading, and nothing may generate then (an agent that
    planted its rollout's secret would otherwise add turns)."""
    budget = rollout.end_reason  # set where the proxy ended it: max_turns, max_model_len, generator_error
    trajectory = rollout.finish("harness_done")
    unwrapped = env.unwrapped
    turns = trajectory.turns
    if end.reason == "harness_failed" and turns and turns[-1].finish_reason == "length":
        # The model's last reply was cut at max_tokens and the harness stopped on it (Codex does: an
        # incomplete response ends its run): the agent's doing, graded and trained on, not a failure.
        end = HarnessEnd(False, "max_tokens")
    error = None if budget else end.error
    try:
        if not budget and end.submitted:
            _, reward, terminated, truncated, info = env.step(SUBMIT_ACTION)
        else:
            info = unwrapped.truncate(budget or end.reason)
            reward, terminated, truncated = info.get("reward_grade", 0.0), False, True
    except Exception as failure:
        info, reward, terminated, truncated = {"end_reason": "env_error"}, 0.0, False, True
        error = error or f"grading failed: {type(failure).__name__}: {failure}"
    trajectory.reward = float(reward)
    trajectory.grade = info.get("grade")
    trajectory.terminated, trajectory.truncated = bool(terminated), bool(truncated)
    trajectory.end_reason = info.get("end_reason", trajectory.end_reason)
    if error and not trajectory.error:
        trajectory.error = f"harness: {error}"
    if info.get("error") and not trajectory.error:
        trajectory.error = str(info["error"])
    return trajectory
