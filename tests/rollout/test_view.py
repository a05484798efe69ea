"""`gym-swe view`'s page, read as generated HTML: what it shows of each episode, of each group and of a run, and
which episodes it shows. (Its script runs in a real browser in tests/rollout/test_view_browser.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gym_swe.errors import ConfigError
from gym_swe.rollout.trajectory import Trajectory, Turn, save_jsonl
from gym_swe.rollout.view import (
    keeper,
    load_run,
    load_trajectories,
    outcome,
    render_html,
    render_page,
    run_settings,
    select,
)
from gym_swe.rollout.view_episode import shown_content
from gym_swe.rollout.view_summary import TrajectoryFile, group_indices
from gym_swe.rollout.view_tokens import check_tokenizer_path, token_data

SYSTEM = "You are a careful engineer. " * 50
DIFF = """diff --git a/solution.py b/solution.py
--- a/solution.py
+++ b/solution.py
@@ -1,2 +1,2 @@
 def f(x):
-    return x - 1
+    return x + 1
"""


def episode(
    task_id: str, resolved: bool | None, reward: float = 0.0, diff: str = "", sample: int = 0
) -> Trajectory:
    """A two-turn episode (its second turn cut at length); ``resolved=None`` makes it a failed one."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Fix {task_id}."},
        {"role": "assistant", "content": "let me look", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "solution.py"},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    trajectory = Trajectory(task_id=task_id, sample_index=sample, messages=messages, reward=reward,
                            token_ids=list(range(40)), loss_mask=[0] * 20 + [1] * 12 + [0] * 3 + [1] * 5,
                            logprobs=[None] * 20 + [-0.5] * 12 + [None] * 3 + [-2.0] * 5, prompt_length=20,
                            end_reason="submitted", terminated=True)  # fmt: skip
    trajectory.turns = [
        Turn(start=20, length=12, text="let me look", finish_reason="stop", bridge_length=3, generate_seconds=0.5),
        Turn(start=35, length=5, text="done", finish_reason="length"),
    ]  # fmt: skip
    if resolved is None:
        trajectory.error = "generator: no answer"
        return trajectory
    trajectory.grade = {
        "resolved": resolved, "passed": 1, "total": 2, "diff": diff, "reward": reward, "integrity": "sealed",
        "log": "collected 2 items\ntest_b FAILED", "duration": 1.5,
        "tests": [{"name": "test_a", "outcome": "passed"}, {"name": "test_b", "outcome": "failed"}],
        "groups": {"FAIL_TO_PASS": ["test_b"], "PASS_TO_PASS": ["test_a"]},
    }  # fmt: skip
    return trajectory


def read(page: str) -> tuple[str, dict[str, Any]]:
    """The page's HTML without its data, and its data (episodes' bodies and tokens, the vocabulary)."""
    found = re.search(r'<script type="application/json" id="gym-swe-data">(.*?)</script>', page, re.S)
    assert found is not None
    return page[: found.start()], json.loads(found.group(1))


def bodies(page: str) -> str:
    return "".join(text for text in read(page)[1]["bodies"] if text)


def test_the_system_prompt_is_shown_once() -> None:
    page = render_html([episode("a", True), episode("b", False), episode("c", None)])
    static = read(page)[0]
    assert static.count("You are a careful engineer.") == 50  # one copy of the 50 repeats, none in the bodies
    assert 'system prompt #1 <span class="meta">(3 episodes)' in static
    assert bodies(page).count("system prompt #1 above") == 3


def test_each_turn_shows_what_it_cost_and_its_signals() -> None:
    trajectory = episode("a", True)
    trajectory.turns[0].tool_errors, trajectory.turns[0].format_penalty, trajectory.turns[0].reward = (
        2,
        0.1,
        -0.1,
    )
    page = render_html([trajectory])
    static, text = read(page)[0], bodies(page)
    assert "turn 1 · 12 tokens · finish: stop · generate 0.5 s, env 0.0 s · step reward -0.10" in text
    assert "2 tool-call errors (unparsed)" in text and "format penalty −0.10" in text
    assert "turn 2 · 5 tokens · finish: length" in text and "✂ cut at length (max_tokens)" in text
    assert (
        "40 tokens (20 prompt)" in static and "✂ 1 cut at length" in static and "2 tool-call errors" in static
    )
    assert "tokens: 40 (20 prompt, 17 sampled in 2 turns, loss mask 1 on 17)" in text  # the token view's head


