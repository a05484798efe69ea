"""The wire dialects the proxy speaks, each a thin translation to and from the internal chat representation
(`gym_swe.rollout.proxy.conversation`): its routes, its requests, its answers (whole and streamed), its
errors. Everything else (the bridge, forks, budgets, batching, the record) is the core's, shared.

- `chat_completions`: OpenAI chat completions (mini-swe-agent, Pi, OpenCode).
- `responses`: the OpenAI Responses API (Codex).
- `anthropic_messages`: Anthropic Messages (Claude Code).
- `google_generate`: Google generateContent (Gemini CLI).
"""

from __future__ import annotations

from gym_swe.errors import ConfigError, unknown_name
from gym_swe.rollout.proxy.dialects import anthropic_messages, chat_completions, google_generate, responses
from gym_swe.rollout.proxy.dialects.base import Dialect, Route

DIALECTS: tuple[Dialect, ...] = (
    chat_completions.DIALECT,
    responses.DIALECT,
    anthropic_messages.DIALECT,
    google_generate.DIALECT,
)


def dialect_named(name: str) -> Dialect:
    for dialect in DIALECTS:
        if dialect.name == name:
            return dialect
    raise ConfigError(unknown_name("wire dialect", name, [d.name for d in DIALECTS]))


__all__ = ["DIALECTS", "Dialect", "Route", "dialect_named"]
