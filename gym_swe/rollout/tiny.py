"""Tiny randomly initialised models over real tokenizers: for tests, benchmarks, examples and laptops.

Their weights are random, so what they write is noise, but each has a real tokenizer and chat template, real
token ids and real log-probabilities: everything between a model and an env can be exercised with one, on a
CPU, with transformers and with vLLM (head_dim 32, what vLLM's CPU attention needs at least).

Where no tokenizer is at hand (no hub, no local copy), `make_tiny_tokenizer` trains a small byte-level BPE on
gym_swe's own source and gives it a ChatML chat template with tool calls in the Hermes format.

The recipes, one place for all their users:

- `make_tiny_tokenizer`, `make_tiny_model`: build one into the directory given (a Llama, or a Qwen2);
- `make_tiny_bpe_tokenizer`, `make_tiny_bpe_model`: the tiny tokenizer, and the tiny model over it, built once
  in a models directory (`built_once`: safe when several processes want it at once);
- `make_tiny_trl_model`: the same with TRL's Qwen2.5 chat template, which TRL parses tool calls from;
- `make_tiny_tool_caller`: that model taught to answer each CodeDebug-v0 turn with one bash tool call.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, missing_dependency, unknown_name

CHATML_TEMPLATE = """{%- if tools %}<|im_start|>system
{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}

{% endif %}You can call these tools, each call as <tool_call>{"name": ..., "arguments": {...}}</tool_call>:
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}<|im_end|>
{% elif messages[0]['role'] == 'system' %}<|im_start|>system
{{ messages[0]['content'] }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message['role'] == 'system' %}
{%- elif message['role'] == 'tool' %}<|im_start|>user
<tool_response>
{{ message['content'] }}
</tool_response><|im_end|>
{% elif message['role'] == 'assistant' %}<|im_start|>assistant
{{ message['content'] or '' }}
{%- for call in message.get('tool_calls') or [] %}{% set args = call['function']['arguments'] %}
<tool_call>
{"name": "{{ call['function']['name'] }}", "arguments": {{ args | tojson if args is mapping else args }}}
</tool_call>
{%- endfor %}<|im_end|>
{% else %}<|im_start|>{{ message['role'] }}
{{ message['content'] }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


ARCHITECTURES = ("llama", "qwen2")
"""What `make_tiny_model` builds: a Llama (the default), or a Qwen2 (Llama with biases on q, k and v)."""


# -- build one --------------------------------------------------------------------------------------------
def make_tiny_tokenizer(
    out_dir: str | Path, vocab_size: int = 2048, chat_template: str = CHATML_TEMPLATE
) -> Path:
    """Train a byte-level BPE tokenizer on gym_swe's own source, with ``chat_template``; save it."""
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        raise missing_dependency("transformers", "train") from None
    package = Path(__file__).resolve().parents[1]
    corpus = [path.read_text(encoding="utf-8") for path in sorted(package.rglob("*.py"))]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(corpus, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:],
    )
    tokenizer.chat_template = chat_template
    out = Path(out_dir)
    tokenizer.save_pretrained(out)
    return out


