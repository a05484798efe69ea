"""The tiny-model recipes: each builds what it says, once, and a wrong architecture fails in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_swe.errors import ConfigError
from gym_swe.rollout.tiny import make_tiny_bpe_model, make_tiny_model


def test_an_unknown_architecture_is_one_line_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'lama'\. Did you mean 'llama'\? Known: 'llama', 'qwen2'\."):
        make_tiny_model(tmp_path / "tokenizer", tmp_path / "model", architecture="lama")


def test_the_bpe_model_is_built_once_and_a_qwen2_over_its_tokenizer(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = make_tiny_bpe_model(tmp_path)
    assert model == tmp_path / "tiny-bpe" and (tmp_path / "tiny-bpe-tokenizer" / "tokenizer.json").exists()
    written = (model / "model.safetensors").stat().st_mtime_ns
    assert make_tiny_bpe_model(tmp_path) == model
    assert (model / "model.safetensors").stat().st_mtime_ns == written  # reused, not rebuilt

    tokenizer = AutoTokenizer.from_pretrained(str(model))
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert json.loads((model / "generation_config.json").read_text())["eos_token_id"] == end_of_turn
    chat = [{"role": "user", "content": "hi"}]
    assert "<|im_start|>assistant" in tokenizer.apply_chat_template(
        chat, add_generation_prompt=True, tokenize=False
    )

    qwen2 = make_tiny_model(tmp_path / "tiny-bpe-tokenizer", tmp_path / "qwen2", architecture="qwen2")
    loaded = AutoModelForCausalLM.from_pretrained(str(qwen2))
    assert loaded.config.model_type == "qwen2" and loaded.config.hidden_size == 64
    assert (
        loaded.config.hidden_size // loaded.config.num_attention_heads == 32
    )  # what vLLM's CPU kernels need
    assert AutoModelForCausalLM.from_pretrained(str(model)).config.model_type == "llama"
