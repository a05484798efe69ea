"""`gym-swe view`: one episode as HTML: its summary line (always on the page), its body (drawn when opened).

The body holds, in order: where the episode sits in training (its file and step, the policy version that
played it, its advantage, segments and forks, whether re-rendering its messages gave its ids), every message
(the shared system prompt referred to, not repeated), per model turn what it cost and the signals RL debugging
needs (its finish reason, a cut at ``length``, tool calls that could not be parsed, a format penalty, its step
reward), a placeholder the page's script fills with the token view, and the grade: its outcome, integrity,
hidden tests, log and final diff.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from gym_swe.rollout.trajectory import Trajectory

OUTCOMES = ("resolved", "unresolved", "failed")
"""resolved: graded and resolved; unresolved: graded, not resolved; failed: ended on an error."""

INTEGRITY = {
    "sealed": "sealed (a FAIL_TO_PASS check held outside the test run, against an expectation it never had)",
    "decoys": "decoys (a forged report passes them by chance only, at most 2%; see Security)",
    "unprotected": "unprotected (code that forges the report can earn it; paid only with integrity='any')",
}

SHORT_ARGUMENTS = 160
"""Tool-call arguments whose JSON is at most this long, with no line breaks, are shown on the call's line."""


def outcome(trajectory: Trajectory) -> str:
    """ "failed" (it ended on an error), "resolved" or "unresolved"."""
    if trajectory.failed:
        return "failed"
    return "resolved" if trajectory.resolved else "unresolved"


@dataclass(frozen=True)
class Placement:
    """Where an episode sits in a run: the file it was read from, the step that file is of, and its
    advantage (``advantage_source``: "trainer" when the trajectory carries it, "computed" when it is the
    reward minus the group's mean, worked out here; "" when it has none, a failed episode's)."""

    file: str = ""
    step: int | None = None
    advantage: float | None = None
    advantage_source: str = ""


def esc(value: object) -> str:
    return html.escape(str(value))


def cut_turns(trajectory: Trajectory) -> int:
    """How many of its model turns stopped at ``length`` (max_tokens), cut mid-thought."""
    return sum(turn.finish_reason == "length" for turn in trajectory.turns)


def summary(trajectory: Trajectory, where: Placement) -> str:
    """The episode's one line: outcome, reward, advantage, turns, end, tests, tokens, and its warnings."""
    state = outcome(trajectory)
    grade = trajectory.grade or {}
    meta = [f"reward {trajectory.reward:.2f}"]
    if where.advantage is not None:
        meta.append(
            f"advantage {where.advantage:+.2f}" + ("" if where.advantage_source == "trainer" else "*")
        )
    meta += [
        f"{len(trajectory.turns)} turns",
        trajectory.end_reason or "?",
        f"{grade.get('passed', 0)}/{grade.get('total', 0)} tests",
    ]
    if trajectory.has_token_ids:
        meta.append(f"{len(trajectory.token_ids)} tokens ({trajectory.prompt_length} prompt)")
    else:
        meta.append(f"messages only, no token ids ({trajectory.generator or 'a chat generator'})")
    if trajectory.policy_version is not None:
        meta.append(f"policy v{trajectory.policy_version}")
    if trajectory.error:
        meta.append(f"error: {trajectory.error}")
    flags = []
    if cut_turns(trajectory):
        flags.append(f"✂ {cut_turns(trajectory)} cut at length")
    errors = sum(turn.tool_errors for turn in trajectory.turns)
    if errors:
        flags.append(f"{errors} tool-call errors")
    if trajectory.rerender_matches is False:
        flags.append("re-render differs")
    if trajectory.forks:
        flags.append(f"{trajectory.forks} forks")
    flagged = "".join(f' <span class="flag">{esc(flag)}</span>' for flag in flags)
    return (
        f'<summary><span class="{state}">{esc(trajectory.task_id)} #{trajectory.sample_index}</span> '
        f'<span class="meta">{esc(" · ".join(meta))}</span>{flagged}</summary>'
    )


def body(trajectory: Trajectory, where: Placement, systems: dict[str, int]) -> str:
    """Everything of the episode below its summary line, as HTML (the page draws it when it is opened)."""
    parts = [_context(trajectory, where)]
    turn = 0
    for message in trajectory.messages:
        if message.get("role") == "system" and str(message.get("content")) in systems:
            number = systems[str(message.get("content"))]
            parts.append(
                f'<div class="role">system <span class="meta">system prompt #{number} above</span></div>'
            )
        elif message.get("role") == "assistant":
            parts.append(_message(message, _turn_note(trajectory, turn)))
            turn += 1
        else:
            parts.append(_message(message))
    if trajectory.has_token_ids and trajectory.token_ids:
        parts.append(_token_placeholder(trajectory))
    parts.append(_grade(trajectory))
    return "".join(parts)


