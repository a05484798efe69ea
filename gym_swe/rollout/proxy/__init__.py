"""The interception proxy: an OpenAI-compatible endpoint per rollout, so that an agent harness runs unmodified
while gym_swe owns generation and keeps every sampled token id and its log-probability.

- `server`: the HTTP server (aiohttp) and its routes; `ProxyServer`, `RolloutHandle`.
- `recorder`: token-exact recording: render, bridge, or fork a new segment.
- `registry`: the rollouts, their secrets and budgets.
- `batching`: concurrent requests into generator calls.
- `openai_api`: the wire format (requests checked, responses and SSE chunks built).

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