def test_the_training_context_and_the_grade() -> None:
    trajectory = episode("a", True, diff=DIFF)
    trajectory.policy_version, trajectory.forks, trajectory.segment_starts = 3, 1, [30]
    trajectory.rerender_matches, trajectory.generator, trajectory.advantage = False, "vllm", 0.75
    page = render_html([trajectory])
    static, text = read(page)[0], bodies(page)
    assert "policy v3" in static and "re-render differs" in static and "1 forks" in static
    assert "advantage +0.75 ·" in static  # the trainer's: no * beside it
    assert "<tr><th>policy version</th><td>3</td></tr>" in text
    assert "+0.750 (the trainer&#x27;s, as its loss used it)" in text
    assert "<tr><th>segments</th><td>2 (1 forks: history rewritten)</td></tr>" in text
    assert "DIFFERS (the ids are not what the messages render to)" in text
    assert "integrity: sealed (a FAIL_TO_PASS check held outside the test run" in text
    assert "grade log (2 lines)" in text and "test_b FAILED" in text and "graded in 1.5 s" in text
    assert '<span class="add">+    return x + 1</span>' in text
    assert '<span class="del">-    return x - 1</span>' in text
    assert "<td>failed</td><td>FAIL_TO_PASS</td><td>test_b</td>" in text
    assert "final diff" not in bodies(render_html([episode("a", True)]))  # no diff recorded: no section
    assert "not graded" in bodies(render_html([episode("c", None)]))


def test_a_hosted_models_episode_says_it_has_no_token_ids() -> None:
    """openai-chat (gym_swe's loop, or a harness in black-box mode): messages, no ids to count or draw."""
    trajectory = episode("a", True)
    trajectory.token_ids, trajectory.loss_mask, trajectory.logprobs = [], [], []
    trajectory.prompt_length, trajectory.generator, trajectory.has_token_ids = 0, "openai-chat", False
    trajectory.turns = [Turn(start=0, length=0, text=t.text, finish_reason="stop") for t in trajectory.turns]
    page = render_html([trajectory])
    static, data = read(page)
    assert "messages only, no token ids (openai-chat)" in static
    text = bodies(page)
    assert "turn 1 · finish: stop" in text and "tokens" not in text and data["tokens"] == [None]
    assert token_data(trajectory) is None


def test_a_tool_call_is_shown_once() -> None:
    """A chat endpoint without a tool parser returns the call as text; the env parses it and records both the
    text and the call: the page shows it once. A long call reads as written, line breaks and all."""
    script = "cat > a.py <<'E'\n" + "x = 1\n" * 30 + "E"
    call = {"name": "bash", "arguments": {"command": script}}
    text = f"I will write it.\n<tool_call>\n{json.dumps(call)}\n</tool_call>"
    message = {"role": "assistant", "content": text, "tool_calls": [{"id": "c", "type": "function", "function": {
        "name": "bash", "arguments": json.dumps({"command": script})}}]}  # fmt: skip
    assert shown_content(message) == ("I will write it.", True)
    trajectory = episode("a", True)
    trajectory.messages[2] = message
    page = bodies(render_html([trajectory]))
    assert page.count("x = 1") == 30 and "&lt;tool_call&gt;" not in page
    assert "x = 1\nx = 1" in page  # real line breaks, not a JSON string's \n
    assert "→ bash(command=&quot;ls&quot;)" in bodies(
        render_html([episode("a", True)])
    )  # a short one: one line
    other = dict(
        message, content="<tool_call>" + json.dumps({"name": "bash", "arguments": {"command": "pwd"}})
    )
    assert shown_content(other) == (other["content"], False)  # the text holds other calls: kept as written


def test_filter_by_outcome_and_reward() -> None:
    trajectories = [episode("a", True, reward=1.0), episode("b", False, reward=0.25), episode("c", None)]
    assert [outcome(t) for t in trajectories] == ["resolved", "unresolved", "failed"]
    assert [t.task_id for t in select(trajectories, outcomes=["failed"])] == ["c"]
    assert [t.task_id for t in select(trajectories, outcomes=["resolved", "unresolved"])] == ["a", "b"]
    assert [t.task_id for t in select(trajectories, min_reward=0.2)] == ["a", "b"]
    with pytest.raises(ConfigError, match="Did you mean 'failed'"):
        select(trajectories, outcomes=["faild"])
    page = render_html(trajectories)
    assert 'data-outcome="resolved"' in page and 'data-outcome="failed"' in page
    assert 'value="failed"> failed (1)' in page  # the buttons that show one outcome
    # Filtered: the episodes go, the numbers over them stay.
    page = render_page([TrajectoryFile("", trajectories)], keep=keeper(["failed"]))
    static, data = read(page)
    assert static.count('class="episode"') == 1 and "3 episodes (1 of 3 shown)" in static
    assert [body is not None for body in data["bodies"]] == [False, False, True]
    assert "<b>all tasks</b></td><td>3</td><td>1</td><td>1</td>" in static  # 3 samples, 1 resolved, 1 failed


