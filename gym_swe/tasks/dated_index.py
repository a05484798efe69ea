"""The package index as it was on a date, for pip in a task's environment.

SWE-bench's tables leave most dependencies unpinned (a requirements file, a conda environment file, a
bare ``pytest``): its images got what PyPI held when they were built. Resolved today, the same names give
releases made since, and some of them break the task's tests whatever the fix (xarray-6938: ``sparse``
0.17.0, of 2025, fails ``test_from_sparse[Variable]`` with and without the gold patch). An environment with
an ``index_date`` is prepared with pip pointed at a small index on the host's loopback that serves the
upstream index's pages (PEP 691 JSON, with each file's PEP 700 ``upload-time``) as PEP 503 HTML, leaving
out every file uploaded after that date: every pip, Python 2.7's included, reads that format, and every
install command of the task (requirements files, ``pip install -e .`` with its isolated build) resolves
against it, not only gym_swe's own commands. A release a requirement pins exactly (``numpy==1.23.0``) is
served whatever its date, since the table that pins it was written after the date it pins to.

Only the index is dated: the machine's other package sources (``find-links``, extra indexes, in pip's
configuration) are switched off for those commands, since they carry no dates; its other pip settings
(certificates, proxy, timeouts) are kept. An upstream that gives no
upload times cannot be honoured, and says so.
"""

from __future__ import annotations

import configparser
import datetime as dt
import html
import json
import logging
import os
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from gym_swe.errors import TaskError

logger = logging.getLogger("gym_swe")
DEFAULT_UPSTREAM = "https://pypi.org/simple"
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
FETCH_TIMEOUT = 120.0
_NAME = re.compile(r"[-_.]+")
# name, extras, ``==`` or ``===``, a version without wildcards, a marker
_EXACT = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*([A-Za-z0-9._+!-]+)\s*(?:;.*)?$"
)
_SDIST = re.compile(r"\.(?:tar\.gz|tar\.bz2|tar\.xz|tgz|zip|tar)$")


def normalized(name: str) -> str:
    """A project name as the index keys it (PEP 503)."""
    return _NAME.sub("-", name).lower()


def parse_date(value: str) -> dt.datetime:
    """An ``index_date`` (``YYYY-MM-DD``, or an ISO time) as an aware UTC time; the day's end for a date."""
    try:
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a date (YYYY-MM-DD): {value!r}") from None
    if len(value.strip()) == 10:  # a day: everything uploaded on it counts
        when += dt.timedelta(days=1)
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def exact_pins(requirements: Iterable[str]) -> dict[str, set[str]]:
    """The versions requirements pin exactly (``name==version``), by normalized name."""
    pins: dict[str, set[str]] = {}
    for requirement in requirements:
        found = _EXACT.match(requirement)
        if found:
            pins.setdefault(normalized(found.group(1)), set()).add(found.group(2))
    return pins


def file_version(filename: str) -> str | None:
    """The version in a distribution file's name (wheel or sdist), None where it has none to read."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return parts[1] if len(parts) >= 5 else None
    stem = _SDIST.sub("", filename)
    if stem == filename or "-" not in stem:
        return None
    return stem.rsplit("-", 1)[1]


SOURCES = ("index-url", "extra-index-url", "find-links", "no-index")
"""pip settings that say where packages come from: a dated install takes none of the host's."""


def pip_config_files() -> list[Path]:
    """The configuration files pip reads, in its order (later ones win): global, user, ``PIP_CONFIG_FILE``."""
    xdg_dirs = os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [Path(folder) / "pip" / "pip.conf" for folder in xdg_dirs.split(":") if folder]
    files.append(Path("/etc/pip.conf"))
    home = Path.home()
    files.append(home / ".pip" / "pip.conf")
    files.append(Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "pip" / "pip.conf")
    if os.environ.get("PIP_CONFIG_FILE") and os.environ["PIP_CONFIG_FILE"] != os.devnull:
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    return files


def pip_config_items() -> list[tuple[str, str]]:
    """(key, value) of the ``global`` and ``install`` sections of pip's configuration files, in the order
    pip reads them (a later one wins)."""
    items: list[tuple[str, str]] = []
    for path in pip_config_files():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path)
        except (OSError, configparser.Error):
            continue
        for section in ("global", "install"):
            if parser.has_section(section):
                items += parser.items(section)
    return items


