"""The interception proxy: an endpoint per rollout in each wire dialect agent harnesses speak (OpenAI chat
completions, the OpenAI Responses API, Anthropic Messages, Google generateContent), so that a harness runs
unmodified while gym_swe owns generation and keeps every sampled token id and its log-probability.

One core, thin dialects:

- `server`: the HTTP server (aiohttp) and its routes; `ProxyServer`.
- `handle`: `RolloutHandle`, a rollout as its caller holds it (base URLs, secret, `finish`).
- `conversation`: the one internal chat representation (`ChatRequest`, `Answer`) and `RequestError`.
- `dialects`: one module per wire dialect, translating to and from it.
- `recorder`: token-exact recording: render, bridge, or fork a new segment.
- `black_box`: black-box mode, over a chat generator (a hosted model): the turns as messages, no token ids.
- `registry`: the rollouts, their secrets and budgets.
- `batching`: concurrent requests into generator calls.
- `connections`: the bounds on connections, as a server facing untrusted clients.

``ProxyServer`` needs aiohttp (``pip install "gym-swe[proxy]"``); it is imported on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ProxyServer", "RolloutHandle"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from gym_swe.rollout.proxy import server

        return getattr(server, name)
    raise AttributeError(name)
