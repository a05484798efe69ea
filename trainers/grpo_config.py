"""The trainer's configuration: every knob of ``trainers/grpo.py`` with its help text, the command line built
from them, and the checks that refuse a setting that cannot work or would do nothing, before anything loads.

Each field of ``Args`` carries its help, its choices and (on the first field of a section) its section in
the field's metadata; ``build_parser`` turns them into argparse arguments, one argument group per section.
Plain argparse rather than transformers' HfArgumentParser: that one makes a group per dataclass only, prints
empty defaults as ``(default: )``, takes only the underscore spelling and lets a prefix stand for a flag.

Flags are documented with underscores, the fields' own names, which are also the keys of a ``--config``
YAML file; the dashed spelling (``--max-turns``) is accepted too and left out of ``--help``. No prefix
stands for a flag (``--max`` is an unknown flag, not ``--max_turns``), and an unknown one names the nearest.
TRL's ``GRPOConfig`` names are accepted where the knob means the same (`TRL_ALIASES`: ``--num_generations``
is ``--group_size``), and answered with the knob to use where it does not (`TRL_HINTS`).

Everything here is checked before torch is imported (`command_line`): the flags, the names (env, sandbox,
model path), and the packages the chosen setting needs; ``--help`` and a refusal take a fraction of a second.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.errors import ConfigError, MissingDependencyError, missing_dependency, unknown_name
from gym_swe.integrations.harnesses.registry import HARNESS_NAMES
from gym_swe.rollout.generators.model_names import check_model_name
from gym_swe.sandbox import BACKENDS

SCALES = ("group", "batch", "none")
GENERATORS = ("hf", "vllm", "vllm-server")


def option(
    default: Any,
    help: str,
    *,
    choices: Sequence[str] = (),
    flag: str = "",
    section: str = "",
    kind: type | None = None,
) -> Any:
    """A field of ``Args``: its default and ``--help`` text, the values it accepts (validate checks them),
    its documented flag where that is not ``--<name>``, on a section's first field the section, and the type
    of its values where the default (None: decided later, its help says how) does not show it."""
    metadata = {
        "help": " ".join(help.split()),
        "choices": tuple(choices),
        "flag": flag,
        "section": section,
        "kind": kind or type(default),
    }
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class LossDefaults:
    """What a loss takes unless told otherwise: its paper's clip range and advantage scale."""

    eps_low: float
    eps_high: float
    advantage_scale: str
    why: str  # for --help: whose setting this is


LOSS_DEFAULTS = {
    "dapo": LossDefaults(0.2, 0.28, "group", "DAPO's clip-higher"),
    "grpo": LossDefaults(0.2, 0.2, "group", "DeepSeekMath's symmetric clip"),
    "dr_grpo": LossDefaults(
        0.2, 0.2, "none", "Dr. GRPO: no std division; summed over the batch, divided by the generation budget"
    ),
    "gspo": LossDefaults(3e-4, 4e-4, "group", "GSPO's range for its sequence ratio"),
    "cispo": LossDefaults(
        1.0, 0.28, "group", "MiniMax-M1: no lower bound on the weight; the paper tunes the upper one"
    ),
}
"""Each --loss's own defaults (None in Args: the loss's). The KL (--beta) stays 0 for every loss: DAPO and
Dr. GRPO drop it, and it would load a second model."""
LOSSES = tuple(LOSS_DEFAULTS)


def loss_menu() -> str:
    """--loss's help: each loss with the defaults it takes."""
    return "; ".join(
        f"{name}: --eps_low {d.eps_low:g} --eps_high {d.eps_high:g} --advantage_scale {d.advantage_scale} "
        f"({d.why})"
        for name, d in LOSS_DEFAULTS.items()
    )


