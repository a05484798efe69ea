"""`gym-swe view`: trajectories as one self-contained HTML page, to read episodes turn by turn.

Each episode shows its outcome, every message (the system prompt, which episodes share, once at the top),
per model turn its token count, finish reason and timings, the hidden tests' outcomes and, where the grade
holds it, the final diff. An episode of a hosted model (``openai-chat``, in gym_swe's tool loop or a harness's
in black-box mode) says it has messages only, no token ids. Buttons at the top show only resolved,
unresolved or failed episodes; `select` filters before the page is written (``gym-swe view --outcome failed
--min-reward 0.5``).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, unknown_name
from gym_swe.rollout.trajectory import Trajectory

OUTCOMES = ("resolved", "unresolved", "failed")
"""resolved: graded and resolved; unresolved: graded, not resolved; failed: ended on an error."""

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #1d1d1f; }
details.episode, details.system { border: 1px solid #d0d0d7; border-radius: 6px; margin: .6em 0;
      padding: .3em .8em; }
summary { cursor: pointer; font-weight: 600; }
.resolved { color: #137333; } .unresolved { color: #b3261e; } .failed { color: #8a5300; }
.meta { color: #666; font-weight: 400; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f8; padding: .6em; border-radius: 4px;
      margin: .3em 0; max-height: 32em; overflow: auto; }
.role { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: #555; margin-top: .8em; }
.role .meta { text-transform: none; letter-spacing: 0; }
.assistant pre { background: #eef3fd; } .tool pre { background: #f3f3f3; } .user pre { background: #fdf6e8; }
.diff .add { color: #137333; } .diff .del { color: #b3261e; } .diff .hunk { color: #555; }
table { border-collapse: collapse; }
td, th { padding: .2em .6em; border-bottom: 1px solid #eee; text-align: left; }
.filter label { margin-right: 1em; }
"""

# Show only the episodes of one outcome: no library, a page that works offline.
SCRIPT = """
document.querySelectorAll('input[name=show]').forEach(function (input) {
  input.addEventListener('change', function () {
    document.querySelectorAll('details.episode').forEach(function (episode) {
      var shown = input.value === 'all' || episode.dataset.outcome === input.value;
      episode.style.display = shown ? '' : 'none';
    });
  });
});
"""


def outcome(trajectory: Trajectory) -> str:
    """ "failed" (it ended on an error), "resolved" or "unresolved"."""
    if trajectory.failed:
        return "failed"
    return "resolved" if trajectory.resolved else "unresolved"


def select(
    trajectories: Iterable[Trajectory],
    outcomes: Sequence[str] | None = None,
    min_reward: float | None = None,
) -> list[Trajectory]:
    """The trajectories with one of ``outcomes`` (all when None) and a reward of at least ``min_reward``."""
    for name in outcomes or ():
        if name not in OUTCOMES:
            raise ConfigError(unknown_name("outcome", name, OUTCOMES))
    return [
        t
        for t in trajectories
        if (not outcomes or outcome(t) in outcomes) and (min_reward is None or t.reward >= min_reward)
    ]


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """The trajectories of a .jsonl file that `gym-swe eval` wrote; a missing or unreadable file is a
    ConfigError naming the file (and the line)."""
    path = Path(path)
    if not path.is_file():
        reason = "is a directory" if path.is_dir() else "no such file"
        raise ConfigError(f"{path}: {reason}; give the .jsonl file gym-swe eval wrote (its --out)")
    trajectories = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                trajectories.append(Trajectory.from_dict(json.loads(line)))
            except (ValueError, TypeError, AttributeError) as error:
                raise ConfigError(
                    f"{path}, line {number}: not a trajectory ({type(error).__name__}: {error}); "
                    "gym-swe view reads the .jsonl files gym-swe eval writes"
                ) from None
    return trajectories


def _message(message: dict[str, Any], note: str = "") -> str:
    role = html.escape(str(message.get("role", "?")))
    parts = [html.escape(str(message.get("content") or ""))]
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        parts.append(
            f"→ {html.escape(str(function.get('name')))}({html.escape(str(function.get('arguments')))})"
        )
    body = "\n".join(p for p in parts if p)
    meta = f' <span class="meta">{html.escape(note)}</span>' if note else ""
    return f'<div class="{role}"><div class="role">{role}{meta}</div><pre>{body}</pre></div>'


def _turn_note(trajectory: Trajectory, index: int) -> str:
    """What the model's ``index``-th turn cost and why it stopped."""
    if index >= len(trajectory.turns):
        return ""
    turn = trajectory.turns[index]
    parts = [f"turn {index + 1}"]
    if trajectory.has_token_ids:  # a chat generator (openai-chat, a hosted model) returns messages, not ids
        parts.append(f"{turn.length} tokens")
    parts.append(f"finish: {turn.finish_reason or '?'}")
    if turn.generate_seconds or turn.env_seconds:
        parts.append(f"generate {turn.generate_seconds:.1f} s, env {turn.env_seconds:.1f} s")
    return " · ".join(parts)


