"""`gym-swe view`: the numbers over many episodes. Groups (the samples of one task in one file, side by side,
with their mean, spread and each sample's advantage) and the run summary (per file, per task with pass@k,
end reasons).

A group is what GRPO compares: the samples of one task drawn together. In a file they are the trajectories of
one task id, a repeated sample index starting a new group (a task drawn twice in one step). The samples that
enter the baseline are the trainer's valid ones: not failed, with at least one turn. Each sample's advantage
is the trainer's where the trajectories carry it (``Trajectory.advantage``: what the loss used, scaled as the
run said), else the reward minus the group's mean over its valid samples, computed here and marked so.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_swe.rollout.evaluation import failure_reasons, pass_at_k
from gym_swe.rollout.trajectory import Trajectory
from gym_swe.rollout.view_episode import cut_turns, esc, outcome

MAX_K = 64
"""The largest k with a pass@k column in the per-task table (1, 2, 4, ... up to a task's most samples)."""


@dataclass
class TrajectoryFile:
    """One .jsonl file of trajectories: its name as shown (the path under what was viewed), the training step
    it is of (from a ``step_N`` in its name; None: none), and its kind ("eval" where its path says eval, else
    "train" for step files, else "")."""

    label: str
    trajectories: list[Trajectory]
    step: int | None = None
    kind: str = ""


@dataclass
class Group:
    """The samples of one task in one file: ``members`` index the page's episodes."""

    file: int
    task_id: str
    members: list[int] = field(default_factory=list)
    mean: float | None = None
    """The mean reward over the valid samples (None: none valid)."""
    std: float | None = None
    """The standard deviation (n − 1, as the trainer's "group" scale) of the valid samples; None under two."""
    advantages: list[float | None] = field(default_factory=list)
    source: str = "computed"
    """"trainer": the trajectories carry their advantages; "computed": reward − mean, worked out here; "":
    none (eval episodes: nothing trained on them)."""

    @property
    def zero_spread(self) -> bool:
        """Every valid sample earned the same reward: the group teaches GRPO nothing."""
        return self.std is not None and self.std == 0.0


def valid(trajectory: Trajectory) -> bool:
    """Whether a sample enters the trainer's baseline: it did not fail, and it has a turn."""
    return not trajectory.failed and bool(trajectory.turns)


def group_indices(trajectories: Sequence[Trajectory]) -> list[list[int]]:
    """The groups of one file, as indices into it, in the order each began; members by sample index."""
    groups: list[list[int]] = []
    current: dict[str, list[int]] = {}
    for index, trajectory in enumerate(trajectories):
        group = current.get(trajectory.task_id)
        if group is None or any(trajectories[i].sample_index == trajectory.sample_index for i in group):
            group = current[trajectory.task_id] = []
            groups.append(group)
        group.append(index)
    return [sorted(group, key=lambda i: trajectories[i].sample_index) for group in groups]


def make_group(file: int, members: list[int], episodes: Sequence[Trajectory], trained: bool = True) -> Group:
    """The group of ``members`` (indices into ``episodes``), with its numbers; ``trained``: False for eval
    episodes, which no loss used, so that they get no advantage."""
    samples = [episodes[i] for i in members]
    rewards = [t.reward for t in samples if valid(t)]
    group = Group(file, samples[0].task_id, list(members))
    group.mean = statistics.fmean(rewards) if rewards else None
    group.std = statistics.stdev(rewards) if len(rewards) > 1 else None
    if not trained:
        group.source, group.advantages = "", [None] * len(samples)
    elif any(t.advantage is not None for t in samples):
        group.source, group.advantages = "trainer", [t.advantage for t in samples]
    else:
        group.advantages = [
            t.reward - group.mean if valid(t) and group.mean is not None else None for t in samples
        ]
    return group


def _number(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.2f}" if sign else f"{value:.2f}"


def group_html(group: Group, episodes: Sequence[Trajectory], shown: set[int]) -> str:
    """The group's head: its numbers, then its samples side by side, one column each (a link to the episode
    where it is on the page)."""
    advantage = {
        "trainer": "advantage: the trainer's",
        "computed": "advantage*: reward − group mean, computed here (the trajectories carry none)",
    }.get(group.source, "")
    samples = [episodes[i] for i in group.members]
    head = [
        f"{len(samples)} samples",
        f"mean {_number(group.mean)}",
        f"std {_number(group.std)}",
    ]
    rewards = [t.reward for t in samples]
    head.append(f"min {min(rewards):.2f} max {max(rewards):.2f}")
    if advantage:
        head.append(advantage)
    warning = (
        ' <span class="flag">no spread: every valid sample the same reward, no learning signal</span>'
        if group.zero_spread
        else ""
    )
    columns: list[list[str]] = []
    for index, trajectory, value in zip(group.members, samples, group.advantages):
        name = f"#{trajectory.sample_index}"
        link = f'<a href="#e{index}">{name}</a>' if index in shown else f"{name} (filtered out)"
        grade = trajectory.grade or {}
        columns.append(
            [
                link,
                f'<span class="{outcome(trajectory)}">{outcome(trajectory)}</span>',
                f"{trajectory.reward:.2f}",
                esc(_number(value, sign=True)),
                str(len(trajectory.turns)),
                esc(trajectory.end_reason or "?"),
                f"{grade.get('passed', 0)}/{grade.get('total', 0)}",
                str(sum(turn.length for turn in trajectory.turns)),
                str(cut_turns(trajectory)),
            ]
        )
    labels = ["sample", "outcome", "reward", "advantage", "turns", "end", "tests", "sampled tokens", "cut"]
    rows = "".join(
        f"<tr><th>{label}</th>" + "".join(f"<td>{column[row]}</td>" for column in columns) + "</tr>"
        for row, label in enumerate(labels)
        if label != "advantage" or group.source
    )
    return (
        f'<div class="grouphead"><b>{esc(group.task_id)}</b> '
        f'<span class="meta">{esc(" · ".join(head))}</span>{warning} '
        '<button type="button" class="side">side by side</button>'
        f'<table class="samples">{rows}</table></div>'
    )


# -- the run summary ---------------------------------------------------------------------------------------
def _ks(counts: Iterable[int]) -> list[int]:
    most = max(counts, default=0)
    ks, k = [], 1
    while k <= min(most, MAX_K):
        ks.append(k)
        k *= 2
    return ks


def _reasons(trajectories: Iterable[Trajectory]) -> str:
    counts = Counter(t.end_reason or "?" for t in trajectories)
    return ", ".join(f"{reason} {count}" for reason, count in counts.most_common())


def _versions(trajectories: Sequence[Trajectory]) -> str:
    versions = sorted({t.policy_version for t in trajectories if t.policy_version is not None})
    if not versions:
        return "–"
    return f"v{versions[0]}" if len(versions) == 1 else f"v{versions[0]}–v{versions[-1]}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], css: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><tr>{head}</tr>{body}</table>'


def _file_rows(files: Sequence[TrajectoryFile], groups: Sequence[Group]) -> list[list[str]]:
    rows = []
    for number, file in enumerate(files):
        trajectories = file.trajectories
        n = len(trajectories)
        by_task: dict[str, list[Trajectory]] = {}
        for trajectory in trajectories:
            by_task.setdefault(trajectory.task_id, []).append(trajectory)
        mine = [g for g in groups if g.file == number]
        spread = [g for g in mine if g.std is not None]
        pass1 = (
            statistics.fmean(sum(t.resolved for t in ts) / len(ts) for ts in by_task.values()) if n else 0.0
        )
        rows.append(
            [
                f'<a href="#f{number}">{esc(file.label or "(trajectories)")}</a>',
                esc(file.kind or "–"),
                esc("–" if file.step is None else file.step),
                str(n),
                str(len(by_task)),
                f"{statistics.fmean(t.reward for t in trajectories):.3f}" if n else "–",
                str(sum(t.resolved for t in trajectories)),
                str(sum(t.failed for t in trajectories)),
                f"{pass1:.3f}",
                f"{sum(g.zero_spread for g in spread)}/{len(spread)}",
                esc(_versions(trajectories)),
                esc(_reasons(trajectories)),
            ]
        )
    return rows


def _task_table(trajectories: Sequence[Trajectory]) -> str:
    by_task: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:
        by_task.setdefault(trajectory.task_id, []).append(trajectory)
    ks = _ks(len(ts) for ts in by_task.values())
    rows: list[list[str]] = []
    scores: dict[int, list[float]] = {k: [] for k in ks}
    for task_id, samples in by_task.items():
        n, c = len(samples), sum(t.resolved for t in samples)
        cells = [esc(task_id), str(n), str(c), str(sum(t.failed for t in samples))]
        for k in ks:
            if k <= n:
                scores[k].append(pass_at_k(n, c, k))
                cells.append(f"{scores[k][-1]:.3f}")
            else:
                cells.append("–")
        cells += [f"{statistics.fmean(t.reward for t in samples):.3f}", esc(_reasons(samples))]
        rows.append(cells)
    overall = ["<b>all tasks</b>", str(len(trajectories)), str(sum(t.resolved for t in trajectories)),
               str(sum(t.failed for t in trajectories))]  # fmt: skip
    for k in ks:  # over the tasks with at least k samples: one with fewer has no pass@k, not a 0
        counted = scores[k]
        mean = f"{statistics.fmean(counted):.3f}" if counted else "–"
        overall.append(mean if len(counted) == len(by_task) else f"{mean} ({len(counted)} tasks)")
    reward = f"{statistics.fmean(t.reward for t in trajectories):.3f}" if trajectories else "–"
    overall += [reward, esc(_reasons(trajectories))]
    header = [
        "task",
        "samples",
        "resolved",
        "failed",
        *(f"pass@{k}" for k in ks),
        "mean reward",
        "end reasons",
    ]
    return _table(header, [overall, *rows], "tasks")


def run_summary(
    files: Sequence[TrajectoryFile], groups: Sequence[Group], settings: dict[str, Any] | None = None
) -> str:
    """The summary at the top of the page: per file (a training run: per step), per task for each kind of
    file (training, eval), the end reasons and why episodes failed, and the run's settings (args.json)."""
    everything = [t for file in files for t in file.trajectories]
    parts = []
    if len(files) > 1 or any(file.step is not None for file in files):
        header = ["file", "kind", "step", "episodes", "tasks", "mean reward", "resolved", "failed", "pass@1",
                  "zero-spread groups", "policy", "end reasons"]  # fmt: skip
        parts.append("<h3>per file</h3>" + _table(header, _file_rows(files, groups), "files"))
    kinds = list(dict.fromkeys(file.kind for file in files))
    for kind in kinds:
        trajectories = [t for file in files if file.kind == kind for t in file.trajectories]
        title = {"train": "training episodes", "eval": "eval episodes"}.get(kind, "episodes")
        scope = " (every file: all steps together)" if sum(f.kind == kind for f in files) > 1 else ""
        parts.append(f"<h3>per task: {title}{scope}</h3>" + _task_table(trajectories))
    reasons = Counter(t.end_reason or "?" for t in everything)
    total = max(len(everything), 1)
    rows = [[esc(reason), str(count), f"{count / total:.1%}"] for reason, count in reasons.most_common()]
    parts.append("<h3>end reasons</h3>" + _table(["end reason", "episodes", "share"], rows, "reasons"))
    failures = failure_reasons(everything)
    if failures:
        rows = [[str(count), esc(reason)] for reason, count in failures]
        parts.append("<h3>why episodes failed</h3>" + _table(["episodes", "error"], rows, "failures"))
    if settings:
        rows = [[esc(key), esc(value)] for key, value in settings.items()]
        parts.append(
            "<details class='settings'><summary>run settings (args.json)</summary>"
            + _table(["setting", "value"], rows)
            + "</details>"
        )
    return f'<details class="summary" open><summary>run summary</summary>{"".join(parts)}</details>'