@dataclass
class Args:
    env: str = option(
        "CodeDebug-v0",
        """A registered env id (`gym-swe envs` lists them), or module:EnvId for an env of your own: the module
        is imported, and registers EnvId.""",
        section="the env",
    )
    tasks: str = option(
        "bundled", """The env's task source: "bundled", a dataset name, or a .jsonl/.parquet path."""
    )
    sandbox: str = option(
        "local", """Where agent code runs: "local" (bubblewrap) or "docker".""", choices=tuple(BACKENDS)
    )
    max_turns: int | None = option(
        None,
        """Turns per episode (the env's max_turns: graded when it is reached); default: the env's own.""",
        kind=int,
    )
    env_kwargs: str = option(
        "", """More kwargs for the env, as JSON: '{"reward": "fraction", "show_tests": "full"}'."""
    )
    ray_address: str = option(
        "",
        """Run the envs (each with its sandbox) in Ray actors on the cluster at this address ("auto": the one
        `ray start` made here); empty: in this process.""",
    )
    ray_resources: str = option(
        "",
        """With --ray_address: the custom resources each env actor needs, as JSON: '{"docker_slot": 1}'.""",
    )
    env_url: str = option(
        "",
        """Play the episodes on envs served by `gym-swe serve` at this address (http://host:port), one
        session per episode; the server's env and kwargs are the run's (set GYM_SWE_SERVE_TOKEN if it
        wants a token). Empty: envs in this process (or in Ray actors).""",
    )
    harness: str = option(
        "",
        """An agent harness (mini-swe-agent, pi, opencode, ...): each episode is played by that agent,
        unmodified, through gym_swe's proxy (which records the exact token ids); an npm harness runs inside
        the episode's sandbox (install it first: gym-swe harnesses install NAME); empty: gym_swe's own tool
        loop.""",
        choices=("", *HARNESS_NAMES),
    )
    eval_holdout: int = option(
        4, "Tasks held out of training and evaluated every --eval_every steps (none with --eval_every 0)."
    )
    train_task_ids: str = option(
        "", "Comma-separated task ids to train on (default: every task not held out)."
    )
    eval_task_ids: str = option("", "Comma-separated task ids to evaluate on (instead of --eval_holdout).")

    model: str = option("", "A model directory or Hugging Face id (required).", section="the model")
    tokenizer: str = option("", "Its tokenizer, when not beside the model.")
    lora: bool = option(False, "Train LoRA adapters (peft) instead of every weight.")
    lora_r: int = option(16, "LoRA rank.")
    lora_alpha: int = option(32, "LoRA scaling.")

    generator: str = option(
        "hf",
        "hf (shares the trainer's model), vllm (in-process) or vllm-server (an OpenAI-compatible vLLM).",
        choices=GENERATORS,
        section="generation",
    )
    base_url: str = option("", "vllm-server: the server's address, e.g. http://127.0.0.1:8000.")
    weights_dir: str = option(
        "", "vllm-server: a directory the server can read, where weights go after each update."
    )
    generation_batch_size: int = option(
        16, "hf: prompts per generate call (1: no padding at all, generation exactly repeatable)."
    )
    vllm_sleep: bool = option(
        False, "vllm: release the engine's GPU memory during each update (vLLM's sleep mode; CUDA only)."
    )
    max_new_tokens: int = option(256, "Tokens the model may sample per turn.")
    max_model_len: int = option(
        4096, "A trajectory's most tokens (prompt, turns and bridges); a longer one ends truncated."
    )
    temperature: float = option(1.0, "Sampling temperature (the trainer's log-probabilities use it too).")
    top_p: float = option(1.0, "Nucleus sampling.")
    seed: int = option(
        0,
        """Seeds initialisation, task order and (for hf and vllm) one sampling seed per (step, task, sample,
        turn): a run repeats, its samples still differ.""",
    )

    steps: int = option(20, "Optimisation steps (each collects a batch).", section="GRPO")
    tasks_per_step: int = option(4, "Groups per step (divided among processes).")
    group_size: int = option(4, "Trajectories per task (G).")
    advantage_scale: str = option(
        None,
        """Divide the advantages by the group's std ("group"), the batch's ("batch"), or not ("none");
        default: the --loss's own.""",
        choices=SCALES,
        kind=str,
    )
    leave_one_out: bool = option(False, "Baseline: the mean of the other trajectories of the group.")
    dynamic_sampling: bool = option(
        False, "Collect more groups until the batch holds --tasks_per_step groups whose rewards differ."
    )
    max_resample_rounds: int = option(3, "--dynamic_sampling: rounds of extra collection at most.")
    mask_truncated: bool = option(
        False, "Leave trajectories cut by --max_model_len out of the loss and the baselines."
    )
    loss: str = option(
        "dapo",
        "The policy loss (formulas: the docstring of trainers/grpo.py), each with its paper's defaults, "
        "which a flag given overrides: " + loss_menu() + ".",
        choices=LOSSES,
    )
    eps_low: float = option(
        None, "Lower clip: rho >= 1 - eps_low (1: no lower clip); default: the --loss's own.", kind=float
    )
    eps_high: float = option(None, "Upper clip: rho <= 1 + eps_high; default: the --loss's own.", kind=float)
    beta: float = option(
        0.0,
        """KL penalty to the initial model (0: no reference model is loaded), 0 whatever the --loss: DAPO and
        Dr. GRPO drop it (DeepSeekMath's GRPO used 0.04).""",
    )
    tis_cap: float = option(
        2.0, "Truncated importance sampling: the most a token's trainer/generator ratio may weigh (0: off)."
    )
    geo_mask_threshold: float = option(
        0.0, "Leave out sequences whose geometric-mean trainer/generator ratio is beyond [1/x, x] (0: off)."
    )
    recompute_old_logps: bool = option(
        False,
        "Compute the old log-probabilities in a forward pass before the update (for backends without them).",
    )

    learning_rate: float = option(1e-6, "AdamW's learning rate.", section="optimisation")
    weight_decay: float = option(0.0, "AdamW's weight decay.")
    adam_epsilon: float = option(1e-8, "AdamW's epsilon.")
    warmup_steps: int = option(0, "Steps of linear warmup.")
    lr_schedule: str = option(
        "constant", "The learning rate after the warmup.", choices=("constant", "cosine")
    )
    max_grad_norm: float = option(1.0, "Gradient clipping (0: off).")
    updates_per_batch: int = option(1, "Optimizer steps on each collected batch.")
    max_tokens_per_microbatch: int = option(
        8192, "Micro-batches are packed up to this many (padded) tokens; their gradients accumulate."
    )
    max_scored_per_microbatch: int = option(
        0,
        "Also at most this many sampled (scored) tokens per micro-batch (0: no such limit). The logits "
        "are computed for these; the fused LM head holds a fixed tile of them whatever this is, so it "
        "matters where the log-probabilities are computed the plain way (said on stderr).",
    )
    mixed_precision: str = option("no", "accelerate's mixed precision.", choices=("no", "bf16", "fp16"))
    async_mode: bool = option(
        False,
        "One step off: collect step t+1 while step t trains (not with hf, whose model is the trainer's).",
        flag="--async",
    )
    max_staleness: int = option(
        1,
        """--async: how many updates old a batch's weights may be. Only 1: one collection runs beside each
        update, on the step's one set of envs, and the generator takes the new weights between collections;
        more would need a set of envs and a weight version per collection in flight.""",
    )

    output_dir: str = option("runs", "Where the run directory goes.", section="output")
    run_name: str = option("", "The run directory's name (default: the env and a timestamp).")
    save_every: int = option(0, "Checkpoint every N steps (0: only at the end).")
    eval_every: int = option(5, "Evaluate on the held-out tasks every N steps, step 0 included (0: never).")
    log_with: str = option(
        "tensorboard",
        "accelerate's tracker (metrics.jsonl is always written).",
        choices=("tensorboard", "wandb", "trackio", "none"),
    )
    resume: str = option(
        "", "A run directory (or one of its checkpoints) to continue exactly where it stopped."
    )
    overwrite: bool = option(
        False,
        """Start afresh in a run directory that holds an earlier run (a --run_name used before): that run's
        metrics, trajectories, checkpoints, model, curve and logs are deleted first; other files stay. Without
        it (or --resume) such a run is refused, so that two runs never mix.""",
    )

    def __post_init__(self) -> None:
        """What was left to the loss (None) takes the loss's own default (an unknown loss: validate says
        so)."""
        own = LOSS_DEFAULTS.get(self.loss)
        for name in ("eps_low", "eps_high", "advantage_scale"):
            if own is not None and getattr(self, name) is None:
                setattr(self, name, getattr(own, name))


