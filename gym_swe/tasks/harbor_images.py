"""A Harbor task's image: built from its ``environment/`` folder (the Dockerfile's build context), once per
content. The tag carries a hash of every file of that folder, so an edited environment is a new image and an
unchanged one is never rebuilt; the build alone has the host's network (to reach the package registries), the
containers made from the image have none unless the task allows it."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from gym_swe.errors import TaskError
from gym_swe.sandbox.docker import docker_client
from gym_swe.tasks.harbor import ENVIRONMENT_DIR, HarborTask

IMAGE_REPOSITORY = "gym-swe-harbor"
LABEL = "gym_swe.harbor_task"
_building: dict[str, threading.Lock] = {}
_building_guard = threading.Lock()


def image_name(task: HarborTask) -> str:
    """``gym-swe-harbor:<task id>-<hash of environment/>``, a valid Docker tag."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", task.task_id.lower()).strip(".-")[:80] or "task"
    return f"{IMAGE_REPOSITORY}:{slug}-{task.environment_digest[:16]}"


def harbor_image(task: HarborTask, log: Callable[[str], None] = print, force: bool = False) -> str:
    """The image ``task`` runs in: its ``[environment] docker_image``, or the one built from its Dockerfile
    (built now unless it exists, or ``force``). A build that fails is a `TaskError` whose first line names
    the Dockerfile and the step that failed."""
    if task.docker_image is not None:
        return task.docker_image
    if task.dockerfile is None:
        raise TaskError(f"{task.path}: no environment/Dockerfile and no [environment] docker_image")
    name = image_name(task)
    with _building_guard:
        lock = _building.setdefault(name, threading.Lock())
    with lock:  # two episodes of one task in threads build it once
        client = docker_client()
        if _exists(client, name) and not force:
            return name
        log(f"building {name} from {task.dockerfile}")
        build(client, task, name)
    return name


def _exists(client: Any, name: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(name)
    except ImageNotFound:
        return False
    return True


def build(client: Any, task: HarborTask, name: str) -> None:
    from docker.errors import APIError, BuildError

    assert task.dockerfile is not None
    try:
        client.images.build(
            path=str(task.path / ENVIRONMENT_DIR), tag=name, rm=True, forcerm=True, pull=False,
            network_mode="host", labels={LABEL: task.task_id}, timeout=int(task.build_timeout),
        )  # fmt: skip
    except BuildError as error:
        lines = [str(chunk.get("stream") or chunk.get("error") or "") for chunk in error.build_log]
        output = "".join(lines).strip()
        cause = next((line for line in reversed(output.splitlines()) if line.strip()), error.msg)
        raise TaskError(
            f"{task.dockerfile}: the build failed: {error.msg.strip()} ({cause.strip()[:300]})"
            f"\n{output[-3000:]}"
        ) from None
    except APIError as error:
        raise TaskError(f"{task.dockerfile}: the build failed: {error.explanation or error}") from None
    except Exception as error:  # the HTTP read timing out: the build ran past build_timeout_sec
        if "timed out" in str(error).lower():
            raise TaskError(
                f"{task.dockerfile}: the build ran past build_timeout_sec={task.build_timeout:.0f}"
            ) from None
        raise