def test_groups_their_spread_and_advantages() -> None:
    rewards = {"a": [1.0, 0.0, 0.0, 1.0], "b": [0.0, 0.0]}
    trajectories = [episode(task, r == 1.0, reward=r, sample=i) for task, rs in rewards.items()
                    for i, r in enumerate(rs)]  # fmt: skip
    trajectories.append(episode("b", None, sample=2))  # failed: out of the baseline, no advantage
    static = read(render_html(trajectories))[0]
    assert static.count('class="group"') == 2
    assert "4 samples · mean 0.50 · std 0.58 · min 0.00 max 1.00 · advantage*: reward − group mean" in static
    assert "<tr><th>advantage</th><td>+0.50</td><td>-0.50</td><td>-0.50</td><td>+0.50</td></tr>" in static
    assert static.count("no spread: every valid sample the same reward") == 1  # group b
    assert "<tr><th>advantage</th><td>+0.00</td><td>+0.00</td><td>–</td></tr>" in static
    assert '<td><a href="#e1">#1</a></td>' in static  # each sample links to its episode
    for trajectory, advantage in zip(trajectories, [0.9, -0.9, -0.9, 0.9]):
        trajectory.advantage = advantage  # the trainer's, scaled by the group's std
    static = read(render_html(trajectories))[0]
    assert "advantage: the trainer&#x27;s" in static and "<td>+0.90</td><td>-0.90</td>" in static
    # A task drawn twice in one file is two groups: a repeated sample index starts the second.
    twice = [episode("a", True, sample=0), episode("a", True, sample=1), episode("a", False, sample=0)]
    assert group_indices(twice) == [[0, 1], [2]]


def test_the_run_summary_pass_at_k_and_end_reasons() -> None:
    trajectories = [episode("a", True, 1.0, sample=0), episode("a", False, sample=1), episode("b", True, 1.0)]
    trajectories[1].end_reason = "max_turns"
    static = read(render_html(trajectories))[0]
    assert "<th>pass@1</th><th>pass@2</th>" in static and "<th>pass@4</th>" not in static
    # b has one sample: no pass@2, not a 0 in the overall score
    assert (
        "<td><b>all tasks</b></td><td>3</td><td>2</td><td>0</td><td>0.750</td><td>1.000 (1 tasks)</td>"
        in static
    )
    assert "<tr><td>a</td><td>2</td><td>1</td><td>0</td><td>0.500</td><td>1.000</td><td>0.500</td>" in static
    assert "<tr><td>b</td><td>1</td><td>1</td><td>0</td><td>1.000</td><td>–</td><td>1.000</td>" in static
    assert "<tr><td>submitted</td><td>2</td><td>66.7%</td></tr>" in static
    assert "<tr><td>max_turns</td><td>1</td><td>33.3%</td></tr>" in static


def test_a_page_is_bounded_and_its_data_safe_in_a_script() -> None:
    trajectories = [episode(task, True) for task in "abcd"]
    trajectories[3].messages[1]["content"] = "</script><script>alert(1)</script> <!-- x"
    trajectories[3].turns[0].finish_reason = "</script><!--"  # token data is not HTML-escaped, only JSON
    page = render_html(trajectories)
    found = re.search(r'id="gym-swe-data">(.*?)</script>', page, re.S)
    assert found is not None and "</" not in found.group(1) and "<!--" not in found.group(1)
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &lt;!-- x" in bodies(page)
    assert read(page)[1]["tokens"][3]["turns"][0][2] == "</script><!--"  # and it reads back as written
    full = len(page.encode())
    for budget in (full - 1, full * 0.8, 1):
        smaller = render_page([TrajectoryFile("", trajectories)], max_bytes=budget)
        static, data = read(smaller)
        kept = [body is not None for body in data["bodies"]]
        assert kept == sorted(kept)  # the last episodes first: what is kept is a tail
        assert not all(kept) or None in data["tokens"]
        assert "--max-mb) spent:" in static and static.count('class="episode"') == 4  # each keeps its line
        assert budget == 1 or len(smaller.encode()) <= budget
        if budget == full - 1:  # a byte short: the last thing weighed, the first episode's tokens, stays out
            assert kept == [True] * 4 and data["tokens"][0] is None and None not in data["tokens"][1:]
            assert "0 episodes without their body, 1 more without their tokens" in static
    assert data["bodies"] == [None] * 4


def test_token_data_is_compact() -> None:
    data = token_data(episode("a", True))
    assert data is not None and data["ids"] == list(range(40)) and data["prompt"] == 20
    assert data["mask"] == [[20, 32], [35, 40]]
    assert data["lp"] == [[20, [-0.5] * 12], [35, [-2.0] * 5]]
    assert data["turns"] == [[20, 12, "stop", 3], [35, 5, "length", 0]]


