"""`gym-swe eval`: its flags, read into the `EvalOptions` that `gym_swe.rollout.run_eval` runs.

The defaults shown in ``--help`` are `EvalOptions`'s own, so the command and the library cannot drift apart.
``--harness`` picks who plays the episodes (a harness's collector, from
`gym_swe.integrations.harnesses.collector.collector_for`), which is why the choice is made here, above the
rollout layer, and handed to `run_eval` as ``play``.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import Any

from gym_swe.cli.options import add_harness, add_sandbox, add_task_ids, check_env, command
from gym_swe.rollout.generators import GENERATORS
from gym_swe.rollout.run_eval import EvalOptions, run_eval


def add_to(commands: Any) -> None:
    defaults = EvalOptions  # its field defaults are the flags' defaults
    parser = command(
        commands,
        "eval",
        "evaluate a model on an env: pass@1, pass@k, trajectories",
        [
            "gym-swe eval --env CodeDebug-v0 --generator hf --model Qwen/Qwen2.5-0.5B-Instruct --limit 8",
            "gym-swe eval --env CodeDebug-v0 --generator vllm-server --base-url http://127.0.0.1:8000 "
            "--model NAME --tokenizer PATH -n 4",
            "gym-swe eval --env CodeDebug-v0 --harness codex --generator openai-chat --base-url URL "
            "--model NAME --export-sft sft.jsonl",
        ],
    )
    parser.add_argument("--env", required=True, help="CodeDebug-v0, SWEGym-v0 or Harbor-v0")
    parser.add_argument("--tasks", default=defaults.tasks, help="task source")
    add_task_ids(parser)
    parser.add_argument("--limit", type=int, help="only the first N tasks")
    add_sandbox(parser)
    parser.add_argument(
        "--generator",
        required=True,
        choices=list(GENERATORS),
        help="hf (transformers), vllm (in-process), vllm-server or openai-chat (an endpoint at --base-url)",
    )
    parser.add_argument(
        "--model", required=True, help="a model directory or Hugging Face id (servers: the served name)"
    )
    parser.add_argument("--base-url", help="vllm-server / openai-chat endpoint")
    parser.add_argument("--tokenizer", help="tokenizer path (default: the model's)")
    parser.add_argument("--api-key", help="for openai-chat (default: OPENAI_API_KEY)")
    parser.add_argument("-n", "--samples", type=int, default=defaults.samples, help="samples per task")
    parser.add_argument(
        "--k", type=int, action="append", help="pass@k to report (repeatable; default: 1 and n)"
    )
    parser.add_argument("--max-turns", type=int, help="turns per episode (default: the env's)")
    parser.add_argument("--max-tokens", type=int, default=defaults.max_tokens, help="tokens per turn")
    parser.add_argument(
        "--max-model-len", type=int, default=defaults.max_model_len, help="tokens per trajectory"
    )
    parser.add_argument(
        "--temperature", type=float, default=defaults.temperature, help="sampling temperature"
    )
    parser.add_argument(
        "--top-p", type=float, default=defaults.top_p, help="nucleus sampling: the top-p mass"
    )
    parser.add_argument(
        "--seed", type=int, help="a run seed: makes a run repeatable (hf); samples still differ"
    )
    parser.add_argument("--parallel", type=int, default=defaults.parallel, help="episodes at once")
    add_harness(
        parser,
        "play each episode with this agent harness, unmodified, through gym_swe's proxy (with "
        "--generator openai-chat: black-box mode, a hosted model, no token ids; default: gym_swe's own "
        "tool loop)",
    )
    parser.add_argument("--out", default=defaults.out, help="where to save the trajectories")
    parser.add_argument("--export-sft", help="also write the resolved trajectories as a chat SFT dataset")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the results an earlier run left at --out (without it, such a run is refused)",
    )
    parser.set_defaults(run=run)


def options(args: argparse.Namespace) -> EvalOptions:
    """The `EvalOptions` that ``gym-swe eval``'s parsed flags ask for: each field is the flag of its name,
    but for the repeatable ones (``--task-id`` gives ``task_ids``, ``-k`` gives ``ks``)."""
    repeated = {"task_ids": tuple(args.task_id or ()), "ks": tuple(args.k or ())}
    values: dict[str, Any] = {
        field.name: repeated[field.name] if field.name in repeated else getattr(args, field.name)
        for field in fields(EvalOptions)
    }
    return EvalOptions(**values)


def run(args: argparse.Namespace) -> int:
    check_env(args.env)  # before anything loads
    settings = options(args)  # impossible values (--k above -n, -n 0, --limit 0, ...) refused here
    if args.harness:
        from gym_swe.integrations.harnesses.collector import check_harness_ready, collector_for

        check_harness_ready(args.harness)  # installed: before the model loads
        return run_eval(settings, play=collector_for(args.harness))
    return run_eval(settings)
