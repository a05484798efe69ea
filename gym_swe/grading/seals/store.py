"""What calibration learned of a task's sealed checks, kept on disk under the gym_swe cache: once per task
and environment, the gold patch's calibrating run decides which checks can be sealed, with their `Facts`,
and its probing run which values of the tests' input literals decoys may take (`decoy_inputs`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

VERSION = 8
"""Bumped whenever what a calibration learns changes (which checks can be sealed, which values decoys may
take): calibrations of an older version are taken again."""


def _stored_path(task: Any, key: Sequence[str]) -> Path:
    from gym_swe.tasks.repos import cache_root

    recipe = json.dumps([VERSION, list(key), task.test_patch, task.patch], sort_keys=True)
    digest = hashlib.sha256(recipe.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return cache_root() / "seals" / f"{task.instance_id.replace('/', '_')}-{digest}.json"


def forget(instance_id: str) -> None:
    """Remove every calibration kept for the task ``instance_id`` (in any environment): a generated candidate
    that was not kept, whose calibrations would otherwise stay in the cache for good."""
    from gym_swe.tasks.repos import cache_root

    name = re.compile(re.escape(instance_id.replace("/", "_")) + r"-[0-9a-f]{16}\.json")
    seals = cache_root() / "seals"
    if seals.is_dir():
        for path in seals.iterdir():
            if name.fullmatch(path.name):
                path.unlink(missing_ok=True)


def stored(task: Any, key: Sequence[str]) -> dict[str, dict[str, Any]] | None:
    """The checks an earlier calibration of ``task`` in the environment ``key`` found sealable (by key, with
    what it learned of each), if any."""
    try:
        data = json.loads(_stored_path(task, key).read_text())
    except (OSError, ValueError):
        return None
    checks = data.get("sealable") if isinstance(data, dict) else None
    if not isinstance(checks, dict) or not all(
        isinstance(name, str) and isinstance(facts, dict) for name, facts in checks.items()
    ):
        return None
    return checks


def stored_inputs(task: Any, key: Sequence[str]) -> dict[str, Any]:
    """The input leaves the same calibration calibrated for decoys (by leaf key; ``{}`` if none)."""
    try:
        data = json.loads(_stored_path(task, key).read_text())
    except (OSError, ValueError):
        return {}
    inputs = data.get("inputs") if isinstance(data, dict) else None
    return inputs if isinstance(inputs, dict) else {}


def store(
    task: Any,
    key: Sequence[str],
    sealable: Mapping[str, Mapping[str, Any]],
    inputs: Mapping[str, Any] | None = None,
) -> None:
    path = _stored_path(task, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(f".{os.getpid()}.tmp")
    data = {
        "task": task.instance_id,
        "sealable": dict(sorted(sealable.items())),
        "inputs": dict(inputs or {}),
    }
    scratch.write_text(json.dumps(data))
    os.replace(scratch, path)
