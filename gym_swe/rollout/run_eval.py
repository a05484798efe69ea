"""`gym-swe eval`: a model on an env's tasks, with a progress bar, a per-task table, pass@1 and pass@k.

`run_eval` takes an `EvalOptions` (the command's flags, typed; ``gym_swe.cli.eval`` makes one from them).

A run whose every episode failed (a dead ``--base-url``, a generator that cannot generate) reports why and
exits with status 1 instead of printing a pass@1 of 0.

Impossible settings (``--k`` above ``-n``, ``-n 0``, ``--limit 0``, ...) are refused when `EvalOptions` is
made, in one line, before anything loads. So is an ``--out`` that holds an earlier run's trajectories, unless
``--overwrite``: a run never replaces another's results without being told to.

Each trajectory is appended to ``--out`` as its episode ends (and flushed), so a crash or Ctrl-C loses at most
the episodes in flight; a run that ends rewrites the file in task order. Beside it, ``<out>.summary.json``
(`summary_path`) holds the run's settings (model, generator, sampling, seed, ...), when it ran, and its
scores: pass@k, the mean reward and the mean share of tests passed, per task and overall.

Ctrl-C or SIGTERM (how schedulers stop jobs) stops the run: no episode starts or plays another turn, every
sandbox the run made is closed, and one line says what was saved; the exit status is 130 (SIGINT) or 143
(SIGTERM).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, SupportsFloat, TextIO

import gymnasium

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.errors import ConfigError
from gym_swe.rollout.collector import collect
from gym_swe.rollout.evaluation import failure_reasons, summarize
from gym_swe.rollout.export import export_sft
from gym_swe.rollout.generators import Generator, SamplingParams, make_generator
from gym_swe.rollout.progress import Progress
from gym_swe.rollout.stopping import interrupt_of, signals_interrupt
from gym_swe.rollout.trajectory import JsonlAppender, Trajectory, load_jsonl, save_jsonl


@dataclass(frozen=True)
class EvalOptions:
    """What `run_eval` runs: which tasks, played how, sampled from which generator, saved where. The defaults
    are `gym-swe eval`'s; the generator's fields keep its flags' names (``--base-url`` is ``base_url``)."""

    env: str
    """The env id, e.g. ``CodeDebug-v0``."""
    generator: str
    """hf (transformers), vllm (in-process), vllm-server or openai-chat (an endpoint at ``base_url``)."""
    model: str
    """A model directory or Hugging Face id; for a server, the name it serves."""
    tasks: str = "bundled"
    """The env's task source."""
    task_ids: tuple[str, ...] = ()
    """Only these tasks, in this order (default: every task of the source); an unknown one is refused before
    the model loads."""
    limit: int | None = None
    """Only the first ``limit`` tasks."""
    sandbox: str = "local"
    """Where agent commands run: local or docker."""
    base_url: str | None = None
    """vllm-server / openai-chat: the server's address."""
    tokenizer: str | None = None
    """A tokenizer path (default: the model's)."""
    api_key: str | None = None
    """openai-chat: the key (default: OPENAI_API_KEY)."""
    samples: int = 1
    """Samples per task."""
    ks: tuple[int, ...] = ()
    """The pass@k to report (default: 1 and ``samples``)."""
    max_turns: int | None = None
    """Turns per episode (default: the env's)."""
    max_tokens: int = 1024
    """Tokens per turn."""
    max_model_len: int = 8192
    """Tokens per trajectory."""
    temperature: float = 1.0
    """Sampling temperature."""
    top_p: float = 1.0
    """Nucleus sampling: the top-p mass."""
    seed: int | None = None
    """A run seed: makes a run repeatable (hf); samples of a task still differ. None: no per-request seeds."""
    parallel: int = 8
    """Episodes at once."""
    out: str | Path = "trajectories.jsonl"
    """Where the trajectories are saved, each as its episode ends."""
    export_sft: str | Path | None = None
    """Also write the resolved trajectories here, as a chat SFT dataset."""
    overwrite: bool = False
    """Replace the trajectories (and summary, SFT data) an earlier run left at ``out``; without it such a run
    is refused before anything loads."""

    def __post_init__(self) -> None:
        """Refuse what no run can do, in one line naming the flag (gym-swe eval's spelling)."""
        counts = [("-n", self.samples), ("--max-tokens", self.max_tokens),
                  ("--max-model-len", self.max_model_len), ("--parallel", self.parallel)]  # fmt: skip
        counts += [(flag, value) for flag, value in (("--limit", self.limit), ("--max-turns", self.max_turns))
                   if value is not None]  # fmt: skip
        for flag, value in counts:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                omit = " (leave it out for every task)" if flag == "--limit" else ""
                raise ConfigError(f"{flag} must be a whole number >= 1{omit}, got {value!r}")
        for k in self.ks:
            if not isinstance(k, int) or isinstance(k, bool) or k < 1:
                raise ConfigError(f"--k must be a whole number >= 1, got {k!r}")
            if k > self.samples:
                raise ConfigError(
                    f"--k {k}: pass@{k} needs at least {k} samples per task, and -n is {self.samples}; "
                    f"give -n {k} or more, or a smaller --k"
                )
        if not self.temperature >= 0:
            raise ConfigError(f"--temperature must be >= 0, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"--top-p must be in (0, 1], got {self.top_p!r}")
        if self.export_sft is not None and Path(self.export_sft) == Path(self.out):
            raise ConfigError(f"--export-sft {self.export_sft} is --out too: give it a file of its own")


def summary_path(out: str | Path) -> Path:
    """Where a run writing its trajectories to ``out`` keeps its settings and scores: ``x.summary.json``
    beside ``x.jsonl``."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".jsonl") + ".summary.json")


def check_outputs(options: EvalOptions) -> None:
    """An ``--out`` (or its summary, or ``--export-sft``) an earlier run wrote is refused, unless
    ``--overwrite``: results are never replaced without a word."""
    if options.overwrite:
        return
    for path in (Path(options.out), summary_path(options.out), options.export_sft):
        if path is not None and Path(path).exists() and Path(path).stat().st_size > 0:
            raise ConfigError(
                f"{path} holds an earlier run's results: pass --overwrite to replace them, or another --out"
                + (" / --export-sft" if options.export_sft else "")
            )


def build_generator(args: EvalOptions) -> Generator:
    """The generator ``args`` ask for; a bad option, a model or tokenizer that cannot be loaded, or a
    vllm-server that does not answer is a ConfigError naming the flag."""
    return make_generator(
        args.generator,
        model=args.model,
        tokenizer=args.tokenizer or args.model,  # the model's own unless --tokenizer
        base_url=args.base_url,
        api_key=args.api_key,
        max_model_len=args.max_model_len,
        flags=lambda option: "--" + option.replace("_", "-"),
    )


class TurnCallback(gymnasium.Wrapper):
    """Calls ``on_turn`` after each step: the progress bar's view of turns, no change to the env."""

    def __init__(self, env: gymnasium.Env, on_turn: Callable[[], None]) -> None:
        super().__init__(env)
        self._on_turn = on_turn

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        result = self.env.step(action)
        self._on_turn()
        return result


def run_eval(options: EvalOptions, play: Callable[..., list[Trajectory]] = collect) -> int:
    """Plays ``options.samples`` episodes of each task, prints what `gym-swe eval` prints and returns its exit
    status. ``play``: how the episodes are played: `collect` (gym_swe's tool loop), or a black-box harness's
    collector with the same surface plus ``on_turn`` (``--harness``)."""
    with signals_interrupt():
        try:
            return _run(options, play)
        except KeyboardInterrupt as error:  # before any episode ran (loading the model, say)
            interrupted = interrupt_of(error)
            print(
                f"gym-swe: interrupted by {interrupted.signal_name} before any episode ran", file=sys.stderr
            )
            return interrupted.exit_code


def _run(options: EvalOptions, play: Callable[..., list[Trajectory]]) -> int:
    from gym_swe.envs.unwrapped import tool_env

    started_at = time.time()
    check_outputs(options)  # before anything loads
    kwargs: dict[str, Any] = {"tasks": options.tasks, "sandbox": options.sandbox}
    if options.max_turns:
        kwargs["max_turns"] = options.max_turns
    probe = gymnasium.make(options.env, **kwargs)
    try:
        tasks = tool_env(probe).tasks
        for task_id in options.task_ids:  # an unknown one is refused before the model loads, as `play` does
            tasks.get(task_id)
        task_ids = list(options.task_ids) or tasks.ids
    finally:
        probe.close()
    if options.limit:
        task_ids = task_ids[: options.limit]
    generator = build_generator(options)
    sampling = SamplingParams(
        max_tokens=options.max_tokens, temperature=options.temperature, top_p=options.top_p
    )
    total = len(task_ids) * options.samples
    progress = Progress(total, desc="eval")
    make_env: Callable[[], gymnasium.Env[Any, Any]]
    turns: dict[str, Any]
    if play is collect:  # gym_swe's tool loop: a turn is an env step
        make_env = lambda: TurnCallback(gymnasium.make(options.env, **kwargs), progress.on_turn)  # noqa: E731
        turns = {"progress": False}  # the eval's bar is the one shown
    else:  # a harness steps the env only to submit: its turns are its model's, which it counts
        make_env, turns = (lambda: gymnasium.make(options.env, **kwargs)), {"on_turn": progress.on_turn}
    interrupted = None
    saved = JsonlAppender(options.out, then=progress.on_trajectory)  # each trajectory as its episode ends
    try:
        trajectories = play(
            make_env,
            generator,
            task_ids,
            samples_per_task=options.samples,
            sampling=sampling,
            max_model_len=options.max_model_len,
            parallel=options.parallel,
            seed=options.seed,  # None (no --seed): no per-request seeds, so samples of a task differ
            on_trajectory=saved,
            **turns,
        )
    except KeyboardInterrupt as error:  # Ctrl-C or SIGTERM: the collector has closed every sandbox it made
        interrupted = interrupt_of(error)
    finally:
        saved.close()
        progress.close()
        generator.close()
    ks = sorted(set(options.ks or [1, options.samples]))
    if interrupted is not None:
        ended = load_jsonl(options.out) if Path(options.out).exists() else []
        write_summary(options, started_at, summarize(ended, ks), interrupted=True)
        print(
            f"gym-swe: interrupted by {interrupted.signal_name}: {saved.written} of {total} episodes ended, "
            f"saved in {options.out}; the others were stopped and every sandbox closed",
            file=sys.stderr,
        )
        return interrupted.exit_code
    save_jsonl(trajectories, options.out)  # the same trajectories, in task order
    summary = summarize(trajectories, ks)
    write_summary(options, started_at, summary)
    failed = sum(t.failed for t in trajectories)
    if failed == len(trajectories):
        print(f"gym-swe: error: no episode ran: all {failed} episodes failed.", file=sys.stderr)
        _print_failures(trajectories, file=sys.stderr)
        if options.base_url and any("no answer from" in (t.error or "") for t in trajectories):
            print(f"Is the server at --base-url {options.base_url} still up?", file=sys.stderr)
        print(f"trajectories: {options.out}", file=sys.stderr)
        return 1
    print(
        f"\n{'task':<28} {'n':>3} {'resolved':>8} {'failed':>6} {'reward':>7} {'tests':>6} "
        + " ".join(f"{'pass@' + str(k):>8}" for k in ks)
    )
    for row in summary["tasks"]:
        cells = " ".join(f"{row[f'pass@{k}']:>8.3f}" if f"pass@{k}" in row else f"{'n/a':>8}" for k in ks)
        print(
            f"{row['task_id']:<28} {row['n']:>3} {row['resolved']:>8} {row['failed']:>6} "
            f"{row['mean_reward']:>7.3f} {row['tests_passed']:>6.3f} {cells}"
        )
    overall = summary["overall"]
    scores = "  ".join(
        f"pass@{k} = {overall[f'pass@{k}']:.3f}" if f"pass@{k}" in overall else f"pass@{k} = n/a" for k in ks
    )
    print(f"\n{options.env} ({options.tasks}, {len(task_ids)} tasks x {options.samples}): {scores}")
    print(
        f"mean reward = {overall['mean_reward']:.3f}  mean share of tests passed = "
        f"{overall['tests_passed']:.3f}"
    )
    for k, short in summary["short_of"].items():  # only when fewer samples came than asked (a library call)
        print(f"pass@{k} = n/a: {len(short)} task(s) have fewer than {k} samples ({', '.join(short[:3])})")
    if failed:
        print(
            f"{failed} of {len(trajectories)} episodes failed (ended on an error, not by submit or a limit); "
            "they count as unresolved samples."
        )
        _print_failures(trajectories, file=sys.stdout)
    print(f"trajectories: {options.out} (read them with: gym-swe view {options.out}); settings and scores: "
          f"{summary_path(options.out)}")  # fmt: skip
    if not all(t.has_token_ids for t in trajectories):  # a hosted model (openai-chat): messages only
        print(
            f"  messages only: {options.generator} returns no token ids, so these are for evaluation and "
            "SFT data (--export-sft), not for training"
        )
    if options.export_sft:
        rows = export_sft(trajectories, options.export_sft)
        print(f"SFT dataset: {rows} resolved episode(s) -> {options.export_sft}")
    return 0


def _print_failures(trajectories: list[Trajectory], file: TextIO) -> None:
    print("first reasons:", file=file)
    for reason, count in failure_reasons(trajectories):
        print(f"  {count} x {reason}", file=file)


def write_summary(
    options: EvalOptions, started_at: float, summary: dict[str, Any], interrupted: bool = False
) -> Path:
    """The run's settings (the API key left out), when it ran, and its scores, at `summary_path`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        gym_swe_version = version("gym-swe")
    except PackageNotFoundError:
        gym_swe_version = "unknown"
    settings = {key: str(value) if isinstance(value, Path) else value
                for key, value in asdict(options).items()}  # fmt: skip
    settings["api_key"] = "(given)" if options.api_key else None
    record = {
        "settings": settings,
        "gym_swe": gym_swe_version,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started_at)),
        "seconds": round(time.time() - started_at, 1),
        "interrupted": interrupted,
        "trajectories": str(options.out),
        **summary,
    }
    path = summary_path(options.out)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path
