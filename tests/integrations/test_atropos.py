"""The atropos adapter against the real atroposlib: its own command line (``process``, ``serve``,
``evaluate``) on CodeDebug-v0, generating through its server manager from a tiny model behind a real vLLM
server, and ``serve`` feeding a trainer through a real ``run-api`` on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import httpx
import pytest

from gym_swe.envs.unwrapped import tool_env
from gym_swe.rollout.chat import ChatFormat
from gym_swe.rollout.trajectory import Trajectory
from tests.conftest import REPO_ROOT, require_bwrap
from tests.rollout.vllm_server import free_port
from tests.test_readme import command

pytest.importorskip("atroposlib")
from gym_swe.integrations.atropos import MASKED, MASKED_LOGPROB, scored_group

TASK = "GymSwe/0"


def atropos(command: str, *flags: str, server=None, model: Path | None = None, timeout: float = 600):  # type: ignore[no-untyped-def]
    """``python -m gym_swe.integrations.atropos COMMAND`` with the test's env and server settings."""
    base = ["--env.env_id", "CodeDebug-v0", "--env.use_wandb", "false", "--env.max_turns", "2",
            "--env.max_tokens_per_turn", "24", "--env.max_token_length", "4096"]  # fmt: skip
    if server is not None:
        base += ["--env.tokenizer_name", str(model), "--openai.base_url", server.base_url + "/v1",
                 "--openai.model_name", server.model, "--openai.health_check", "false"]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "WANDB_MODE": "disabled"}
    return subprocess.run([sys.executable, "-m", "gym_swe.integrations.atropos", command, *base, *flags],
                          capture_output=True, text=True, timeout=timeout, env=environment)  # fmt: skip


def replayed_return(messages: list[dict]) -> float:
    """What the bare env pays for the assistant turns of ``messages``, played again in a fresh episode."""
    env = gymnasium.make("CodeDebug-v0", max_turns=2)
    try:
        env.reset(options={"task_id": TASK})
        total = 0.0
        for message in messages:
            if message["role"] == "assistant":
                _, reward, terminated, truncated, _ = env.step(message["content"])
                total += float(reward)
                if terminated or truncated:
                    break
        return total
    finally:
        env.close()