TRL_ALIASES = {
    "num_generations": "group_size",
    "num_iterations": "updates_per_batch",
    "loss_type": "loss",
    "epsilon": "eps_low",
    "epsilon_high": "eps_high",
    "scale_rewards": "advantage_scale",
    "mask_truncated_completions": "mask_truncated",
    "vllm_importance_sampling_cap": "tis_cap",
    "lr_scheduler_type": "lr_schedule",
    "save_steps": "save_every",
    "report_to": "log_with",
    "vllm_server_base_url": "base_url",
}
"""TRL ``GRPOConfig`` names accepted as flags (and config keys) for the knob of the same meaning here, by
its field name (the values each takes are this trainer's: ``--loss_type bnpo`` is refused with the known
losses). The same names TRL has (``--learning_rate``, ``--beta``, ``--temperature``...) need none."""
_BATCH = (
    "a step's batch is --tasks_per_step groups of --group_size episodes each, trained in micro-batches of at "
    "most --max_tokens_per_microbatch tokens whose gradients accumulate"
)
TRL_HINTS = {
    "max_completion_length": "a turn samples at most --max_new_tokens tokens, and a whole trajectory "
    "(prompt, turns, tool results) holds at most --max_model_len",
    "max_prompt_length": "a whole trajectory, prompt included, holds at most --max_model_len tokens",
    "per_device_train_batch_size": _BATCH,
    "gradient_accumulation_steps": _BATCH,
    "steps_per_generation": "each step collects a fresh batch, and takes --updates_per_batch optimizer steps "
    "on it",
    "max_steps": "--steps (optimisation steps, each on a freshly collected batch)",
    "num_train_epochs": "--steps (optimisation steps, each on a freshly collected batch)",
    "use_vllm": "--generator vllm (in-process) or --generator vllm-server (a server at --base_url)",
    "vllm_mode": "--generator vllm (colocate: in-process) or --generator vllm-server (server, at --base_url)",
    "bf16": "--mixed_precision bf16",
    "fp16": "--mixed_precision fp16",
    "importance_sampling_level": "--loss gspo (sequence-level ratios)",
    "logging_steps": "every step is logged (metrics.jsonl, and the tracker of --log_with)",
    "eval_steps": "--eval_every",
    "eval_strategy": "--eval_every",
    "save_strategy": "--save_every",
    "resume_from_checkpoint": "--resume",
    "top_k": "sampling takes --temperature and --top_p only",
    "min_p": "sampling takes --temperature and --top_p only",
    "repetition_penalty": "sampling takes --temperature and --top_p only",
    "num_generations_eval": "--eval_holdout or --eval_task_ids (one sample per held-out task)",
    "reward_funcs": 'the env grades: --env_kwargs \'{"reward": "fraction"}\' for the share of tests passed',
}
"""TRL ``GRPOConfig`` names of knobs this trainer has otherwise (or not at all): what to use instead."""


