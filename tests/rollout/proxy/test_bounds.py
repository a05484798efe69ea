"""The proxy's bounds hold on every dialect's routes, each refusal in that dialect's error shape: a body over
max_body_bytes (413), a compressed body (415), a wrong secret (401), an unknown rollout (404), a body that is
not JSON (400). Over the wire, as a client that does not play by the rules sends them."""

from __future__ import annotations

import gzip
import json

import pytest

from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.proxy import ProxyServer
from tests.rollout.proxy.harness import TASK, default_tokenizer, script
from tests.rollout.test_proxy import RecordingGenerator

requests = pytest.importorskip("requests")

ROUTES = {  # dialect: (path under the rollout, a valid body, how it presents the secret)
    "chat_completions": ("/v1/chat/completions", {"messages": [{"role": "user", "content": TASK}]}, "bearer"),
    "responses": ("/v1/responses", {"input": TASK}, "bearer"),
    "anthropic_messages": (
        "/v1/messages",
        {"max_tokens": 8, "messages": [{"role": "user", "content": TASK}]},
        "x-api-key",
    ),
    "google_generate": (
        "/v1beta/models/m:generateContent",
        {"contents": [{"parts": [{"text": TASK}]}]},
        "x-goog-api-key",
    ),
}


def headers(how: str, secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"} if how == "bearer" else {how: secret}


SHAPES = {  # where each dialect's SDK reads an error: the keys of its "error" object, and of the body
    "chat_completions": ({"message", "type", "param", "code"}, {"error"}),
    "responses": ({"message", "type", "param", "code"}, {"error"}),
    "anthropic_messages": ({"type", "message"}, {"type", "error"}),
    "google_generate": ({"code", "message", "status"}, {"error"}),
}


@pytest.mark.parametrize("dialect", ROUTES)
def test_every_dialect_keeps_the_proxys_bounds(dialect: str) -> None:
    path, body, how = ROUTES[dialect]
    generator = RecordingGenerator(default_tokenizer(), script(1))
    with ProxyServer(generator, SamplingParams(max_tokens=16), max_body_bytes=64 * 1024) as proxy:
        rollout = proxy.open_rollout("task")
        url, auth = rollout.root_url + path, headers(how, rollout.secret)
        gzipped = {**auth, "Content-Encoding": "gzip"}
        big = json.dumps({**body, "padding": "x" * 100_000}).encode()
        cases = {
            413: requests.post(url, data=big, headers=auth, timeout=30),
            415: requests.post(
                url, data=gzip.compress(json.dumps(body).encode()), headers=gzipped, timeout=30
            ),
            401: requests.post(url, json=body, headers=headers(how, "wrong"), timeout=30),
            404: requests.post(
                url.replace(rollout.id, "feedfacefeedface"), json=body, headers=auth, timeout=30
            ),
            400: requests.post(url, data=b'{"not json', headers=auth, timeout=30),
        }
        error_keys, body_keys = SHAPES[dialect]
        for status, response in cases.items():
            assert response.status_code == status, (status, response.text)
            assert set(response.json()) == body_keys and set(response.json()["error"]) == error_keys, status
            assert response.json()["error"]["message"], status
        assert generator.prompts == []
        assert requests.post(url, json=body, headers=auth, timeout=30).status_code == 200  # still served
        assert len(rollout.finish().turns) == 1