def test_the_tokenizer_is_a_local_folder(tmp_path: Path, shared_data: Path) -> None:
    from gym_swe.rollout.view_tokens import load_tokenizer, vocabulary

    with pytest.raises(ConfigError, match="no such directory; give a local folder"):
        check_tokenizer_path(tmp_path / "missing")
    with pytest.raises(ConfigError, match=r"no tokenizer\.json"):
        check_tokenizer_path(tmp_path)
    tokenizer = load_tokenizer(shared_data / "tokenizers" / "qwen2.5-instruct")
    ids = tokenizer.encode("def f(x):\n    return x").ids
    table = vocabulary(tokenizer, [*ids, 10**9])
    assert "".join(table[str(i)] for i in ids) == "def f(x):\n    return x" and str(10**9) not in table
    page = render_page([TrajectoryFile("", [episode("a", True)])], tokenizer=tokenizer)
    assert read(page)[1]["vocab"]["0"] == tokenizer.decode([0])


def test_load_trajectories_round_trip_and_errors(tmp_path: Path) -> None:
    path = save_jsonl([episode("a", True, diff=DIFF)], tmp_path / "t.jsonl")
    (loaded,) = load_trajectories(path)
    assert loaded.grade is not None and loaded.grade["diff"] == DIFF and loaded.turns[0].length == 12
    with pytest.raises(ConfigError, match="no such file"):
        load_trajectories(tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match="is a directory"):
        load_trajectories(tmp_path)
    (tmp_path / "bad.jsonl").write_text('{"task_id": "a"}\n{"task_id": \n')
    with pytest.raises(ConfigError, match=r"bad\.jsonl, line 2: not a trajectory"):
        load_trajectories(tmp_path / "bad.jsonl")


def test_a_run_directory(tmp_path: Path) -> None:
    """A trainer's run: its step files in step order, its eval episodes apart, the rest passed over."""
    run = tmp_path / "run"
    for step in (10, 2):
        save_jsonl([episode("a", True, sample=0), episode("a", False, sample=1)],
                   run / "trajectories" / f"step_{step:05d}.jsonl")  # fmt: skip
    save_jsonl([episode("a", True)], run / "trajectories" / "step_00002.process1.jsonl")  # in the whole file
    save_jsonl([episode("b", True)], run / "eval" / "step_00010.jsonl")
    (run / "metrics.jsonl").write_text('{"step": 2, "reward/mean": 0.5}\n')
    (run / "sft.jsonl").write_text(
        '{"task_id": "a", "messages": [], "tools": []}\n'
    )  # gym-swe eval --export-sft
    (run / "args.json").write_text('{"model": "tiny", "group_size": 2}')
    line = json.dumps(episode("c", True).to_dict())
    (run / "trajectories" / "step_00011.jsonl").write_text(line + "\n" + line[:50])  # still being written
    files, notes = load_run(run)
    assert [(f.label, f.kind, f.step, len(f.trajectories)) for f in files] == [
        ("trajectories/step_00002.jsonl", "train", 2, 2),
        ("trajectories/step_00010.jsonl", "train", 10, 2),
        ("trajectories/step_00011.jsonl", "train", 11, 1),
        ("eval/step_00010.jsonl", "eval", 10, 1),
    ]
    assert sorted(note.split(":")[0] for note in notes) == [
        "metrics.jsonl", "sft.jsonl", "trajectories/step_00002.process1.jsonl", "trajectories/step_00011.jsonl",
    ]  # fmt: skip
    assert run_settings(run) == run_settings(run / "trajectories") == {"model": "tiny", "group_size": 2}
    assert [f.label for f in load_run(run / "trajectories")[0]][:1] == ["step_00002.jsonl"]
    page = render_page(files, settings=run_settings(run), notes=notes)
    static = read(page)[0]
    assert "6 episodes in 4 files" in static and static.count('<section class="file"') == 4
    assert '<a href="#f0">trajectories/step_00002.jsonl</a></td><td>train</td><td>2</td>' in static
    assert "per task: training episodes (every file: all steps together)" in static
    assert "per task: eval episodes" in static and "run settings (args.json)" in static
    assert static.count("<th>advantage</th>") == 3  # the training groups': no loss used the eval episodes
    assert "metrics.jsonl: holds no trajectories, passed over" in static
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no \.jsonl file of trajectories under it"):
        load_run(tmp_path / "empty")
    with pytest.raises(ConfigError, match="no such file or directory"):
        load_run(tmp_path / "nowhere")