def trl_names(field_name: str) -> list[str]:
    """The TRL names accepted for a field (`TRL_ALIASES`)."""
    return [trl for trl, name in TRL_ALIASES.items() if name == field_name]


class _Parser(argparse.ArgumentParser):
    """argparse, whose errors (a flag without its value, a number that is not one) are ConfigErrors: one
    line and exit 2 from grpo.py, like every other refusal."""

    def error(self, message: str) -> Any:  # argparse's NoReturn, which it never relies on
        raise ConfigError(message)


def flag_of(item: dataclasses.Field) -> str:
    return item.metadata["flag"] or f"--{item.name}"


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``Args``: its sections as argument groups, each field's documented flag with its
    help, choices and default, and the field's other spellings (dashed, the field's own name) as hidden
    aliases of it."""
    parser = _Parser(
        prog="grpo.py",
        usage="%(prog)s [--config FILE] [--flag VALUE ...]",
        description="Multi-turn GRPO on gym_swe envs, token-exact, on accelerate. The formulas are in the "
        "docstring of trainers/grpo.py.",
        allow_abbrev=False,
    )
    parser.add_argument("--config", metavar="FILE", help="A YAML file of flags (its keys: the names below, "
                        "without --); flags given here win over it.")  # fmt: skip
    group: Any = parser
    for item in dataclasses.fields(Args):
        if item.metadata["section"]:
            group = parser.add_argument_group(item.metadata["section"])
        flag, kind = flag_of(item), item.metadata["kind"]
        typed: dict[str, Any] = {"type": kind, "metavar": {int: "N", float: "X"}.get(kind)}
        if kind is bool:  # --lora alone turns it on; --lora false (or a YAML false) turns it off
            typed = {"type": _boolean, "nargs": "?", "const": True, "metavar": "true|false"}
        elif item.metadata["choices"]:
            shown = [choice for choice in item.metadata["choices"] if choice]
            typed["metavar"] = "{" + ",".join(shown) + "}"
        text = item.metadata["help"]
        if not (item.default is None or item.default is False or item.default == ""):  # None: help says
            text += f" (default: {item.default})"
        trl = trl_names(item.name)
        if trl:
            text += " TRL's name: " + ", ".join(f"--{name}" for name in trl) + "."
        group.add_argument(flag, dest=item.name, default=item.default, help=text.replace("%", "%%"), **typed)
        names = (flag[2:], item.name, *trl)
        others = sorted({spelling for name in names for spelling in spellings(name)} - {flag})
        if others:
            group.add_argument(
                *others, dest=item.name, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **typed
            )
    return parser


def spellings(name: str) -> list[str]:
    """``max_turns`` -> ``--max_turns`` and ``--max-turns``."""
    return sorted({f"--{name}", f"--{name.replace('_', '-')}"})


def _boolean(value: str) -> bool:
    if value.lower() in ("true", "yes", "y", "1"):
        return True
    if value.lower() in ("false", "no", "n", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{value!r} is not true or false")


def command_line(argv: Sequence[str] | None = None) -> Args:
    """``python trainers/grpo.py``'s command line, parsed and checked (`parse_args`) before the trainer
    imports torch, and the packages the setting needs looked up (`check_packages`): ``--help`` prints and
    exits 0, a refusal is one line on stderr and exit status 2."""
    try:
        args = parse_args(argv)
        check_packages(args)
        return args
    except (ConfigError, MissingDependencyError) as error:
        print(f"grpo.py: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """``--config run.yaml`` (its keys are the flags' names) then flags, which win; checked by validate."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    config_only = _Parser(add_help=False, allow_abbrev=False)
    config_only.add_argument("--config")
    config_path = config_only.parse_known_args(argv)[0].config
    if config_path:
        parser.set_defaults(**read_config(Path(config_path)))
    namespace, unused = parser.parse_known_args(argv)
    if unused:  # one line naming the nearest flag
        flag = next((word for word in unused if word.startswith("-")), unused[0])
        if not flag.startswith("-"):
            raise ConfigError(f"unexpected argument {flag!r}: every value follows its --flag")
        name = flag.partition("=")[0]
        hint = TRL_HINTS.get(name.lstrip("-").replace("-", "_"))
        if hint is not None:
            raise ConfigError(f"{name} is TRL's GRPOConfig knob; here: {hint}. See --help.")
        known = ["--config", *(flag_of(item) for item in dataclasses.fields(Args))]
        raise ConfigError(unknown_name("flag", name, known) + " See --help.")
    del namespace.config
    args = Args(**vars(namespace))
    validate(args)
    return args


def read_config(path: Path) -> dict[str, Any]:
    """A ``--config`` file's values by field name; a key may be spelt as its flag is (``max-turns``,
    ``async``) or as TRL names it (``num_generations``). A file YAML cannot read is one line saying where."""
    try:
        import yaml
    except ImportError:
        raise missing_dependency("pyyaml", "train", feature="--config") from None

    names = {}
    for item in dataclasses.fields(Args):
        for name in (item.name, flag_of(item)[2:], *trl_names(item.name)):
            names.update({spelling[2:]: item.name for spelling in spellings(name)})
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except OSError as error:
        raise ConfigError(f"--config {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"--config {path}: not YAML: {_yaml_problem(error)}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"--config {path}: not a mapping of flag names to values")
    for key in config:
        if str(key) in TRL_HINTS:
            raise ConfigError(
                f"--config {path}: {key!r} is TRL's GRPOConfig knob; here: {TRL_HINTS[str(key)]}"
            )
        if key not in names:
            flags = [flag_of(item)[2:] for item in dataclasses.fields(Args)]
            raise ConfigError(f"--config {path}: " + unknown_name("key", key, flags))
    return {names[key]: value for key, value in config.items()}


def _yaml_problem(error: Exception) -> str:
    """A YAML error on one line: what is wrong and where (line and column from 1), without the excerpt."""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def validate(args: Args) -> None:
    """Refuse what cannot work, and knobs that would do nothing in the chosen setting, saying why."""
    default = Args()

    def changed(name: str) -> bool:
        return getattr(args, name) != getattr(default, name)

    server = args.generator == "vllm-server"
    if args.generator == "openai-chat":  # a known generator, but not one to train with: say why
        raise ConfigError(
            "--generator openai-chat returns chat messages, not token ids: nothing to train on (its "
            "trajectories are for evaluation and SFT data: gym-swe eval --generator openai-chat, with or "
            "without --harness); train with hf, vllm or vllm-server"
        )
    for item in dataclasses.fields(Args):
        allowed, value = item.metadata["choices"], getattr(args, item.name)
        if allowed and value is not None and value not in allowed:  # None: left to an unknown --loss
            raise ConfigError(unknown_name(item.name, value, allowed))
    problems = [
        (not args.model, "--model is required: a model directory or a Hugging Face id"),
        (args.group_size < 2, f"--group_size must be >= 2: a group of {args.group_size} has no baseline"),
        (
            min(args.steps, args.tasks_per_step, args.updates_per_batch) < 1,
            "--steps, --tasks_per_step and --updates_per_batch must be >= 1",
        ),
        (server and not args.base_url, "--generator vllm-server needs --base_url (the server's address)"),
        (
            not server and (changed("base_url") or changed("weights_dir")),
            "--base_url and --weights_dir are for --generator vllm-server; they would do nothing here",
        ),
        (
            args.generator != "hf" and changed("generation_batch_size"),
            "--generation_batch_size is for --generator hf; vLLM batches by itself",
        ),
        (not args.lora and (changed("lora_r") or changed("lora_alpha")), "--lora_r/--lora_alpha need --lora"),
        (not args.ray_address and changed("ray_resources"), "--ray_resources needs --ray_address"),
        (
            bool(args.env_url and (args.ray_address or args.harness)),
            "--env_url plays served envs: it does not take --ray_address or --harness",
        ),
        (
            bool(args.env_url)
            and any(changed(name) for name in ("env", "tasks", "sandbox", "max_turns", "env_kwargs")),
            "with --env_url the server's env and kwargs are the run's (gym-swe serve ENV KEY=VALUE...): "
            "--env, --tasks, --sandbox, --max_turns and --env_kwargs would do nothing",
        ),
        (
            bool(args.harness and args.ray_address),
            "--harness runs its agents beside the proxy on this host: it does not take --ray_address",
        ),
        (
            not args.dynamic_sampling and changed("max_resample_rounds"),
            "--max_resample_rounds needs --dynamic_sampling",
        ),
        (not args.async_mode and changed("max_staleness"), "--max_staleness needs --async"),
        (args.vllm_sleep and args.generator != "vllm", "--vllm_sleep is for --generator vllm (in-process)"),
        (
            args.async_mode and args.generator == "hf",
            "--async needs a generator with weights of its own (vllm, "
            "vllm-server): hf shares the trainer's model, which would change under the episodes it collects",
        ),
        (args.max_staleness != 1, "--max_staleness: only 1 (one step off) is supported"),
        (not (0 <= args.eps_low <= 1 and args.eps_high >= 0), "--eps_low must be in [0, 1], --eps_high >= 0"),
        (args.max_turns is not None and args.max_turns < 1, "--max_turns must be >= 1"),
        (args.max_scored_per_microbatch < 0, "--max_scored_per_microbatch must be 0 (no limit) or more"),
        (0 < args.tis_cap < 1, "--tis_cap must be 0 (off) or >= 1"),
        (0 < args.geo_mask_threshold <= 1, "--geo_mask_threshold must be 0 (off) or > 1"),
        (
            args.eval_every > 0 and args.eval_holdout == 0 and not args.eval_task_ids,
            "--eval_every needs tasks to evaluate: --eval_holdout N or --eval_task_ids",
        ),
        (
            bool(args.eval_task_ids) and changed("eval_holdout"),
            "give --eval_task_ids or --eval_holdout, not both",
        ),
        (
            args.eval_every == 0 and (changed("eval_holdout") or bool(args.eval_task_ids)),
            "--eval_holdout and --eval_task_ids need --eval_every N: without it nothing is evaluated",
        ),
        (
            args.warmup_steps >= args.steps > 0 and args.warmup_steps > 0,
            "--warmup_steps must be below --steps",
        ),
    ]
    for bad, why in problems:
        if bad:
            raise ConfigError(why)
    if args.resume and args.overwrite:
        raise ConfigError("give --resume (continue a run) or --overwrite (start it afresh), not both")
    if not args.env_url:
        check_env(args.env)
    elif not args.env_url.startswith(("http://", "https://", "ws://", "wss://")):
        raise ConfigError(f"--env_url is the server's address, http://host:port; got {args.env_url!r}")
    if args.harness:  # installed (an npm harness), before anything loads
        from gym_swe.integrations.harnesses.collector import check_harness_ready

        check_harness_ready(args.harness)
    check_model_name("--model", args.model)  # a missing directory, before anything loads
    check_model_name("--tokenizer", args.tokenizer)
    if args.vllm_sleep:
        from gym_swe.rollout.generators.vllm_local import sleep_mode_refusal

        if (reason := sleep_mode_refusal()) is not None:
            raise ConfigError(f"--vllm_sleep cannot work here: {reason}")


def check_packages(args: Args) -> None:
    """The packages the run needs, each looked up without importing it: a missing one is one line with the
    command that installs it, before anything loads (not a traceback after the model did)."""

    def absent(module: str) -> bool:
        return importlib.util.find_spec(module) is None

    if absent("torch"):
        raise missing_dependency("torch", "train", feature="The trainer")
    if absent("transformers"):
        raise missing_dependency("transformers", "train", feature="The trainer")
    if absent("accelerate"):
        raise missing_dependency("accelerate", "train", feature="The trainer")
    if absent("matplotlib"):
        raise missing_dependency("matplotlib", "train", feature="The trainer's reward.png")
    if args.lora and absent("peft"):
        raise missing_dependency("peft", "train", feature="--lora")
    if args.generator == "vllm" and absent("vllm"):
        raise missing_dependency("vllm", "vllm", feature="--generator vllm")
    if args.log_with == "tensorboard" and absent("tensorboard"):
        raise missing_dependency("tensorboard", "train", feature="--log_with tensorboard")
    if args.sandbox == "docker" and not args.env_url and absent("docker"):
        raise missing_dependency("docker", "docker", feature="--sandbox docker")
    if args.ray_address and absent("ray"):
        raise missing_dependency("ray", "ray", feature="--ray_address")
    if args.env_url and absent("websockets"):
        raise missing_dependency("websockets", "serve-client", feature="--env_url")
    if args.log_with in ("wandb", "trackio") and absent(args.log_with):
        raise MissingDependencyError(
            f"--log_with {args.log_with} needs the Python package {args.log_with!r}, which is not installed. "
            f"Install it with: pip install {args.log_with} (or --log_with tensorboard or none)"
        )


def check_env(env_id: str) -> None:
    """--env must be a registered id (``module:EnvId``: a module that registers it, imported here), found
    before the model loads and before the run directory is made."""
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ConfigError(f"--env {env_id!r}: cannot import {module!r}: {error}") from None
    if name not in gymnasium.registry:
        ours = [env for env in gymnasium.registry if env in ("CodeDebug-v0", "SWEGym-v0")]
        message = unknown_name("env", name, ours if not module else gymnasium.registry)
        raise ConfigError(f"--env: {message} Your own env: module:EnvId, the module registering EnvId.")