# -- the training context ----------------------------------------------------------------------------------
def _context(trajectory: Trajectory, where: Placement) -> str:
    rows: list[tuple[str, str]] = []
    if where.file:
        rows.append(("file", where.file + ("" if where.step is None else f" (step {where.step})")))
    if trajectory.policy_version is not None:
        rows.append(("policy version", str(trajectory.policy_version)))
    if where.advantage is not None:
        source = (
            "the trainer's, as its loss used it"
            if where.advantage_source == "trainer"
            else "reward − the group's mean, computed here: the trajectory carries no advantage"
        )
        rows.append(("advantage", f"{where.advantage:+.3f} ({source})"))
    rows.append(("generator", trajectory.generator or "?"))
    if trajectory.env_id:
        rows.append(("env", trajectory.env_id))
    if trajectory.segment_starts or trajectory.forks:
        rows.append(("segments", f"{trajectory.segment_count} ({trajectory.forks} forks: history rewritten)"))
    checked = {
        True: "matches",
        False: "DIFFERS (the ids are not what the messages render to)",
        None: "not checked",
    }
    rows.append(("re-render", checked[trajectory.rerender_matches]))
    ended = "terminated" if trajectory.terminated else "truncated" if trajectory.truncated else "?"
    rows.append(("ended", f"{trajectory.end_reason or '?'} ({ended})"))
    if trajectory.error:
        rows.append(("error", trajectory.error))
    cells = "".join(f"<tr><th>{esc(key)}</th><td>{esc(value)}</td></tr>" for key, value in rows)
    return f'<table class="context">{cells}</table>'


# -- messages ----------------------------------------------------------------------------------------------
def _text(content: object) -> str:
    if isinstance(content, list):  # OpenAI content parts
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content or "")


def _arguments(function: dict[str, Any]) -> Any:
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


def _call_key(name: object, arguments: Any) -> str:
    return json.dumps([str(name), arguments], sort_keys=True, ensure_ascii=False, default=str)


def shown_content(message: dict[str, Any]) -> tuple[str, bool]:
    """The text of ``message`` to show, and whether call markup was cut from it: where the text holds the very
    calls its ``tool_calls`` hold (a chat endpoint without a tool parser returns both), they are shown once,
    as calls, not again as the markup in the text."""
    content = _text(message.get("content"))
    calls = message.get("tool_calls") or []
    if not calls or not content.strip():
        return content, False
    from gym_swe.tools.parsing import parse_tool_calls  # the env's own parser: what it read, it cuts

    parsed = parse_tool_calls(content)
    written = sorted(_call_key(call.name, call.arguments) for call in parsed.calls)
    structured = sorted(
        _call_key((call.get("function") or {}).get("name"), _arguments(call.get("function") or {}))
        for call in calls
        if isinstance(call, dict)
    )
    if written and written == structured:
        return parsed.content, True
    return content, False


def _call(call: object) -> str:
    function = (call.get("function") or {}) if isinstance(call, dict) else {}
    name = esc(function.get("name"))
    arguments = _arguments(function)
    if not isinstance(arguments, dict):
        return f'<div class="call">→ {name}({esc(arguments)})</div>'
    compact = json.dumps(arguments, ensure_ascii=False, default=str)
    if len(compact) <= SHORT_ARGUMENTS and "\\n" not in compact:
        shown = ", ".join(
            f"{esc(key)}={esc(json.dumps(value, ensure_ascii=False))}" for key, value in arguments.items()
        )
        return f'<div class="call">→ {name}({shown})</div>'
    # A long call (a file written, a long script): each argument as it reads, line breaks and all, once.
    rows = "".join(
        f'<div class="arg"><span class="argname">{esc(key)}</span><pre>{esc(_as_text(value))}</pre></div>'
        for key, value in arguments.items()
    )
    return f'<div class="call">→ {name}{rows}</div>'


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _message(message: dict[str, Any], note: str = "") -> str:
    role = esc(message.get("role", "?"))
    content, cut = shown_content(message)
    parts = [f'<div class="{role}"><div class="role">{role}{note}</div>']
    if message.get("reasoning_content"):
        parts.append(
            f'<details class="reasoning"><summary>reasoning</summary><pre>{esc(message["reasoning_content"])}'
            "</pre></details>"
        )
    if content.strip() or not message.get("tool_calls"):
        parts.append(f"<pre>{esc(content)}</pre>")
    if cut:
        parts.append('<div class="meta">(its text wrote these calls out too: shown once, as calls)</div>')
    parts += [_call(call) for call in message.get("tool_calls") or []]
    return "".join(parts) + "</div>"


