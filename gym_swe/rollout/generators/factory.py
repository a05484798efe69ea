"""`make_generator`: the one place where a user's options become a generator, with the checks every caller
needs made once, before anything loads: a kind that exists, the options it cannot do without, a model or
tokenizer name that can be loaded, a server that answers. ``gym-swe eval`` and the trainer call it with
their flags as given; a library user calls it with keyword arguments.

Which options each kind uses (one a kind has no use for is not passed to it, so a command line can hand
over every option its user set, whichever kind was picked):

=============== ========================================================================================
``hf``          model (a name, or the trainer's ``trainer_model`` object: generated with as it is, nothing
                to sync), tokenizer, batch_size
``vllm``        model, tokenizer, max_model_len, sleep_mode, seed (the engine's), eager
``vllm-server`` base_url, model (the served name), tokenizer, api_key, weights_dir
``openai-chat`` base_url, model, api_key
=============== ========================================================================================

Anything else (``device=``, ``concurrency=``, ``dtype=``, ...) goes to the kind's class as it is, and one
it does not take is refused with the nearest name.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gym_swe.errors import ConfigError, missing_dependency, unknown_name
from gym_swe.rollout.generators.base import Generator
from gym_swe.rollout.generators.model_names import check_model_name, loading

GENERATORS = {
    "hf": "gym_swe.rollout.generators.hf:HFGenerator",
    "vllm": "gym_swe.rollout.generators.vllm_local:VLLMGenerator",
    "vllm-server": "gym_swe.rollout.generators.vllm_server:VLLMServerGenerator",
    "openai-chat": "gym_swe.rollout.generators.openai_chat:OpenAIChatGenerator",
}
"""Each kind's class, by qualified name: importing this module imports no backend."""
NEEDS = {
    "hf": ("model",),
    "vllm": ("model",),
    "vllm-server": ("base_url", "model", "tokenizer"),
    "openai-chat": ("base_url", "model"),
}
"""The options each kind cannot do without."""
NEED_HINTS = {
    "base_url": "the server's address",
    "model": "a model directory or Hugging Face id; for a server, the served name",
    "tokenizer": "the model's tokenizer",
}
LOADS_ITS_MODEL = ("hf", "vllm")
"""The kinds that load ``model`` here (the others only name it to a server)."""
SERVER_KINDS = ("vllm-server", "openai-chat")
"""The kinds that generate on a server at ``base_url``, which `check_server` asks before a run starts."""
PROBE_PATH = "/v1/models"
"""What a server must answer before a run starts (an OpenAI-compatible server's model list)."""
PROBE_TIMEOUT = 30.0


def make_generator(
    kind: str,
    *,
    model: Any = None,
    tokenizer: Any = None,
    base_url: str | None = None,
    api_key: str | None = None,
    max_model_len: int | None = None,
    sleep_mode: bool = False,
    seed: int | None = None,
    eager: bool = False,
    weights_dir: str | None = None,
    batch_size: int | None = None,
    trainer_model: Any = None,
    flags: Callable[[str], str] | None = None,
    **backend_options: Any,
) -> Generator:
    """A generator of ``kind`` ("hf", "vllm", "vllm-server", "openai-chat"), e.g.
    ``make_generator("hf", model="path")`` or ``make_generator("vllm-server", base_url=..., model=...,
    tokenizer=...)``.

    Args:
        model: a model directory or Hugging Face id (a server's: the served name); ``hf`` also takes a
            model object.
        tokenizer: a tokenizer or its name (default: the model's, for the kinds that load the model).
        base_url: the server (``vllm-server``, ``openai-chat``), which must answer before anything else
            happens (`check_server`).
        api_key: the server's bearer token (``openai-chat`` defaults to ``OPENAI_API_KEY``).
        max_model_len: the in-process engine's context length (``vllm``).
        sleep_mode: make the engine with vLLM's sleep mode (``vllm``; CUDA and ROCm only).
        seed: the engine's seed (``vllm``); requests are seeded one by one, see `Generator.generate`.
        eager: run the engine without CUDA graphs or compilation (vLLM's ``enforce_eager``): on CPU there
            is nothing to capture, and no compilation to wait for.
        weights_dir: where ``sync_weights`` leaves weights for a ``vllm-server`` to reload.
        batch_size: prompts per ``generate`` call of ``hf``.
        trainer_model: the trainer's own model object: ``hf`` generates with it (no copy, nothing to
            sync); the other kinds load ``model``.
        flags: how the caller's user spells each option, for messages (``lambda option: "--" + option``);
            None: as the arguments of this function.

    Bad options fail with one line (a `ConfigError`), before a model loads where they can be told
    beforehand: an unknown kind (with the nearest), a missing option, a model or tokenizer name that is
    no directory nor a Hugging Face id, a server that does not answer; a model that then cannot be
    loaded is one line too."""
    if kind not in GENERATORS:
        raise ConfigError(unknown_name("generator", kind, GENERATORS))
    shares_model = kind == "hf" and trainer_model is not None
    loads_model = kind in LOADS_ITS_MODEL and not shares_model
    arguments = {
        "hf": {"model": trainer_model if shares_model else model, "tokenizer": tokenizer,
               "batch_size": batch_size},
        "vllm": {"model": model, "tokenizer": tokenizer, "max_model_len": max_model_len,
                 "sleep_mode": sleep_mode, "seed": seed, "enforce_eager": eager or None},
        "vllm-server": {"base_url": base_url, "model": model, "tokenizer": tokenizer, "api_key": api_key,
                        "weights_dir": weights_dir},
        "openai-chat": {"base_url": base_url, "model": model, "api_key": api_key},
    }[kind]  # fmt: skip
    arguments = {option: value for option, value in arguments.items() if _given(value)}
    missing = [option for option in NEEDS[kind] if option not in arguments]
    if missing:
        raise ConfigError(_needs(kind, missing, flags))
    backend = _backend(kind)
    _check_backend_options(kind, backend, backend_options)

    name = flags or (lambda option: option)
    # A tokenizer that is the model's own name (gym-swe eval's default) is spoken of as the model.
    tokenizer = arguments.get("tokenizer")
    tokenizer_option = name("model" if tokenizer is model else "tokenizer")
    if loads_model and isinstance(model, (str, Path)):
        check_model_name(name("model"), model)
    if isinstance(tokenizer, (str, Path)):
        check_model_name(tokenizer_option, tokenizer)
    if kind in SERVER_KINDS:
        check_server(kind, str(base_url), api_key, str(model), name)
    if isinstance(tokenizer, (str, Path)):
        with loading(tokenizer_option, tokenizer):
            arguments["tokenizer"] = _load_tokenizer(tokenizer)
    named = loads_model and isinstance(model, (str, Path))
    with loading(name("model"), model) if named else contextlib.nullcontext():
        generator: Generator = backend(**{**arguments, **backend_options})
    return generator