def make_tiny_model(
    tokenizer_path: str | Path,
    out_dir: str | Path,
    seed: int = 0,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 2,
    architecture: str = "llama",
) -> Path:
    """Write a tiny model of ``architecture`` (see `ARCHITECTURES`) with the tokenizer at ``tokenizer_path``
    into ``out_dir``; it stops at the chat template's end of turn."""
    if architecture not in ARCHITECTURES:
        raise ConfigError(unknown_name("tiny model architecture", architecture, ARCHITECTURES))
    try:
        import torch
        from transformers import (
            AutoTokenizer,
            GenerationConfig,
            LlamaConfig,
            LlamaForCausalLM,
            Qwen2Config,
            Qwen2ForCausalLM,
        )
    except ImportError:
        raise missing_dependency("transformers", "train") from None
    from gym_swe.rollout.chat import ChatFormat

    config_class, model_class = {
        "llama": (LlamaConfig, LlamaForCausalLM),
        "qwen2": (Qwen2Config, Qwen2ForCausalLM),
    }[architecture]
    out = Path(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_path))
    eos = ChatFormat(tokenizer).end_of_turn_id()
    config = config_class(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=eos,
        torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = model_class(config)
    model.generation_config = GenerationConfig(eos_token_id=eos, bos_token_id=tokenizer.bos_token_id)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


# -- built once in a models directory, reused after --------------------------------------------------------
def built_once(out: str | Path, build: Callable[[Path], object], done: str = "config.json") -> Path:
    """``out``, built by ``build(folder)`` unless ``out/done`` exists. Processes that want the same model at
    once (test workers, ranks of a run) take turns on a lock beside it, so it is built once; the build goes to
    a scratch folder renamed into place at the end, so that a build killed half-way leaves nothing that looks
    done."""
    out = Path(out)
    if (out / done).exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (out / done).exists():
            return out  # another process built it while this one waited
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        try:
            build(scratch)
            shutil.rmtree(out, ignore_errors=True)  # a half-built folder of an older, unlocked build
            os.rename(scratch, out)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return out


def make_tiny_bpe_tokenizer(models_dir: str | Path) -> Path:
    """`make_tiny_tokenizer` with gym_swe's ChatML template, built once in ``models_dir`` as
    ``tiny-bpe-tokenizer/``; its path."""
    return built_once(Path(models_dir) / "tiny-bpe-tokenizer", make_tiny_tokenizer, done="tokenizer.json")


def make_tiny_bpe_model(models_dir: str | Path) -> Path:
    """The tiny Llama over the tiny BPE tokenizer with gym_swe's ChatML template (a 2,048-token vocabulary:
    quick on a CPU, and a vowel is a likely token). Built once in ``models_dir``, as ``tiny-bpe-tokenizer/``
    and ``tiny-bpe/``; the model's path."""
    return _model_over_tiny_tokenizer(Path(models_dir), "tiny-bpe", CHATML_TEMPLATE)


def make_tiny_trl_model(models_dir: str | Path) -> Path:
    """`make_tiny_bpe_model` with TRL's Qwen2.5 chat template instead (a ChatML template TRL can parse tool
    calls from), for TRL's trainers. Built once in ``models_dir``, as ``tiny-bpe-trl-tokenizer/`` and
    ``tiny-bpe-trl/``; the model's path."""
    try:
        from trl.chat_template_utils import qwen2_5_chat_template
    except ImportError:
        raise missing_dependency("trl", "trl") from None
    return _model_over_tiny_tokenizer(Path(models_dir), "tiny-bpe-trl", qwen2_5_chat_template)


def _model_over_tiny_tokenizer(models_dir: Path, name: str, chat_template: str) -> Path:
    tokenizer = built_once(
        models_dir / f"{name}-tokenizer",
        lambda folder: make_tiny_tokenizer(folder, chat_template=chat_template),
        done="tokenizer.json",
    )
    return built_once(models_dir / name, lambda folder: make_tiny_model(tokenizer, folder))


# -- taught one reply --------------------------------------------------------------------------------------
TOOL_CALL_COMMAND = "python test_solution.py"
TOOL_CALL_REPLY = (
    '<tool_call>\n{"name": "bash", "arguments": {"command": "' + TOOL_CALL_COMMAND + '"}}\n</tool_call>'
)
TOOL_CALLER_TASKS = 12
"""How many bundled CodeDebug-v0 tasks `make_tiny_tool_caller` learns from (passing and failing tests)."""
TOOL_CALLER_REPLIES = 4
"""Replies per taught episode: 3 turns, and the reply TRL samples after the last tool result (its loop
samples after every tool result, up to ``max_tool_calling_iterations``)."""


def make_tiny_tool_caller(
    models_dir: str | Path, steps: int = 1000, seed: int = 0, other_tools: Sequence[Sequence[Any]] = ()
) -> Path:
    """`make_tiny_trl_model`'s model taught to answer every turn of a CodeDebug-v0 episode with one bash tool
    call (`TOOL_CALL_REPLY`, Hermes format: both TRL's parser and gym_swe's read it), so that episodes last
    ``max_turns`` env steps on both sides of a comparison.

    It learns whole episodes of `TOOL_CALLER_REPLIES` replies on the first `TOOL_CALLER_TASKS` bundled tasks
    with a wrong-output bug, each reply followed by what the env really returns for the call ("All tests
    passed." or the task's traceback), in each conversation it is to meet: the prompt rendered with the env's
    tool schemas (gym_swe's collector), and with each tool list of ``other_tools`` (as ``apply_chat_template``
    takes ``tools=``: TRL renders its environment class's methods, `gym_swe.integrations.trl.trl_tools`).
    Between replies come the chat template's tool turn and generation prompt, the ids both sides append to
    the sampled ones (TRL's tool suffix, gym_swe's bridge).

    Fine-tuned once (``steps`` AdamW steps: several CPU-minutes for the default 1,000, so `make test` builds
    it in its set-up, beside the images, and the tests find it) and kept in ``models_dir`` under the digest
    of what it learns (the examples, token for token, and the recipe): playing the examples' episodes takes
    seconds, and a change to the env's prompts, tools or tasks, or to the tokenizer, is a new model.

    At temperature 1 the default's reply is the call about 98.6% of the time on each turn, so nearly every
    episode plays all its turns; 200 steps give about 80%, which leaves a group's rollouts some spread."""
    base = make_tiny_trl_model(models_dir)
    examples = _tool_caller_examples(base, other_tools)
    recipe = {"recipe": 4, "steps": steps, "seed": seed, "examples": examples}
    digest = hashlib.sha256(json.dumps(recipe).encode()).hexdigest()[:12]
    return built_once(
        Path(models_dir) / f"tiny-bpe-trl-tool-caller-{digest}",
        lambda folder: _teach_tool_caller(base, examples, steps, seed, folder),
        done="model.safetensors",
    )


def _tool_caller_examples(
    base: Path, other_tools: Sequence[Sequence[Any]]
) -> list[tuple[list[int], list[int]]]:
    """The tool caller's lessons: (ids, labels) of whole episodes, each reply trained on (labels -100
    elsewhere), played in real CodeDebug-v0 episodes."""
    import gymnasium
    from transformers import AutoTokenizer

    import gym_swe  # noqa: F401  (registers the envs)
    from gym_swe.envs.unwrapped import tool_env
    from gym_swe.rollout.chat import ChatFormat

    tokenizer = AutoTokenizer.from_pretrained(str(base))
    env = gymnasium.make("CodeDebug-v0")
    code_debug = tool_env(env)
    schemas = code_debug.toolbox.schemas()
    chat = ChatFormat(tokenizer, schemas)
    reply = [*tokenizer(TOOL_CALL_REPLY, add_special_tokens=False)["input_ids"], chat.end_of_turn_id()]
    # The call as a structured assistant message: the env step TRL's environment class takes for it.
    arguments = json.dumps({"command": TOOL_CALL_COMMAND})
    call = {"id": "call0", "type": "function", "function": {"name": "bash", "arguments": arguments}}
    action = {"role": "assistant", "content": "", "tool_calls": [call]}
    examples = []
    try:
        # Tasks whose test script ends at once (a looping bug's would run until the tool's timeout).
        quick = [task for task in code_debug.tasks if task.failure_symptoms == "incorrect output"]
        for task in quick[:TOOL_CALLER_TASKS]:
            _, info = env.reset(options={"task_id": task.task_id})
            opening = info["messages"]
            results = [env.step(action)[0] for _ in range(TOOL_CALLER_REPLIES - 1)]
            # The template's tool turn and next generation prompt after each reply: gym_swe's bridge, token
            # for token the suffix TRL appends.
            bridges = [
                chat.bridge_ids({"role": "assistant", "content": TOOL_CALL_REPLY},
                                [{"role": "tool", "content": result}], reply)
                for result in results
            ]  # fmt: skip
            for tools in (schemas, *other_tools):
                prompt = tokenizer.apply_chat_template(
                    opening, tools=list(tools), add_generation_prompt=True, tokenize=False
                )
                ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
                labels = [-100] * len(ids)
                for bridge in bridges:
                    ids, labels = ids + reply + bridge, labels + reply + [-100] * len(bridge)
                examples.append((ids + reply, labels + reply))
    finally:
        env.close()
    return examples


def _teach_tool_caller(
    base: Path, examples: list[tuple[list[int], list[int]]], steps: int, seed: int, out: Path
) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(base))
    torch.manual_seed(seed)
    # One thread: a tiny model's ops are too small to share, and on a busy machine each op's threads wait for
    # one another at every barrier (a 1,000-step teaching took 4 minutes beside other work, 15+ beside a CPU
    # burner, with two threads).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    # No weight decay: it caps the logits, and every token of the reply keeps a chance to go astray.
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    model.train()
    # Shuffled passes over the examples: in a fixed order the last ones would be learnt best.
    passes = -(-steps // len(examples))
    order = [index for _ in range(passes) for index in torch.randperm(len(examples)).tolist()]
    for step in range(steps):
        ids, labels = examples[order[step]]
        # The loss of the model's own (its labels shifted by one), with logits only where a reply token is
        # predicted: the vocabulary projection of the other ~95% of positions was a third of a step's time.
        hidden = model.model(input_ids=torch.tensor([ids])).last_hidden_state[0, :-1]
        targets = torch.tensor(labels[1:])
        scored = targets != -100
        loss = torch.nn.functional.cross_entropy(model.lm_head(hidden[scored]).float(), targets[scored])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    torch.set_num_threads(threads)
    model.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(out)