def _diff_line(line: str) -> str:
    escaped = html.escape(line)
    if line.startswith("@@"):
        return f'<span class="hunk">{escaped}</span>'
    if line.startswith("+") and not line.startswith("+++"):
        return f'<span class="add">{escaped}</span>'
    if line.startswith("-") and not line.startswith("---"):
        return f'<span class="del">{escaped}</span>'
    return escaped


def _diff(text: str) -> str:
    lines = "\n".join(_diff_line(line) for line in text.splitlines())
    return f"<div class='role'>final diff</div><pre class='diff'>{lines}</pre>"


def _episode(trajectory: Trajectory, systems: dict[str, int]) -> str:
    state = outcome(trajectory)
    grade = trajectory.grade or {}
    meta = [
        f"reward {trajectory.reward:.2f}",
        f"{len(trajectory.turns)} turns",
        trajectory.end_reason or "?",
        f"{grade.get('passed', 0)}/{grade.get('total', 0)} tests",
    ]
    if trajectory.has_token_ids:
        meta.append(f"{len(trajectory.token_ids)} tokens ({trajectory.prompt_length} prompt)")
    else:
        meta.append(f"messages only, no token ids ({trajectory.generator or 'a chat generator'})")
    if trajectory.error:
        meta.append(f"error: {trajectory.error}")
    summary = (
        f'<summary><span class="{state}">{html.escape(trajectory.task_id)} #{trajectory.sample_index}'
        f'</span> <span class="meta">{html.escape(" · ".join(meta))}</span></summary>'
    )
    body, turn = [], 0
    for message in trajectory.messages:
        if message.get("role") == "system" and str(message.get("content")) in systems:
            number = systems[str(message.get("content"))]
            body.append(
                f'<div class="role">system <span class="meta">system prompt #{number} above</span></div>'
            )
        elif message.get("role") == "assistant":
            body.append(_message(message, _turn_note(trajectory, turn)))
            turn += 1
        else:
            body.append(_message(message))
    tests = "".join(
        f"<tr><td>{html.escape(t['outcome'])}</td><td>{html.escape(_group(grade, t['name']))}</td>"
        f"<td>{html.escape(t['name'])}</td></tr>"
        for t in grade.get("tests", [])
    )
    if tests:
        body.append(f"<div class='role'>hidden tests</div><table>{tests}</table>")
    for key, label in (("rejection", "submission rejected"), ("error", "grading error")):
        if grade.get(key):
            body.append(f"<div class='role'>{label}</div><pre>{html.escape(str(grade[key]))}</pre>")
    if grade.get("diff"):
        body.append(_diff(str(grade["diff"])))
    return f'<details class="episode" data-outcome="{state}">{summary}{"".join(body)}</details>'


def _group(grade: dict[str, Any], name: str) -> str:
    for group, names in (grade.get("groups") or {}).items():
        if name in names:
            return str(group)  # a JSON object's key
    return ""


def render_html(trajectories: Sequence[Trajectory], title: str = "gym_swe trajectories") -> str:
    counts = {name: sum(outcome(t) == name for t in trajectories) for name in OUTCOMES}
    # The system prompt is long and the same in most episodes: shown once here, referred to below.
    systems: dict[str, int] = {}
    for trajectory in trajectories:
        for message in trajectory.messages:
            if message.get("role") == "system":
                systems.setdefault(str(message.get("content")), len(systems) + 1)
    radios = "".join(
        f'<label><input type="radio" name="show" value="{value}"{" checked" if value == "all" else ""}> '
        f"{value} ({count})</label>"
        for value, count in [("all", len(trajectories)), *counts.items()]
    )
    rows = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{len(trajectories)} episodes: "
        + ", ".join(f"{count} {name}" for name, count in counts.items())
        + ".</p>",
        f'<p class="filter">show: {radios}</p>',
    ]
    for text, number in systems.items():
        shared = sum(
            any(m.get("role") == "system" and str(m.get("content")) == text for m in t.messages)
            for t in trajectories
        )
        rows.append(
            f'<details class="system"><summary>system prompt #{number} <span class="meta">({shared} '
            f"episodes)</span></summary><pre>{html.escape(text)}</pre></details>"
        )
    rows += [_episode(trajectory, systems) for trajectory in trajectories]
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{''.join(rows)}<script>{SCRIPT}</script></body></html>"
    )


def write_html(
    trajectories: Sequence[Trajectory], path: str | Path, title: str = "gym_swe trajectories"
) -> Path:
    path = Path(path)
    path.write_text(render_html(trajectories, title), encoding="utf-8")
    return path