def _given(value: Any) -> bool:
    """An option counts as given unless it is None or an empty string (a command line's unset flag)."""
    return value is not None and not (isinstance(value, str) and not value)


def _needs(kind: str, missing: list[str], flags: Callable[[str], str] | None) -> str:
    """What a ``kind`` generator lacks, said to a command line's user (``flags``) or to a caller."""
    if flags is not None:
        lacking = ", ".join(f"{flags(option)} ({NEED_HINTS[option]})" for option in missing)
        return f"{flags('generator')} {kind} needs {lacking}"
    call = ", ".join(f"{option}=..." for option in NEEDS[kind])
    return f"generator {kind!r} needs {', '.join(missing)}: make_generator({kind!r}, {call})"


def check_server(
    kind: str,
    base_url: str,
    api_key: str | None,
    model: str,
    flags: Callable[[str], str] | None = None,
) -> None:
    """Fail now, in one line, rather than after a run of failed episodes: no server answers at ``base_url``
    (either kind); a ``vllm-server`` that does not list its models or serves none named ``model`` (its names
    are listed); an ``openai-chat`` endpoint that refuses the key. An endpoint without a model list is
    trusted (not every hosted one has it). ``flags``: how the caller's user spells each option."""
    from gym_swe.rollout.generators.http import HTTPClient, NoAnswer, server_root

    name = flags or (lambda option: option)
    where = f"{name('base_url')} {base_url}"
    key = api_key or (os.environ.get("OPENAI_API_KEY") if kind == "openai-chat" else None)
    client = HTTPClient(server_root(base_url), api_key=key, timeout=PROBE_TIMEOUT, concurrency=1)
    try:
        response = client.get(PROBE_PATH, retry=False)
    except NoAnswer as error:
        server = "vLLM server" if kind == "vllm-server" else "server"
        raise ConfigError(f"{where}: no {server} answers there ({error.reason})") from None
    finally:
        client.close()
    if kind == "openai-chat":
        if response.status_code in (401, 403):
            raise ConfigError(
                f"{where} refused the API key (HTTP {response.status_code} at {PROBE_PATH}): give "
                f"{name('api_key')} (or set OPENAI_API_KEY)"
            )
        return
    if response.is_error:
        raise ConfigError(
            f"{where}: no vLLM server answers there (HTTP {response.status_code} at {PROBE_PATH})"
        )
    served = served_models(response)
    if served is not None and model not in served:
        listed = ", ".join(repr(one) for one in served[:10]) or "none"
        raise ConfigError(
            f"{name('model')} {model!r}: the server at {base_url} serves no model of that name; it serves "
            f"{listed} (a server's name is its --served-model-name, else the path it loaded)"
        )


def served_models(response: Any) -> list[str] | None:
    """The model names in a ``/v1/models`` answer, or None where it cannot be read as one."""
    try:
        data = response.json()["data"]
        return [str(entry["id"]) for entry in data]
    except (ValueError, KeyError, TypeError):
        return None


def _load_tokenizer(name: str | Path) -> Any:
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise missing_dependency("transformers", "train") from None
    return AutoTokenizer.from_pretrained(str(name))


def _backend(kind: str) -> Any:
    module, _, attribute = GENERATORS[kind].partition(":")
    return getattr(importlib.import_module(module), attribute)


def _check_backend_options(kind: str, backend: Any, options: dict[str, Any]) -> None:
    """Options beyond the common ones must be the backend's own (any for a backend taking ``**kwargs``)."""
    parameters = inspect.signature(backend).parameters.values()
    if any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
        return
    known = [parameter.name for parameter in parameters]
    for option in options:
        if option not in known:
            raise ConfigError(f"make_generator({kind!r}): " + unknown_name("option", option, known))
