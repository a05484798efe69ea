"""The server generators' HTTP client (gym_swe.rollout.generators.http) against a real server on loopback
that answers from a script: which answers are retried, how long it waits, the deadline, and requests in
flight at once."""

from __future__ import annotations

import random
import socket

import pytest

from gym_swe.rollout.generators.http import RETRY_STATUSES, HTTPClient, NoAnswer, RetryPolicy
from tests.rollout.scripted_http import Answer, scripted_server

QUICK = RetryPolicy(retries=3, backoff=0.05, max_backoff=1.0, deadline=30.0)


def dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_the_not_now_statuses_are_retried_with_growing_waits() -> None:
    with scripted_server(Answer(503), Answer(429), Answer(502), Answer(200, {"ok": True})) as server:
        client = HTTPClient(server.url, policy=QUICK)
        response = client.post("/v1/x", {"a": 1})
        client.close()
    assert response.status_code == 200 and response.json() == {"ok": True}
    assert server.requests == 4 and server.bodies == [{"a": 1}] * 4
    gaps = [later - earlier for earlier, later in zip(server.times, server.times[1:])]
    for retry, gap in enumerate(gaps):  # each wait is between half and all of 0.05 s doubled per retry
        assert gap >= QUICK.backoff * 2**retry / 2, gaps
    assert {503, 429, 502, 500, 504, 408} == RETRY_STATUSES


@pytest.mark.parametrize("status", [200, 400, 401, 404, 501])
def test_an_answer_is_not_retried(status: int) -> None:
    with scripted_server(Answer(status, {"said": status})) as server:
        client = HTTPClient(server.url, policy=QUICK)
        response = client.get("/v1/models")
        client.close()
    assert response.status_code == status and server.requests == 1


def test_a_server_still_failing_after_the_retries_gives_its_last_answer() -> None:
    with scripted_server(Answer(503, {"error": "overloaded"})) as server:
        client = HTTPClient(server.url, policy=RetryPolicy(retries=2, backoff=0.01))
        response = client.post("/v1/x", {})
        once = client.post("/v1/x", {}, retry=False)  # a weight sync's call runs once
        client.close()
    assert response.status_code == once.status_code == 503 and response.json() == {"error": "overloaded"}
    assert server.requests == 3 + 1


def test_retry_after_is_waited_for() -> None:
    with scripted_server(Answer(429, headers={"Retry-After": "0.4"}), Answer(200)) as server:
        client = HTTPClient(server.url, policy=RetryPolicy(backoff=0.01))
        assert client.get("/").status_code == 200
        client.close()
    assert server.times[1] - server.times[0] >= 0.4


def test_no_answer_is_retried_then_said_in_one_line() -> None:
    url = dead_url()
    client = HTTPClient(url, policy=RetryPolicy(retries=2, backoff=0.01))
    with pytest.raises(NoAnswer) as raised:
        client.post("/v1/completions", {})
    client.close()
    assert raised.value.attempts == 3 and "Connection refused" in raised.value.reason
    assert str(raised.value) == f"no answer from {url} after 3 tries: {raised.value.reason}"


def test_the_deadline_bounds_a_request_its_retries_and_waits() -> None:
    policy = RetryPolicy(retries=20, backoff=0.05, deadline=1.0)
    with scripted_server(Answer(503, delay=0.3)) as server:
        client = HTTPClient(server.url, policy=policy)
        try:
            assert client.get("/").status_code == 503
        except NoAnswer as error:  # the last attempt, cut to what was left, ran out of it
            assert "timed out" in error.reason
        client.close()
    assert 1 <= server.requests < 5  # 21 tries without the deadline (fewer on a loaded machine, never more)
    # One attempt's timeout is cut to the deadline: with the client's own 600 s it would get the 200.
    with scripted_server(Answer(200, delay=3.0)) as server:
        client = HTTPClient(server.url, timeout=600, policy=RetryPolicy(deadline=0.5))
        with pytest.raises(NoAnswer, match="after 1 try"):
            client.get("/")
        client.close()


def test_the_backoff_leaves_the_callers_rng_alone() -> None:
    random.seed(7)
    state = random.getstate()
    with scripted_server(Answer(503), Answer(503), Answer(200)) as server:
        client = HTTPClient(server.url, policy=RetryPolicy(backoff=0.01))
        assert client.get("/").status_code == 200
        client.close()
    assert random.getstate() == state


def test_map_keeps_concurrency_requests_in_flight_and_the_order() -> None:
    with scripted_server(Answer(200, {"ok": 1}, delay=0.3)) as server:
        client = HTTPClient(server.url, concurrency=4, policy=QUICK)
        statuses = client.map(lambda n: (n, client.post("/v1/x", {"n": n}).status_code), range(8))
        client.close()
    assert statuses == [(n, 200) for n in range(8)]
    assert server.most_in_flight == 4  # 4 at once: neither one by one nor all 8


def test_the_api_key_goes_as_a_bearer_token_and_close_ends_the_pool() -> None:
    with scripted_server(Answer(200)) as server:
        client = HTTPClient(server.url, api_key="k-123")
        client.get("/")
        client.close()
        with pytest.raises(RuntimeError):  # httpx: the client has been closed
            client.get("/")
        anonymous = HTTPClient(server.url)
        anonymous.get("/")
        anonymous.close()
    assert server.authorizations == ["Bearer k-123", None]
