"""`gym-swe view`: trajectories as one self-contained HTML page, to read episodes and the numbers of a run.

What it reads: a .jsonl file of trajectories (`gym-swe eval`'s ``--out``, one step file of a training run), or
a directory: every ``*.jsonl`` of trajectories under it, one section per file (a trainer's run directory:
``trajectories/step_N.jsonl``, and its eval episodes wherever they were saved, a path naming ``eval``;
``metrics.jsonl`` and other files that hold no trajectories are passed over, and said so).

What it shows: a run summary (per file, per task with pass@k, end reasons, failures, the run's settings), then
each file's groups (the samples of one task side by side with the group's mean, spread and each sample's
advantage; `view_summary`), then each episode: a summary line, and a body drawn when opened (its training
context, messages with per-turn signals, token view, grade with integrity and log; `view_episode`,
`view_tokens`). Buttons show one outcome, expand or collapse every episode; a search box keeps the episodes
whose text holds what is typed. The page needs no network: its script and style are inside it.

Size: episodes' bodies and token data travel as JSON in the page, drawn only when opened, so a page of
thousands of episodes opens at once; a budget (``max_bytes``) bounds the file: past it, the earliest files'
episodes keep their summary line and numbers but not their bodies, and the page says so.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, unknown_name
from gym_swe.rollout.trajectory import Trajectory
from gym_swe.rollout.view_episode import OUTCOMES, Placement, body, outcome, summary
from gym_swe.rollout.view_summary import (
    Group,
    TrajectoryFile,
    group_html,
    group_indices,
    make_group,
    run_summary,
)
from gym_swe.rollout.view_tokens import token_data, unknown_ids, vocabulary

__all__ = [
    "MAX_MB",
    "OUTCOMES",
    "TrajectoryFile",
    "load_run",
    "load_trajectories",
    "outcome",
    "render_html",
    "render_page",
    "run_settings",
    "select",
    "write_html",
]

MAX_MB = 64.0
"""The default page budget: episodes' bodies and tokens past this many megabytes stay out of the page."""

# A trainer process's share of a step while the step runs (step_00007.process1.jsonl).
_PART = re.compile(r"^(?P<whole>.+)\.process\d+\.jsonl$")
_STEP = re.compile(r"step[_-]?(\d+)", re.IGNORECASE)


def select(
    trajectories: Iterable[Trajectory],
    outcomes: Sequence[str] | None = None,
    min_reward: float | None = None,
) -> list[Trajectory]:
    """The trajectories with one of ``outcomes`` (all when None) and a reward of at least ``min_reward``."""
    keep = keeper(outcomes, min_reward)
    return [t for t in trajectories if keep(t)]


def keeper(
    outcomes: Sequence[str] | None = None, min_reward: float | None = None
) -> Callable[[Trajectory], bool]:
    """`select`'s test for one trajectory (unknown outcome names refused here)."""
    for name in outcomes or ():
        if name not in OUTCOMES:
            raise ConfigError(unknown_name("outcome", name, OUTCOMES))
    return lambda t: (
        (not outcomes or outcome(t) in outcomes) and (min_reward is None or t.reward >= min_reward)
    )


