"""`--method rewrite`: functions rewritten through gym_swe's generators. A scripted policy (a real tokenizer's
chat template in, a rewrite with a real bug out) makes a task that validates and plays; the tests' tiny model
through `make_generator("hf")` runs the same path from the command line (its random answers are rejected,
each with the reason)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import gym_swe  # noqa: F401
from gym_swe.cli import main
from gym_swe.generate.drafts import baseline
from gym_swe.generate.mutate import mutations
from gym_swe.generate.pipeline import Generation, candidates_for, paths_for
from gym_swe.generate.repository import open_repository
from gym_swe.rollout.generators.base import Sample, SamplingParams
from gym_swe.tasks.swe import bundled_data_dir
from tests.conftest import require_bwrap
from tests.envs.test_swegym import SUBMIT, apply_gold
from tests.rollout.test_trajectories import load


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_bwrap()
    path = tmp_path_factory.mktemp("src") / "semverkit"
    bundle = bundled_data_dir() / "semverkit.bundle"
    subprocess.run(["git", "clone", "--quiet", "-b", "main", str(bundle), str(path)], check=True)
    return path


class Rewriter:
    """A scripted policy: reads the function out of the prompt (decoded with a real tokenizer) and answers
    with it rewritten with a comparison flipped, the way a model asked for a subtle bug might."""

    name = "scripted-rewriter"

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.prompts: list[str] = []

    def generate(self, prompts: Any, params: SamplingParams, seeds: Any = None) -> list[Sample]:
        samples = []
        for prompt in prompts:
            text = self.tokenizer.decode(list(prompt))
            self.prompts.append(text)
            code = re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1)  # type: ignore[union-attr]
            flips = [m for m in mutations("f.py", code, {"x"} | set(re.findall(r"\w+", code)))]
            flipped = next((m.apply(code) for m in flips if m.operator == "compare"), code)
            answer = f"```python\n{flipped}```"
            ids = self.tokenizer.encode(answer, add_special_tokens=False)
            samples.append(Sample(token_ids=ids, logprobs=None, text=answer, finish_reason="stop"))
        return samples

    def sync_weights(self, model: Any) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


def test_a_rewrite_through_a_generator_becomes_a_validated_task_that_plays(
    source: Path, tmp_path: Path
) -> None:
    """About a minute under load: the repository's tests run for the baseline, the rewrite and validation."""
    rewriter = Rewriter(load("qwen2.5-instruct"))
    out = tmp_path / "tasks.jsonl"
    repo = open_repository(source, paths_for(out)["repos"])
    generation = Generation(repo, out, workers=2, max_tasks=1)
    base = baseline(repo, 600)
    kept = generation.run(candidates_for(repo, ["rewrite"], base, 600, generator=rewriter))["kept"]
    assert 1 <= kept <= 2  # one asked for; the other worker's, in flight then, is finished too
    assert rewriter.prompts and "<|im_start|>user" in rewriter.prompts[0]  # the chat template was used
    record = json.loads(out.read_text().splitlines()[0])
    assert (
        record["provenance"]["method"] == "rewrite" and record["provenance"]["model"] == "scripted-rewriter"
    )
    assert record["validation"]["integrity"] in ("sealed", "decoys")
    env = gymnasium.make("SWEGym-v0", tasks=str(out))
    try:
        task = env.unwrapped.tasks.get(record["instance_id"])
        for actions, reward in (([apply_gold(task)], 1.0), ([], 0.0)):
            env.reset(options={"task_id": task.instance_id})
            for action in [*actions, SUBMIT]:
                _, got, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
            assert got == reward and info.get("error") is None
    finally:
        env.close()


def test_the_tiny_model_rewrites_through_make_generator_from_the_command_line(
    source: Path, tmp_path: Path, tiny_model: Path
) -> None:
    """The tiny model writes each rewrite on the CPU, token by token (10 s unloaded, more under load)."""
    out = tmp_path / "tasks.jsonl"
    argv = ["tasks", "generate", "--repo", str(source), "--out", str(out), "--method", "rewrite"]
    argv += ["--generator", "hf", "--model", str(tiny_model), "--max-candidates", "2", "--workers", "1"]
    assert main(argv) == 0
    rejected = [json.loads(line) for line in paths_for(out)["rejected"].read_text().splitlines()]
    kept = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    assert len(rejected) + len(kept) == 2
    for row in rejected:  # a random model's answer: why it is no task is said
        assert row["method"] == "rewrite" and re.search(r"model|test|compile", row["reason"]), row
