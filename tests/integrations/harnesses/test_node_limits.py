"""The Node gym_swe installs for the harnesses, under the address-space limit a local jail applies where it has
no cgroup (gym_swe not run as root): with the runner's ``NODE_OPTIONS`` its fetch works, without them
WebAssembly (which fetch parses HTTP with) cannot reserve its guard regions and no request is ever made: Pi
and Gemini CLI failed on their first request that way."""

from __future__ import annotations

import http.server
import resource
import subprocess
import threading
from collections.abc import Callable, Iterator

import pytest

from gym_swe.integrations.harnesses.base import Harness
from gym_swe.integrations.harnesses.install import require_installed
from gym_swe.integrations.harnesses.runner import NODE_OPTIONS
from gym_swe.sandbox.base import Limits, MiB

FETCH = """fetch(process.argv[1]).then(r => r.text()).then(t => console.log("fetched:", t), e => {
  console.error("fetch failed:", e); process.exit(3);
});"""


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


def node_fetch(node: str, url: str, options: str) -> subprocess.CompletedProcess[str]:
    """``node`` fetching ``url`` with ``NODE_OPTIONS=options``, under the jail's default address-space limit."""
    limit = Limits().memory_mb * MiB

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([node, "-e", FETCH, url], env={"NODE_OPTIONS": options}, preexec_fn=limited,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_node_fetches_under_the_jails_address_space_limit_with_the_runners_options(
    installed: Callable[[str], Harness], server: str
) -> None:
    node = str(require_installed(installed("gemini-cli")).node)
    done = node_fetch(node, server, NODE_OPTIONS)
    assert (done.returncode, done.stdout.strip()) == (0, "fetched: hello"), done.stderr
    without = node_fetch(node, server, "")
    assert without.returncode != 0 and "WebAssembly" in without.stderr  # what the options are for
