"""Task sets and the row readers every task source shares (JSON Lines, Parquet, Hugging Face datasets)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from gym_swe.errors import TaskError, TaskFormatError, TaskRefused, missing_dependency, unknown_name


class Task(Protocol):
    @property
    def task_id(self) -> str: ...  # read-only, so that frozen task records match


T = TypeVar("T", bound=Task)


class TaskSet(Generic[T]):
    """Tasks by id, in their source's order. An unknown id fails with the nearest known ones."""

    def __init__(self, tasks: Sequence[T], source: str, refused: Mapping[str, str] | None = None) -> None:
        self.refused = dict(refused or {})
        """Ids of the source's tasks that cannot be graded here -> why (refused at load, the others kept)."""
        if not tasks:
            if self.refused:
                task_id, why = next(iter(self.refused.items()))
                raise TaskRefused(
                    f"every task of {source!r} is refused ({len(self.refused)}): {task_id}: {why}"
                    if len(self.refused) > 1
                    else why
                )
            raise TaskError(f"the task source {source!r} holds no tasks")
        self.source = source
        self._tasks: dict[str, T] = {}
        for task in tasks:
            if task.task_id in self._tasks:
                raise TaskError(f"task id {task.task_id!r} appears twice in {source!r}")
            self._tasks[task.task_id] = task

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[T]:
        return iter(self._tasks.values())

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._tasks

    @property
    def ids(self) -> list[str]:
        return list(self._tasks)

    def get(self, task_id: str) -> T:
        try:
            return self._tasks[task_id]
        except (KeyError, TypeError):
            if isinstance(task_id, str) and task_id in self.refused:
                raise TaskRefused(self.refused[task_id]) from None
            raise TaskError(unknown_name(f"task id in {self.source!r}:", task_id, self._tasks)) from None

    def __getitem__(self, index: int) -> T:
        return list(self._tasks.values())[index]


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a .jsonl (or .json list) or .parquet file. A bad line fails naming its number."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"task file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as parquet
        except ImportError:
            raise missing_dependency("pyarrow", "datasets") from None
        table: list[dict[str, Any]] = parquet.read_table(path).to_pylist()
        return table
    if suffix in (".jsonl", ".ndjson"):
        rows = []
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise TaskFormatError(f"{path}, row {number}: not valid JSON ({error})") from None
                if not isinstance(row, dict):
                    raise TaskFormatError(
                        f"{path}, row {number}: expected a JSON object, got {type(row).__name__}"
                    )
                rows.append(row)
        return rows
    if suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise TaskFormatError(f"{path}: expected a JSON list of task objects")
        return data
    raise TaskError(f"unsupported task file {path.name!r}: use .jsonl or .parquet")


def read_hub_rows(repo: str, config: str | None, split: str) -> list[dict[str, Any]]:
    """Rows of a Hugging Face dataset through ``datasets.load_dataset`` (a local directory works too)."""
    try:
        import datasets
    except ImportError:
        raise missing_dependency("datasets", "datasets") from None
    try:
        dataset = (
            datasets.load_dataset(repo, config, split=split)
            if config
            else datasets.load_dataset(repo, split=split)
        )
    except Exception as error:
        raise TaskError(
            f"could not load the dataset {repo!r} ({config or 'default'}, {split}): {error}"
        ) from error
    return [dict(row) for row in dataset]


def require_fields(
    row: Mapping[str, Any], number: int, source: str, fields: Mapping[str, type | tuple[type, ...]]
) -> None:
    """Fail naming the row and the first missing or mistyped field."""
    for name, kind in fields.items():
        if name not in row or row[name] is None:
            raise TaskFormatError(f"{source}, row {number}: missing field {name!r}")
        if not isinstance(row[name], kind):
            expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise TaskFormatError(
                f"{source}, row {number}: field {name!r} must be {expected}, got {type(row[name]).__name__}"
            )


def load_source(
    source: str,
    named: Mapping[str, Callable[[], list[dict[str, Any]]]],
) -> tuple[list[dict[str, Any]], str]:
    """Rows for ``source``: a name from ``named`` or a path to a .jsonl/.parquet file."""
    if source in named:
        return named[source](), source
    if source.lower().endswith((".jsonl", ".ndjson", ".json", ".parquet")) or Path(source).is_file():
        return read_rows(source), source
    raise TaskError(unknown_name("task source", source, named) + " Or give a path to a .jsonl/.parquet file.")