# -- reading -----------------------------------------------------------------------------------------------
def _read(path: Path, scanning: bool = False) -> tuple[list[Trajectory] | None, str]:
    """The trajectories of one file. ``scanning`` (a file found in a directory): a file whose first line is
    not a trajectory holds something else (``None``, with why), and an unfinished last line (a run still
    writing it) is left out with a note; otherwise a bad line is a ConfigError naming the file and line."""
    trajectories: list[Trajectory] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        lines = handle.readlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            # A trajectory's line has all its fields; an SFT export's (task_id, messages, tools) has not.
            if (
                scanning
                and not trajectories
                and not (isinstance(data, dict) and {"task_id", "turns"} <= data.keys())
            ):
                return None, "holds no trajectories"
            trajectories.append(Trajectory.from_dict(data))
        except (ValueError, TypeError, AttributeError) as error:
            if scanning and number == len(lines) and not line.endswith("\n"):
                return trajectories, "its last line is unfinished (still being written?), left out"
            raise ConfigError(
                f"{path}, line {number}: not a trajectory ({type(error).__name__}: {error}); "
                "gym-swe view reads the .jsonl files gym-swe eval and the trainer write"
            ) from None
    return trajectories, ""


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """The trajectories of one .jsonl file (`gym-swe eval`'s, or one step of a run); a missing or unreadable
    file is a ConfigError naming the file (and the line)."""
    path = Path(path)
    if not path.is_file():
        reason = "is a directory (give it as a run: gym-swe view DIR)" if path.is_dir() else "no such file"
        raise ConfigError(f"{path}: {reason}; give a .jsonl file of trajectories or a run directory")
    trajectories, _ = _read(path)
    return trajectories or []


def _file_of(path: Path, root: Path, trajectories: list[Trajectory]) -> TrajectoryFile:
    label = path.relative_to(root).as_posix() if path != root else path.name
    step = _STEP.search(path.name)
    kind = "eval" if "eval" in label.lower() else "train" if step else ""
    return TrajectoryFile(label, trajectories, int(step.group(1)) if step else None, kind)


def load_run(path: str | Path) -> tuple[list[TrajectoryFile], list[str]]:
    """The files of trajectories at ``path`` (a .jsonl file, or a directory: every ``*.jsonl`` of
    trajectories under it), training steps in order, then eval files, then the rest; and notes on the files
    passed over. A ConfigError names a path that is neither, or a directory with no trajectories."""
    root = Path(path)
    if root.is_file():
        return [_file_of(root, root, load_trajectories(root))], []
    if not root.is_dir():
        raise ConfigError(
            f"{root}: no such file or directory; give a .jsonl file of trajectories or a run directory"
        )
    files, notes = [], []
    found = sorted(p for p in root.rglob("*.jsonl") if p.is_file() and not p.name.startswith("."))
    for found_path in found:
        part = _PART.match(found_path.name)
        label = found_path.relative_to(root).as_posix()
        if part and found_path.with_name(part.group("whole") + ".jsonl").exists():
            notes.append(f"{label}: one process's share of a step whose whole file is there, passed over")
            continue
        trajectories, note = _read(found_path, scanning=True)
        if note:
            notes.append(f"{label}: {note}" if trajectories is not None else f"{label}: {note}, passed over")
        if trajectories is not None:
            files.append(_file_of(found_path, root, trajectories))
    if not files:
        raise ConfigError(
            f"{root}: no .jsonl file of trajectories under it; give a run directory (its "
            "trajectories/step_N.jsonl) or a .jsonl file gym-swe eval wrote"
        )
    order = {"train": 0, "eval": 1, "": 2}
    files.sort(key=lambda f: (order.get(f.kind, 2), -1 if f.step is None else f.step, f.label))
    return files, notes


def run_settings(path: str | Path) -> dict[str, Any] | None:
    """A trainer run's settings (its args.json) for a run directory or its trajectories folder; else None."""
    root = Path(path)
    for candidate in (root / "args.json", root.parent / "args.json") if root.is_dir() else ():
        try:
            settings = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(settings, dict):
            return settings
    return None


# -- the page ----------------------------------------------------------------------------------------------
def _asset(name: str) -> str:
    return resources.files("gym_swe.rollout").joinpath(name).read_text(encoding="utf-8")


def _script_json(value: Any) -> str:
    """``value`` as JSON that is safe inside a <script> element: no ``</`` or ``<!--`` in it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def _episode(index: int, trajectory: Trajectory, where: Placement) -> str:
    """An episode's element: its summary line, and an empty body its script fills when it is opened."""
    return (
        f'<details class="episode" id="e{index}" data-episode="{index}" data-outcome="{outcome(trajectory)}">'
        f'{summary(trajectory, where)}<div class="body"></div></details>'
    )


