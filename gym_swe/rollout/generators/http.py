"""The HTTP client of the server generators (``vllm-server``, ``openai-chat``): one pooled ``httpx.Client``
per generator, and one retry policy, written here once.

The policy (`RetryPolicy`):

- What is retried: no answer (a refused or dropped connection, a connection closed before the response,
  a timeout: httpx's ``TimeoutException``, ``NetworkError`` and ``RemoteProtocolError``), and the statuses
  that say "not now" (`RETRY_STATUSES`: 408, 429, 500, 502, 503, 504). Anything else is the answer: a 400
  (a prompt longer than the context, a bad request) or a 501 comes back as it is, at once; so does an
  answer whose body cannot be read (a server that sent it once will send it again).
- Backoff: ``backoff`` seconds before the first retry, doubled for each further one, at most
  ``max_backoff``, each wait drawn between half and all of that (so that a batch of requests that failed
  together does not come back together), or the server's ``Retry-After`` when it gives one.
- Deadline: a request, its retries and the waits between them take at most ``deadline`` seconds; each
  attempt's timeout is cut to what is left of it.

Requests fan out on threads (`HTTPClient.map`), as many at once as the pool has connections. The callers are
threads already (the collector runs each episode in one, the proxy answers each request in one), so a
blocking client on a thread pool fits them as they are, where an async client would add an event loop and
a bridge into it on every call for no more requests in flight.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""Statuses that say the server cannot answer now, rather than what it thinks of the request."""
NO_ANSWER = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
"""What httpx raises when the server did not answer: the request may go again."""
CONTROL_CONNECTIONS = 2
"""Connections kept beyond ``concurrency`` for calls outside the fan-out (weight syncs, config reads)."""

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class RetryPolicy:
    """When a request goes again, and for how long (see the module's docstring)."""

    retries: int = 3
    """Attempts after the first."""
    backoff: float = 0.5
    """Seconds before the first retry; doubled for each further one."""
    max_backoff: float = 8.0
    """The longest wait between two attempts (a ``Retry-After`` included)."""
    deadline: float = 1200.0
    """Seconds one request may take with its retries and the waits between them."""

    def wait(self, retry: int, response: httpx.Response | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (0: the first), after ``response`` (None: no
        answer)."""
        given = _retry_after(response)
        if given is not None:
            return min(given, self.max_backoff)
        longest = min(self.backoff * 2**retry, self.max_backoff)
        return rng.uniform(longest / 2, longest)


class NoAnswer(Exception):
    """The server did not answer, in any attempt: where, how often, and why the last attempt failed."""

    def __init__(self, base_url: str, attempts: int, reason: str) -> None:
        tries = "1 try" if attempts == 1 else f"{attempts} tries"
        super().__init__(f"no answer from {base_url} after {tries}: {reason}")
        self.attempts = attempts
        self.reason = reason


class HTTPClient:
    """A pooled JSON client for one server (``base_url``), with `RetryPolicy`'s retries.

    Args:
        base_url: what paths are joined to (``http://host:port`` or ``http://host:port/v1``).
        api_key: sent as a bearer token when given.
        timeout: seconds an attempt may wait for the answer (cut to what is left of the deadline).
        policy: when to retry.
        concurrency: requests `map` has in flight at once (the pool keeps a few connections more for
            other calls).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 600.0,
        policy: RetryPolicy | None = None,
        concurrency: int = 16,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.policy = policy or RetryPolicy()
        connections = concurrency + CONTROL_CONNECTIONS
        self._client = httpx.Client(
            headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )
        self._threads = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="gym_swe-http")
        self._rng = random.Random()  # the backoff's jitter: never the caller's global RNG
        self._rng_lock = threading.Lock()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        timeout: float | None = None,
        retry: bool = True,
    ) -> httpx.Response:
        """``method`` ``path`` with ``body`` as JSON; the response, whatever its status, once the policy
        stops retrying. ``retry=False``: one attempt (for calls that must not run twice, such as a
        weight sync's). ``timeout``: an attempt's, instead of the client's. Raises `NoAnswer` when no
        attempt got an answer."""
        url = self.base_url + path
        timeout = timeout or self.timeout
        attempts = 1 + (self.policy.retries if retry else 0)
        deadline = time.monotonic() + self.policy.deadline
        for attempt in range(attempts):
            left = deadline - time.monotonic()
            response, error = None, None
            try:
                response = self._client.request(
                    method, url, json=body, timeout=httpx.Timeout(max(0.001, min(timeout, left)))
                )
            except NO_ANSWER as no_answer:
                error = no_answer
            if response is not None and response.status_code not in RETRY_STATUSES:
                return response
            if attempt + 1 == attempts:
                break
            with self._rng_lock:
                wait = self.policy.wait(attempt, response, self._rng)
            if time.monotonic() + wait >= deadline:
                break
            time.sleep(wait)
        if response is not None:
            return response  # still "not now" after the last attempt: the caller reads the status
        raise NoAnswer(self.base_url, attempt + 1, _describe(error))

    def get(self, path: str, timeout: float | None = None, retry: bool = True) -> httpx.Response:
        return self.request("GET", path, timeout=timeout, retry=retry)

    def post(self, path: str, body: Any, timeout: float | None = None, retry: bool = True) -> httpx.Response:
        return self.request("POST", path, body, timeout=timeout, retry=retry)

    def map(self, call: Callable[[Item], Result], items: Iterable[Item]) -> list[Result]:
        """``call`` on each of ``items`` on the client's threads, up to ``concurrency`` at once; the
        results in order."""
        results: Iterator[Result] = self._threads.map(call, items)
        return list(results)

    def close(self) -> None:
        """Stop the threads (requests still waiting to start are dropped) and close the connections."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._client.close()


def server_root(base_url: str) -> str:
    """A server's address without a trailing ``/`` or ``/v1``: what the OpenAI routes (``/v1/...``) and a vLLM
    server's own (``/health``, ``/collective_rpc``) are joined to."""
    return base_url.rstrip("/").removesuffix("/v1")


def error_detail(response: httpx.Response, limit: int = 2000) -> str:
    """The start of an error response's body, for a message."""
    return response.content[:limit].decode("utf-8", "replace")


def _retry_after(response: httpx.Response | None) -> float | None:
    """The seconds a ``Retry-After`` header asks for (the number form; a date is ignored), or None."""
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _describe(error: BaseException | None) -> str:
    """An httpx error as a line: its message, or its kind where it has none (a bare ``ReadTimeout``)."""
    if error is None:
        return "no attempt was made"
    return str(error) or type(error).__name__
