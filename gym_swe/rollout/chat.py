"""Token ids from a tokenizer's chat template: the prompt, the bridge between turns, and the re-render check.

A trajectory is one token sequence, built as the model saw it: the prompt ids, then per turn the sampled ids
exactly as generated, then the *bridge*: what the template puts after the assistant's turn (its end-of-turn
tail), around the tool results, and before the next generation (the generation prompt). Sampled text is
never re-tokenized.

The bridge is computed from the template alone, on a fixed stand-in conversation rather than the real
history: render ``[system, user, assistant]`` and ``[system, user, assistant, tool results...]`` with the
generation prompt, and take the ids after the assistant turn's end-of-turn token. Only the assistant
message's tool calls (their names and ids, which some templates echo around the results) and the new
messages are real. So nothing depends on the template being prefix-preserving over the real history (Qwen3
drops earlier think blocks, Mistral moves its tools block, gpt-oss rewrites ``<|return|>``): whether a full
re-render of the messages would give the same ids is reported separately (`rerender_ids`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

# Strings that end an assistant turn in the templates of common model families. The tokenizer's own EOS and
# the model's generation config add theirs.
END_OF_TURN = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end_of_text|>",
    "</s>",
    "<|endoftext|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<end_of_turn>",
    "<｜end▁of▁sentence｜>",
    "<|im_end|>\n",
)
STAND_IN = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]


def stop_token_ids(tokenizer: Any) -> set[int]:
    """Ids that end a generation: the tokenizer's EOS, its generation config's, and known end-of-turn
    tokens that the vocabulary holds as single tokens."""
    ids: set[int] = set()
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    # Only tokens the tokenizer holds as special: "</s>" is plain text in some vocabularies (Qwen's), where
    # stopping at it would cut HTML short.
    special = {
        token.content: index
        for index, token in getattr(tokenizer, "added_tokens_decoder", {}).items()
        if getattr(token, "special", False)
    }
    for text in END_OF_TURN:
        if text in special:
            ids.add(special[text])
    config = getattr(tokenizer, "gym_swe_generation_eos", None)
    if config:
        ids.update(config)
    return ids


def _for_template(message: Mapping[str, Any], arguments_as: str) -> dict[str, Any]:
    """A message as chat templates expect it: content never None, tool-call arguments a dict (most
    templates) or a JSON string (some)."""
    out = dict(message)
    if out.get("content") is None:
        out["content"] = ""
    calls = out.get("tool_calls")
    if calls:
        fixed = []
        for call in calls:
            call = copy.deepcopy(dict(call))
            function = call.setdefault("function", {})
            arguments = function.get("arguments", {})
            if arguments_as == "dict" and isinstance(arguments, str):
                try:
                    function["arguments"] = json.loads(arguments)
                except json.JSONDecodeError:
                    function["arguments"] = {}
            elif arguments_as == "str" and not isinstance(arguments, str):
                function["arguments"] = json.dumps(arguments, ensure_ascii=False)
            fixed.append(call)
        out["tool_calls"] = fixed
    return out


class ChatFormat:
    """A tokenizer's chat template applied to one env's conversations (its tool schemas included)."""

    def __init__(
        self,
        tokenizer: Any,
        tools: Sequence[Mapping[str, Any]] | None = None,
        template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.tools = list(tools) if tools else None
        self.template_kwargs = dict(template_kwargs or {})
        self.stop_ids = stop_token_ids(tokenizer)
        self._arguments_as = "dict"
        self._stand_in_head: list[int] | None = None  # the stand-in conversation's prompt, the same each turn

    def render(self, messages: Sequence[Mapping[str, Any]], add_generation_prompt: bool) -> list[int]:
        """Token ids of ``messages`` under the template."""
        last_error: Exception | None = None
        for arguments_as in (self._arguments_as, "str" if self._arguments_as == "dict" else "dict"):
            prepared = [_for_template(m, arguments_as) for m in messages]
            try:
                ids = self.tokenizer.apply_chat_template(
                    prepared,
                    tools=self.tools,
                    add_generation_prompt=add_generation_prompt,
                    tokenize=True,
                    return_dict=False,
                    **self.template_kwargs,
                )
            except Exception as error:  # a template's own raise_exception, or a type it cannot handle
                last_error = error
                continue
            self._arguments_as = arguments_as
            if isinstance(ids, Mapping):  # some tokenizer versions return a BatchEncoding anyway
                ids = ids["input_ids"]
            return list(ids)
        raise ValueError(f"the chat template cannot render these messages: {last_error}") from last_error

    def prompt_ids(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """The episode's opening: its messages and the generation prompt."""
        return self.render(messages, add_generation_prompt=True)

    def bridge_ids(
        self,
        assistant: Mapping[str, Any],
        new_messages: Sequence[Mapping[str, Any]],
        sampled: Sequence[int],
    ) -> list[int]:
        """Ids that follow the sampled ids of ``assistant``'s turn: the rest of its end-of-turn, the
        ``new_messages`` (tool results, feedback) and the next generation prompt."""
        if self._stand_in_head is None:
            self._stand_in_head = self.render(STAND_IN, add_generation_prompt=True)
        head = self._stand_in_head
        calls = assistant.get("tool_calls")
        # Some templates refuse content beside tool calls (Mistral), others render it as a turn of its own
        # (gpt-oss): a stand-in with calls has no content.
        stand_in = (
            {"role": "assistant", "content": "", "tool_calls": calls}
            if calls
            else {"role": "assistant", "content": "A"}
        )
        extended = self.render([*STAND_IN, stand_in, *new_messages], add_generation_prompt=True)
        start = 0
        while start < min(len(head), len(extended)) and head[start] == extended[start]:
            start += 1
        end = next((i for i in range(start, len(extended)) if extended[i] in self.stop_ids), None)
        if end is None:
            raise ValueError(
                "the chat template's assistant turn has no end-of-turn token this tokenizer knows"
            )
        bridge = extended[end + 1 :]
        if not sampled or sampled[-1] not in self.stop_ids:
            # The turn ended without its end-of-turn token (cut at max_tokens, or the generator omits stop
            # tokens): the template's one comes first.
            bridge = [extended[end], *bridge]
        return bridge

    def end_of_turn_id(self) -> int:
        """The stop token the template ends a plain assistant turn with (what a model emits to stop)."""
        head = self.render(STAND_IN, add_generation_prompt=True)
        full = self.render([*STAND_IN, {"role": "assistant", "content": "A"}], add_generation_prompt=False)
        for token in full[len(head) :]:
            if token in self.stop_ids:
                return token
        raise ValueError("the chat template's assistant turn has no end-of-turn token this tokenizer knows")

    def rerender_ids(
        self, messages: Sequence[Mapping[str, Any]], add_generation_prompt: bool
    ) -> list[int] | None:
        """The ids a full re-render of ``messages`` gives (None when the template cannot render them)."""
        try:
            return self.render(messages, add_generation_prompt=add_generation_prompt)
        except ValueError:
            return None