def _size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "replace"))


def render_html(trajectories: Sequence[Trajectory], title: str = "gym_swe trajectories") -> str:
    """The page of one list of trajectories (one file's): `render_page` with its defaults."""
    return render_page([TrajectoryFile("", list(trajectories))], title)


def render_page(
    files: Sequence[TrajectoryFile],
    title: str = "gym_swe trajectories",
    *,
    keep: Callable[[Trajectory], bool] | None = None,
    tokenizer: Any = None,
    max_bytes: float = MAX_MB * 1e6,
    settings: dict[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> str:
    """The page of ``files``: the summary and groups over every episode, and the episodes ``keep`` keeps
    (all when None); tokens decoded with ``tokenizer`` where given; about ``max_bytes`` at most (the
    episodes' bodies and tokens left out past it, the earliest files' first)."""
    episodes = [t for file in files for t in file.trajectories]
    where: list[Placement] = []
    groups: list[Group] = []
    for number, file in enumerate(files):
        offset = len(where)
        for members in group_indices(file.trajectories):
            members = [offset + i for i in members]
            groups.append(make_group(number, members, episodes, trained=file.kind != "eval"))
        where += [Placement(file.label, file.step)] * len(file.trajectories)
    for group in groups:
        for index, value in zip(group.members, group.advantages):
            if value is not None:
                where[index] = Placement(where[index].file, where[index].step, value, group.source)
    shown = {i for i, t in enumerate(episodes) if keep is None or keep(t)}

    # The system prompt is long and the same in most episodes: shown once at the top, referred to below.
    systems: dict[str, int] = {}
    for index in sorted(shown):
        for message in episodes[index].messages:
            if message.get("role") == "system":
                systems.setdefault(str(message.get("content")), len(systems) + 1)

    decoded = "tokens decoded" if tokenizer is not None else "token ids shown (--tokenizer PATH decodes them)"
    head = _head(title, episodes, shown, len(files), decoded)
    rest = [_controls(episodes, shown), run_summary(files, groups, settings)]
    rest += _systems(systems, episodes, shown)
    rest += _sections(files, groups, episodes, where, shown)
    style, script = _asset("view.css"), _asset("view.js")
    static = sum(_size(part) for part in [head, *rest, style, script]) + 10 * len(episodes) + 500

    # Bodies and tokens within what is left of the budget, the last files first (the latest steps are read
    # most). Each is made JSON once, here, and measured as it will be written.
    bodies: list[str] = ["null"] * len(episodes)
    tokens: list[str] = ["null"] * len(episodes)
    used: set[int] = set()
    spent, left_out, tokens_left_out = static, 0, 0
    for index in sorted(shown, reverse=True):
        text = _script_json(body(episodes[index], where[index], systems)) if spent < max_bytes else ""
        if not text or spent + _size(text) > max_bytes:
            left_out += 1
            continue
        bodies[index], spent = text, spent + _size(text)
        payload = token_data(episodes[index])
        if payload is None:
            continue
        encoded = _script_json(payload)
        if spent + _size(encoded) > max_bytes:
            tokens_left_out += 1
            continue
        tokens[index], spent = encoded, spent + _size(encoded)
        used.update(payload["ids"])
    vocab: dict[str, str] = {}
    notes = list(notes)
    if tokenizer is not None:
        vocab = vocabulary(tokenizer, used)
        strangers = unknown_ids(tokenizer, used)
        if strangers:
            notes.append(f"{strangers} token ids lie outside the tokenizer's vocabulary: is it the run's?")
    if left_out or tokens_left_out:
        notes.append(
            f"page budget ({max_bytes / 1e6:g} MB, --max-mb) spent: {left_out} episodes without their "
            f"body, {tokens_left_out} more without their tokens (the earliest files'); view one file alone, "
            "filter (--outcome, --min-reward) or raise --max-mb"
        )
    noted = "".join(f"<p class='note'>{html.escape(note)}</p>" for note in notes)
    data = f'{{"bodies":[{",".join(bodies)}],"tokens":[{",".join(tokens)}],"vocab":{_script_json(vocab)}}}'
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body>{head}{noted}{''.join(rest)}"
        f'<script type="application/json" id="gym-swe-data">{data}</script>'
        f"<script>{script}</script></body></html>"
    )


def _head(title: str, episodes: Sequence[Trajectory], shown: set[int], files: int, decoded: str) -> str:
    counts = {name: sum(outcome(episodes[i]) == name for i in shown) for name in OUTCOMES}
    of = f" in {files} files" if files > 1 else ""
    filtered = f" ({len(shown)} of {len(episodes)} shown)" if len(shown) != len(episodes) else ""
    return (
        f"<h1>{html.escape(title)}</h1><p>{len(episodes)} episodes{of}{filtered}: "
        + ", ".join(f"{count} {name}" for name, count in counts.items())
        + f". <span class='meta'>{decoded}; * marks an advantage computed here.</span></p>"
    )


def _controls(episodes: Sequence[Trajectory], shown: set[int]) -> str:
    """The outcome buttons, the search box, expand all and collapse all."""
    counts = {name: sum(outcome(episodes[i]) == name for i in shown) for name in OUTCOMES}
    radios = "".join(
        f'<label><input type="radio" name="show" value="{value}"{" checked" if value == "all" else ""}> '
        f"{value} ({count})</label>"
        for value, count in [("all", len(shown)), *counts.items()]
    )
    return (
        f'<div class="controls"><span class="filter">show: {radios}</span> '
        '<input type="search" id="search" placeholder="search episodes" autocomplete="off"> '
        '<button type="button" id="expand">expand all</button> '
        '<button type="button" id="collapse">collapse all</button> '
        '<span id="matches" class="meta"></span></div>'
    )


def _systems(systems: dict[str, int], episodes: Sequence[Trajectory], shown: set[int]) -> list[str]:
    rows = []
    for text, number in systems.items():
        sharing = sum(any(m.get("role") == "system" and str(m.get("content")) == text
                          for m in episodes[i].messages) for i in shown)  # fmt: skip
        rows.append(
            f'<details class="system"><summary>system prompt #{number} <span class="meta">({sharing} '
            f"episodes)</span></summary><pre>{html.escape(text)}</pre></details>"
        )
    return rows


def _sections(
    files: Sequence[TrajectoryFile],
    groups: Sequence[Group],
    episodes: Sequence[Trajectory],
    where: Sequence[Placement],
    shown: set[int],
) -> list[str]:
    """Per file: its heading, then its groups, each with its shown episodes' summary lines."""
    rows = []
    for number, file in enumerate(files):
        sections = []
        for group in (g for g in groups if g.file == number):
            members = [i for i in group.members if i in shown]
            if not members:
                continue
            items = "".join(_episode(i, episodes[i], where[i]) for i in members)
            head = group_html(group, episodes, shown)
            sections.append(f'<div class="group">{head}<div class="members">{items}</div></div>')
        if not sections:
            continue
        heading = ""
        if file.label:
            step = "" if file.step is None else f"step {file.step} · "
            kind = html.escape(file.kind or "trajectories")
            heading = (
                f'<h2>{html.escape(file.label)} <span class="meta">{step}{kind} · '
                f"{len(file.trajectories)} episodes</span></h2>"
            )
        rows.append(f'<section class="file" id="f{number}">{heading}{"".join(sections)}</section>')
    return rows


def write_html(
    trajectories: Sequence[Trajectory], path: str | Path, title: str = "gym_swe trajectories"
) -> Path:
    path = Path(path)
    path.write_text(render_html(trajectories, title), encoding="utf-8", errors="replace")
    return path