def _turn_note(trajectory: Trajectory, index: int) -> str:
    """What the model's ``index``-th turn cost, why it stopped, and what the env made of it."""
    if index >= len(trajectory.turns):
        return ""
    turn = trajectory.turns[index]
    parts = [f"turn {index + 1}"]
    if trajectory.has_token_ids:  # a chat generator (openai-chat, a hosted model) returns messages, not ids
        parts.append(f"{turn.length} tokens")
    parts.append(f"finish: {turn.finish_reason or '?'}")
    if turn.generate_seconds or turn.env_seconds:
        parts.append(f"generate {turn.generate_seconds:.1f} s, env {turn.env_seconds:.1f} s")
    if turn.reward:
        parts.append(f"step reward {turn.reward:+.2f}")
    signals = []
    if turn.finish_reason == "length":
        signals.append('<span class="flag cut">✂ cut at length (max_tokens)</span>')
    if turn.tool_errors:
        signals.append(f'<span class="flag">{turn.tool_errors} tool-call errors (unparsed)</span>')
    if turn.format_penalty:
        signals.append(f'<span class="flag">format penalty −{turn.format_penalty:.2f}</span>')
    if turn.step_limit:
        signals.append(f'<span class="flag cut">✂ step cut short ({esc(turn.step_limit)})</span>')
    return f' <span class="meta">{esc(" · ".join(parts))}</span>' + "".join(f" {s}" for s in signals)


def _token_placeholder(trajectory: Trajectory) -> str:
    sampled = sum(turn.length for turn in trajectory.turns)
    trained = sum(trajectory.loss_mask)
    return (
        f'<details class="tokens"><summary>tokens: {len(trajectory.token_ids)} ({trajectory.prompt_length} '
        f"prompt, {sampled} sampled in {len(trajectory.turns)} turns, loss mask 1 on {trained})</summary>"
        '<div class="tokenview"></div></details>'
    )


# -- the grade ---------------------------------------------------------------------------------------------
def _group_of(grade: dict[str, Any], name: str) -> str:
    for group, names in (grade.get("groups") or {}).items():
        if name in names:
            return str(group)  # a JSON object's key
    return ""


def _diff_line(line: str) -> str:
    escaped = esc(line)
    if line.startswith("@@"):
        return f'<span class="hunk">{escaped}</span>'
    if line.startswith("+") and not line.startswith("+++"):
        return f'<span class="add">{escaped}</span>'
    if line.startswith("-") and not line.startswith("---"):
        return f'<span class="del">{escaped}</span>'
    return escaped


def _grade(trajectory: Trajectory) -> str:
    grade = trajectory.grade
    if grade is None:
        return "<div class='role'>grade</div><p class='gradeline'>not graded</p>"
    verdict = "resolved" if grade.get("resolved") else "not resolved"
    integrity = str(grade.get("integrity") or "")
    line = [
        verdict,
        f"{grade.get('passed', 0)}/{grade.get('total', 0)} tests",
        f"grade reward {float(grade.get('reward', 0.0)):.2f}",
        "integrity: " + (INTEGRITY.get(integrity, integrity) or "none recorded (not a repository task)"),
    ]
    if grade.get("duration"):
        line.append(f"graded in {float(grade['duration']):.1f} s")
    parts = [f"<div class='role'>grade</div><p class='gradeline'>{esc(' · '.join(line))}</p>"]
    tests = "".join(
        f"<tr><td>{esc(t.get('outcome'))}</td><td>{esc(_group_of(grade, str(t.get('name'))))}</td>"
        f"<td>{esc(t.get('name'))}</td></tr>"
        for t in grade.get("tests", [])
    )
    if tests:
        parts.append(f"<div class='role'>hidden tests</div><table>{tests}</table>")
    for key, label in (("rejection", "submission rejected"), ("error", "grading error")):
        if grade.get(key):
            parts.append(f"<div class='role'>{label}</div><pre>{esc(grade[key])}</pre>")
    log = str(grade.get("log") or "")
    if log:
        parts.append(
            f"<details class='log'><summary>grade log ({len(log.splitlines())} lines)</summary>"
            f"<pre>{esc(log)}</pre></details>"
        )
    if grade.get("diff"):
        lines = "\n".join(_diff_line(line) for line in str(grade["diff"]).splitlines())
        parts.append(f"<div class='role'>final diff</div><pre class='diff'>{lines}</pre>")
    return "".join(parts)