def host_pip_settings() -> dict[str, str]:
    """The host's pip settings other than package sources, as ``PIP_*`` variables (its files', then its
    environment's): a dated install reads no configuration file, so these carry what it still needs."""
    settings = {"PIP_" + key.upper().replace("-", "_"): value for key, value in pip_config_items()}
    settings.update({name: value for name, value in os.environ.items() if name.startswith("PIP_")})
    sources = {"PIP_" + key.upper().replace("-", "_") for key in SOURCES} | {"PIP_CONFIG_FILE"}
    return {name: value for name, value in settings.items() if name not in sources}


def upstream_index() -> str:
    """The index pip on this machine uses: ``PIP_INDEX_URL``, else its configuration files' ``index-url``
    (the last that sets it), else PyPI's."""
    found = DEFAULT_UPSTREAM
    for key, value in pip_config_items():
        if key == "index-url":
            found = value.split()[0]
    return (os.environ.get("PIP_INDEX_URL") or found).rstrip("/")


class DatedIndex:
    """A PEP 503 index on 127.0.0.1 serving ``upstream`` as it was at ``cutoff`` (a context manager)."""

    def __init__(self, cutoff: dt.datetime, pinned: dict[str, set[str]] | None = None,
                 upstream: str | None = None) -> None:  # fmt: skip
        self.cutoff = cutoff
        self.pinned = pinned or {}
        self.upstream = (upstream or upstream_index()).rstrip("/")
        self.problems: list[str] = []
        self._pages: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the dated index is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}/simple/"

    def pip_variables(self) -> dict[str, str]:
        """What makes pip (any version) resolve against this index alone: no configuration file (pip skips
        empty values, so a variable cannot empty a file's find-links), and the host's other settings
        (certificates, proxy, timeouts) as variables."""
        return {**host_pip_settings(), "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": self.url}

    def __enter__(self) -> DatedIndex:
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = [part for part in self.path.split("?")[0].split("/") if part]
                if len(parts) != 2 or parts[0] != "simple":
                    self.send_error(404)
                    return
                status, body = index.page(parts[1])
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # pip's log says what it fetched
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="gym_swe-dated-index", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def page(self, project: str) -> tuple[int, bytes]:
        """The HTML page of ``project`` as of the cutoff: (HTTP status, body)."""
        name = normalized(project)
        with self._lock:
            cached = self._pages.get(name)
        if cached is not None:
            return 200, cached
        request = urllib.request.Request(f"{self.upstream}/{name}/", headers={"Accept": JSON_ACCEPT})
        try:
            with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            return error.code, b""
        except OSError as error:
            self.problems.append(f"{name}: {error}")
            return 502, b""
        try:
            data = json.loads(text)
        except ValueError:  # an index that answers HTML only (PEP 503): it has no upload times to give
            self.problems.append(f"{name}: the index {self.upstream} gives no upload times (no PEP 691 JSON)")
            return 502, b""
        body = self.render(name, data.get("files") or ())
        with self._lock:
            self._pages[name] = body
        return 200, body

    def render(self, name: str, files: Iterable[dict[str, Any]]) -> bytes:
        pinned = self.pinned.get(name, set())
        links = []
        for entry in files:
            uploaded = entry.get("upload-time")
            if not uploaded:
                problem = f"{name}: the index {self.upstream} gives no upload times"
                if problem not in self.problems:
                    self.problems.append(problem)
                continue
            filename = entry.get("filename", "")
            if parse_date(uploaded) > self.cutoff and file_version(filename) not in pinned:
                continue
            href = entry["url"]
            digest = (entry.get("hashes") or {}).get("sha256")
            if digest:
                href += f"#sha256={digest}"
            attributes = f' href="{html.escape(href)}"'
            if entry.get("requires-python"):
                attributes += f' data-requires-python="{html.escape(entry["requires-python"])}"'
            yanked = entry.get("yanked")
            if yanked:
                attributes += f' data-yanked="{html.escape(yanked if isinstance(yanked, str) else "")}"'
            links.append(f"<a{attributes}>{html.escape(filename)}</a><br/>")
        text = "<!DOCTYPE html>\n<html><body>\n" + "\n".join(links) + "\n</body></html>\n"
        return text.encode()


def honoured(index: DatedIndex) -> None:
    """Raise where the index could not serve what it was asked as of its date (the upstream gave no upload
    times): the environment would not be the dated one it claims to be."""
    missing = [problem for problem in index.problems if "no upload times" in problem]
    if missing:
        raise TaskError(
            f"index_date cannot be honoured: {missing[0]} (PEP 700; PyPI gives them). Set the environment's "
            "index_date to null to resolve against today's index"
        )