def check_group(group: dict, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A group is atropos's scored data, token-exact: the env's prompt ids first, the sampled ids unmasked
    with their server log-probabilities, every other id masked, and each score what gym_swe pays."""
    env = tool_env(gymnasium.make("CodeDebug-v0"))
    prompt = ChatFormat(tokenizer, env.toolbox.schemas()).prompt_ids(env.opening_messages(TASK))
    env.close()
    assert len(group["tokens"]) == len(group["scores"]) == len(group["messages"]) == 2
    for tokens, masks, logprobs, score, messages in zip(
        group["tokens"], group["masks"], group["inference_logprobs"], group["scores"], group["messages"]
    ):
        assert tokens[: len(prompt)] == prompt and set(masks[: len(prompt)]) == {MASKED}
        sampled = [i for i, mask in enumerate(masks) if mask != MASKED]
        assert sampled and all(masks[i] == tokens[i] for i in sampled)
        assert all(logprobs[i] <= 0.0 for i in sampled)
        assert all(logprobs[i] == MASKED_LOGPROB for i in range(len(tokens)) if masks[i] == MASKED)
        assert score == replayed_return(messages)


@pytest.fixture(scope="module")
def tokenizer(tiny_model: Path):  # type: ignore[no-untyped-def]
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model))


def test_the_readme_process_command_writes_scored_groups_and_atropos_html_view(
    vllm_server, tiny_model: Path, tokenizer, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    out = tmp_path / "rollouts.jsonl"
    readme = command("atropos")
    assert readme[:4] == ["python", "-m", "gym_swe.integrations.atropos", "process"]
    values = {"PATH": str(tiny_model), "http://127.0.0.1:8000/v1": vllm_server.base_url + "/v1",
              "NAME": vllm_server.model, "rollouts.jsonl": str(out)}  # fmt: skip
    # As written, with a smaller run: one group of two short episodes of one task.
    flags = ["--env.group_size", "2", "--env.total_steps", "1", "--env.task_ids", TASK, "--env.max_turns", "2",
             "--env.max_tokens_per_turn", "24", "--openai.health_check", "false"]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "WANDB_MODE": "disabled"}
    result = subprocess.run([sys.executable, *(values.get(arg, arg) for arg in readme[1:]), *flags], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600, env=environment)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(groups) == 1
    check_group(groups[0], tokenizer)
    assert [o["task_id"] for o in groups[0]["overrides"]] == [TASK, TASK]
    html = out.with_suffix(".html").read_text()
    assert "Group 0" in html and "run_length_encode" in html  # atropos's own view of the group


def test_serve_feeds_a_trainer_through_run_api(
    vllm_server, tiny_model: Path, tokenizer, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    port = free_port()
    api = subprocess.Popen([str(Path(sys.executable).with_name("run-api")), "--host", "127.0.0.1", "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    env_process = None
    try:
        url = f"http://127.0.0.1:{port}"
        client = httpx.Client(base_url=url, timeout=30)
        deadline = time.monotonic() + 120
        while True:
            try:
                client.get("/status")
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "run-api did not start"
                time.sleep(0.5)
        # The trainer registers and asks for a first batch (which starts the run), as atropos's trainers do.
        client.post("/register", json={"wandb_group": "g", "wandb_project": "p", "batch_size": 2,
                                       "max_token_len": 4096, "checkpoint_dir": str(tmp_path), "save_checkpoint_interval": -1,
                                       "starting_step": 0, "num_steps": 2}).raise_for_status()  # fmt: skip
        assert client.get("/batch").json()["batch"] is None
        log = (tmp_path / "serve.log").open("w")
        flags = ["--env.group_size", "2", "--env.batch_size", "2", "--env.total_steps", "2", "--env.task_ids", TASK,
                 "--env.rollout_server_url", url, "--env.max_num_workers", "1",
                 # a tiny random model's group can score alike (0, 0): here it must still reach the trainer
                 "--env.ensure_scores_are_not_same", "false",
                 "--env.tokenizer_name", str(tiny_model), "--openai.base_url", vllm_server.base_url + "/v1",
                 "--openai.model_name", vllm_server.model, "--openai.health_check", "false"]  # fmt: skip
        base = ["--env.env_id", "CodeDebug-v0", "--env.use_wandb", "false", "--env.max_turns", "2",
                "--env.max_tokens_per_turn", "24", "--env.max_token_length", "4096"]  # fmt: skip
        environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "WANDB_MODE": "disabled"}
        env_process = subprocess.Popen([sys.executable, "-m", "gym_swe.integrations.atropos", "serve", *base, *flags],
                                       stdout=log, stderr=subprocess.STDOUT, env=environment, start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 420
        batch = None
        while batch is None:
            assert env_process.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()[-3000:]
            time.sleep(2)
            batch = client.get("/batch").json()["batch"]
        assert len(batch) == 1 and batch[0]["env_id"] == 0
        check_group(batch[0], tokenizer)
    finally:
        for process in (env_process, api):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, 15)
                process.wait(timeout=60)


def test_evaluate_writes_metrics_and_samples(vllm_server, tiny_model: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    result = atropos("evaluate", "--env.eval_task_ids", "GymSwe/0,GymSwe/1", "--env.data_dir_to_save_evals",
                     str(tmp_path), server=vllm_server, model=tiny_model)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    metrics = json.loads((tmp_path / "metrics.json").read_text())["results"]["all"]
    samples = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert sorted(s["task_id"] for s in samples) == ["GymSwe/0", "GymSwe/1"]
    assert metrics["eval/pass@1"] == sum(s["resolved"] for s in samples) / 2 and metrics["eval/failed"] == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--env.env_id", "CodeDebug-v9"],
            "--env.env_id: Value error, Unknown gym_swe env 'CodeDebug-v9'. Did you mean 'CodeDebug-v0'?",
        ),
        (
            ["--env.task_ids", "GymSwe/0,GymSwe/999"],
            "--env.task_ids: Unknown task 'GymSwe/999'. Did you mean",
        ),
        (["--env.sandbox", "dokcer"], "Did you mean 'docker'?"),
        (["--env.max_step_seconds", "0"], "--env.max_step_seconds"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(flags: list[str], message: str) -> None:
    result = atropos("process", *flags, "--env.tokenizer_name", "unused", timeout=120)
    assert result.returncode == 2 and message in result.stderr.strip().splitlines()[-1]


def test_the_step_bound_settings_reach_the_env() -> None:
    from gym_swe.integrations.atropos import GymSweAtroposEnv, GymSweEnvConfig

    config = GymSweEnvConfig(tokenizer_name="unused", max_tool_calls=3, max_step_seconds=7.5)
    env = GymSweAtroposEnv._make_env(config)
    assert (tool_env(env).max_tool_calls, tool_env(env).max_step_seconds) == (3, 7.5)
    env.close()
    default = GymSweAtroposEnv._make_env(GymSweEnvConfig(tokenizer_name="unused"))
    assert (tool_env(default).max_tool_calls, tool_env(default).max_step_seconds) == (32, 600.0)
    default.close()


def test_a_group_with_a_failed_episode_is_not_sent() -> None:
    done = Trajectory(
        task_id=TASK, sample_index=0, token_ids=[1, 2, 3], loss_mask=[0, 1, 1], logprobs=[None, -0.5, -0.25]
    )
    failed = Trajectory(task_id=TASK, sample_index=1, error="sandbox: the executor died")
    assert scored_group([done, failed]) is None
    group = scored_group([done])
    assert group is not None and group["masks"] == [[MASKED, 2, 3]]
    assert group["inference_logprobs"] == [[MASKED_LOGPROB, -0.5, -0.25]]


def test_a_cancelled_group_gives_its_envs_back_once_its_episodes_end() -> None:
    """atropos cancels a group's task (a worker timeout, an eval that stops training) but cannot stop the
    thread playing it: its envs must not go back to the pool while that thread still steps them."""
    require_bwrap()
    from transformers import AutoTokenizer

    from gym_swe.integrations.atropos import GymSweAtroposEnv, GymSweEnvConfig
    from gym_swe.rollout.chat import ChatFormat
    from tests.rollout.conftest import TOKENIZERS
    from tests.rollout.scripted_http import Answer, scripted_server

    path = TOKENIZERS / "qwen2.5-instruct"
    if not path.is_dir():
        pytest.skip(f"shared tokenizers not found at {path}")
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    text = '<tool_call>{"name": "bash", "arguments": {"command": "true"}}</tool_call>'
    ids = [*tokenizer.encode(text, add_special_tokens=False), ChatFormat(tokenizer).end_of_turn_id()]
    choice = {"index": 0, "text": text, "finish_reason": "stop", "token_ids": ids,
              "logprobs": {"tokens": [f"token_id:{i}" for i in ids], "token_logprobs": [-0.1] * len(ids)}}  # fmt: skip
    completion = {"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": [choice]}

    async def scenario(server) -> None:  # type: ignore[no-untyped-def]
        from atroposlib.envs.server_handling.server_manager import APIServerConfig

        config = GymSweEnvConfig(
            tokenizer_name=str(path), group_size=2, use_wandb=False, max_turns=3, task_ids=TASK
        )
        servers = [
            APIServerConfig(base_url=server.url + "/v1", model_name="m", api_key="x", health_check=False)
        ]
        env = GymSweAtroposEnv(config, servers)
        await env.setup()
        group = asyncio.create_task(env.collect_trajectories(TASK))
        for _ in range(600):  # both episodes' first requests in flight (each answered after 2 s)
            if server.in_flight == 2:
                break
            await asyncio.sleep(0.05)
        group.cancel()
        with pytest.raises(asyncio.CancelledError):
            await group
        assert env.idle_envs == 0  # the collector's thread still holds them
        for _ in range(600):
            if env.idle_envs == 2:
                break
            await asyncio.sleep(0.05)
        assert env.idle_envs == 2 and server.requests == 2  # back, and no episode played another turn
        env.close_envs()

    with scripted_server(Answer(body=completion, delay=2.0)) as server:
        asyncio.run(scenario(server))
