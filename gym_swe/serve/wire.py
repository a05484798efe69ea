"""What a served env's action, observation and state are on the wire: typed pydantic models, shared by the
server (which puts them on OpenEnv's own `Action`, `Observation` and `State`) and gym_swe's client (which
needs pydantic, not OpenEnv).

An action is one of three things, as `env.step` and `env.truncate` take them in this process: the model's
text, its assistant message (OpenAI format, with ``tool_calls``), or the end of the episode from outside
(``truncate``: a token budget spent, a generator that failed). An observation carries what ``step`` returns:
the text the model reads, the messages the call added to the chat, the tool schemas (at reset), the reward
and the end flags, and what the info holds. The grade, its reward and the end reason exist only on the call
that ends the episode, as in this process: the server sends nothing the env has not handed out.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

MAX_ACTION_CHARS = 4_000_000
"""Longest action text an env takes (`gym_swe.envs.base.MAX_TEXT`): the model's text, one argument."""
MAX_REASON_CHARS = 200
INFO_FIELDS = (
    "task_id",
    "turn",
    "parse_errors",
    "tool_calls",
    "format_penalty",
    "step_limit",
    "end_reason",
    "grade",
    "reward_grade",
    "error",
)
"""The keys of a gym_swe env's info that an observation carries as fields of their own; any other key (a
user's env may add some) travels in ``extra_info``. ``messages`` and ``tools`` have fields of their own."""


class AssistantMessage(BaseModel):
    """The model's turn as a chat API returns it. Loose on purpose: the env reads it as it reads a dict in
    this process, where a malformed tool call is an observation for the model, not an error."""

    model_config = ConfigDict(extra="allow")

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None


class ActionFields(BaseModel):
    """One turn of the episode, or its end: exactly one of ``text``, ``message``, ``truncate``."""

    text: str | None = Field(
        default=None, max_length=MAX_ACTION_CHARS, description="The model's text, holding its tool calls."
    )
    message: AssistantMessage | None = Field(
        default=None, description="The model's assistant message (OpenAI format) with its tool_calls."
    )
    truncate: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_REASON_CHARS,
        description="End the running episode from outside with this reason; it is graded as at max_turns.",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ActionFields:
        given = [name for name in ("text", "message", "truncate") if getattr(self, name) is not None]
        if len(given) != 1:
            # A custom error, not a ValueError: the validation error goes back to the client as JSON, and an
            # exception object in it would not serialize (OpenEnv would then end the session).
            raise PydanticCustomError(
                "one_action",
                "an action has exactly one of text, message, truncate; it has {given}",
                {"given": ", ".join(given) or "none"},
            )
        return self

    def env_action(self) -> str | dict[str, Any]:
        """What ``env.step`` takes: the text, or the message as the client sent it."""
        if self.message is not None:
            return self.message.model_dump(exclude_unset=True)
        assert self.text is not None
        return self.text


class ObservationFields(BaseModel):
    """What a reset, step or truncate returned. ``done`` and ``reward`` are OpenEnv's own fields (``done``:
    terminated or truncated; ``reward``: the step's, with the grade's on the step that ends the episode, and
    the grade's on a truncate)."""

    text: str = Field(default="", description="The observation the model reads (empty for a truncate).")
    messages: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The messages this call added to the chat (at reset: the opening system and user ones).",
    )
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="The tool schemas (OpenAI function format); at reset only."
    )
    terminated: bool = Field(default=False, description="The episode ended by the agent (submit).")
    truncated: bool = Field(default=False, description="The episode ended by a limit, or from outside.")
    task_id: str | None = None
    turn: int | None = None
    parse_errors: list[str] | None = Field(
        default=None, description="The tool calls of this turn that could not be read (steps only)."
    )
    tool_calls: list[str] | None = Field(default=None, description="The names of the calls this turn made.")
    format_penalty: float | None = None
    step_limit: str | None = Field(
        default=None,
        description="The bound that cut this turn short: max_tool_calls, max_step_seconds or interrupted.",
    )
    end_reason: str | None = Field(default=None, description="How the episode ended; on its last call only.")
    grade: dict[str, Any] | None = Field(
        default=None, description="The per-test outcomes; on the call that ends the episode only."
    )
    reward_grade: float | None = Field(default=None, description="The grade's reward; at the end only.")
    error: str | None = Field(
        default=None, description="What broke, where the env rather than the agent failed."
    )
    extra_info: dict[str, Any] = Field(
        default_factory=dict, description="Info keys of the env beyond the fields above (JSON values)."
    )

    def info(self, chat: list[dict[str, Any]]) -> dict[str, Any]:
        """The info the env returned, with ``messages`` (the whole chat: ``chat``) and ``tools`` (reset)."""
        info = dict(self.extra_info)
        for name in INFO_FIELDS:
            value = getattr(self, name)
            if value is not None:
                info[name] = value
        if self.tools is not None:
            info["tools"] = self.tools
        info["messages"] = chat
        return info


class StateFields(BaseModel):
    """A session's state: which env it serves, and its episode. The episode's grade and reward appear once
    it has ended, never before."""

    env_id: str = Field(default="", description="The env this server serves (its registered id).")
    max_turns: int | None = Field(default=None, description="The env's turn limit.")
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="The env's tool schemas (OpenAI function format)."
    )
    task_id: str | None = Field(default=None, description="The task of the current (or last) episode.")
    running: bool = Field(default=False, description="Whether an episode is running.")
    end_reason: str | None = None
    reward: float | None = Field(default=None, description="The episode's return, once it has ended.")
    grade: dict[str, Any] | None = Field(default=None, description="Its grade, once it has ended.")


def observation_fields(info: dict[str, Any], known_messages: int) -> dict[str, Any]:
    """An env's info as `ObservationFields` keyword arguments: the messages past the first
    ``known_messages``, each known key in its field (None values stay in ``extra_info``: a field that is
    None means the key was absent), every other key in ``extra_info``."""
    fields: dict[str, Any] = {"extra_info": {}}
    for key, value in info.items():
        if key == "messages":
            fields["messages"] = list(value[known_messages:])
        elif key == "tools":
            fields["tools"] = value
        elif key in INFO_FIELDS and value is not None:
            fields[key] = value
        else:
            fields["extra_info"][key] = value
    return fields
