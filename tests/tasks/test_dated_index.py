"""Environments resolved against the package index as it was on a date (issue 34: xarray-6938's ``sparse``).

Real pip against real PyPI (the machine's only network) through `DatedIndex`: ``six`` 1.17.0 was uploaded
on 2024-12-04, 1.16.0 on 2021-05-05, and an upload time never changes, so what a date gives is fixed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gym_swe.errors import TaskError, TaskFormatError
from gym_swe.tasks.dated_index import DatedIndex, exact_pins, file_version, honoured, parse_date
from gym_swe.tasks.environments import environment_dir, prepare_environment
from gym_swe.tasks.repos import RepoSource
from gym_swe.tasks.swe import Environment, load_swe_tasks
from gym_swe.tasks.swebench_specs import SWEBENCH_IMAGES_DATE, swebench_environment, swebench_tables
from tests.conftest import require_bwrap
from tests.tasks.local_repos import World, record, verpkg_world, write_records


def pypi_reachable() -> None:
    with DatedIndex(parse_date("2024-06-01")) as index:
        status, _ = index.page("six")
    if status != 200:
        pytest.skip(f"the package index is not reachable here ({index.upstream}: {index.problems or status})")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pypi_reachable()
    path = tmp_path_factory.mktemp("dated") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path


def pip_install(venv: Path, index: DatedIndex, *requirements: str, config: Path | None = None) -> str:
    """Install into ``venv`` the way a prepare command does (variables over pip's configuration); the
    version of six installed."""
    env = {**os.environ, **index.pip_variables(), "PIP_NO_CACHE_DIR": "1"}
    if config is not None:
        env["PIP_CONFIG_FILE"] = str(config)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--force-reinstall",
                    "--disable-pip-version-check", *requirements], check=True, env=env)  # fmt: skip
    shown = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "show", "six"], env=env,
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    return next(line.split()[1] for line in shown.splitlines() if line.startswith("Version:"))


def test_pip_gets_the_newest_release_before_the_date(venv: Path) -> None:
    with DatedIndex(parse_date("2024-06-01")) as index:
        assert pip_install(venv, index, "six") == "1.16.0"
    with DatedIndex(parse_date("2025-01-31")) as index:
        assert pip_install(venv, index, "six") == "1.17.0"


def test_a_release_pinned_exactly_is_served_whatever_its_date(venv: Path) -> None:
    with DatedIndex(parse_date("2024-06-01"), exact_pins(["six==1.17.0"])) as index:
        assert pip_install(venv, index, "six==1.17.0") == "1.17.0"
    with DatedIndex(parse_date("2024-06-01")) as index, pytest.raises(subprocess.CalledProcessError):
        pip_install(venv, index, "six==1.17.0")  # not pinned by the environment: not there as of then


def test_the_machines_other_package_sources_are_not_used(venv: Path, tmp_path: Path) -> None:
    # A find-links folder with a newer six (pip's configuration, as /etc/pip.conf has one here) is left out.
    links = tmp_path / "links"
    links.mkdir()
    with DatedIndex(parse_date("2025-01-31")) as index:
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "download", "--quiet", "--no-deps",
                        "--disable-pip-version-check", "-d", str(links), "six==1.17.0"],
                       check=True, env={**os.environ, **index.pip_variables()})  # fmt: skip
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\nfind-links = {links}\nextra-index-url = file://{links}\n")
    with DatedIndex(parse_date("2024-06-01")) as index:
        assert pip_install(venv, index, "six", config=config) == "1.16.0"


class NoUploadTimes(BaseHTTPRequestHandler):
    """An index that speaks PEP 691 but gives no upload times (as some mirrors and proxies do)."""

    def do_GET(self) -> None:
        if self.path.startswith("/simple/html/"):
            page = (
                b'<html><body><a href="https://example.invalid/six.whl">six-1.16.0-py2.py3-none-any.whl</a>'
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        body = json.dumps({"meta": {"api-version": "1.0"}, "name": "six", "files": [
            {"filename": "six-1.16.0-py2.py3-none-any.whl", "url": "https://example.invalid/six.whl",
             "hashes": {}}]}).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def undated_upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), NoUploadTimes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()
    server.server_close()


def test_an_index_without_upload_times_cannot_be_honoured(undated_upstream: str) -> None:
    with DatedIndex(parse_date("2024-06-01"), upstream=undated_upstream) as index:
        status, body = index.page("six")
    assert status == 200 and b"six-1.16.0" not in body
    with pytest.raises(TaskError, match=r"^index_date cannot be honoured: six: the index .* no upload times"):
        honoured(index)
    # an index that answers HTML only (PEP 503, no JSON) has none either
    with DatedIndex(parse_date("2024-06-01"), upstream=undated_upstream + "/html") as index:
        status, _ = index.page("six")
    assert status == 502
    with pytest.raises(
        TaskError, match=r"^index_date cannot be honoured: six: .* no upload times \(no PEP 691"
    ):
        honoured(index)


def test_dates_pins_and_file_names_are_read() -> None:
    assert parse_date("2024-06-01").isoformat() == "2024-06-02T00:00:00+00:00"  # the whole day counts
    assert parse_date("2024-06-01T12:00:00Z").isoformat() == "2024-06-01T12:00:00+00:00"
    with pytest.raises(ValueError, match="not a date"):
        parse_date("June 2024")
    assert exact_pins(["numpy==1.23.0", "Pandas[xml] == 1.5.3 ; python_version>'3'", "dask>=2022",
                       "pytest"]) == {"numpy": {"1.23.0"}, "pandas": {"1.5.3"}}  # fmt: skip
    assert file_version("sparse-0.13.0-py2.py3-none-any.whl") == "0.13.0"
    assert file_version("python-dateutil-2.8.2.tar.gz") == "2.8.2"
    assert file_version("README") is None


def test_a_records_index_date_is_checked_and_swebench_environments_get_one() -> None:
    assert Environment.from_value({"index_date": "2022-08-20"}, "r").index_date == "2022-08-20"
    assert Environment.from_value({"index_date": None}, "r").index_date == ""
    with pytest.raises(TaskFormatError, match=r"^r: 'environment.index_date' is not a date"):
        Environment.from_value({"index_date": "last summer"}, "r")
    with pytest.raises(TaskFormatError, match="must be a date"):
        Environment.from_value({"index_date": 2022}, "r")
    if swebench_tables() is None:
        pytest.skip("swebench (with its tables) is not installed")
    found = swebench_environment("pydata/xarray", "2022.06")
    assert found is not None and found["index_date"] == SWEBENCH_IMAGES_DATE


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    require_bwrap()
    pypi_reachable()
    with verpkg_world(tmp_path_factory.mktemp("dated-world")) as built:
        yield built


def test_a_prepared_environment_is_resolved_as_of_its_date(world: World, tmp_path: Path) -> None:
    # Every command of the prepare resolves through the dated index: the task's packages and its install
    # commands (a requirement on an install line, as SWE-bench's requirements files and pip_packages are).
    dated = {
        "packages": ["six"],
        "install": ["python -m pip install --quiet 'six<2'"],
        "index_date": "2024-06-01",
    }
    rows = [record("dated", world.base, world.gold, world.test_patch, environment=dated),
            record("today", world.base, world.gold, world.test_patch,
                   environment={**dated, "index_date": None})]  # fmt: skip
    tasks = load_swe_tasks(str(write_records(tmp_path / "t.jsonl", rows)))
    versions = {}
    for name in ("dated", "today"):
        prepared = prepare_environment(tasks.get(name), RepoSource(world.mirrors))
        shown = subprocess.run([str(prepared.venv / "bin" / "python"), "-c", "import six; print(six.__version__)"],
                               capture_output=True, text=True, check=True).stdout  # fmt: skip
        versions[name] = shown.strip()
    assert versions["dated"] == "1.16.0"
    assert versions["today"] != "1.16.0"
    # The two are different environments, each prepared once.
    assert environment_dir(tasks.get("today")) != environment_dir(tasks.get("dated"))


def test_the_upstream_is_the_index_pip_is_configured_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gym_swe.tasks.dated_index import upstream_index

    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = https://mirror.example/simple/\ncert = /x.pem\n")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert upstream_index() == "https://mirror.example/simple"
    monkeypatch.setenv("PIP_INDEX_URL", "https://other.example/simple")
    assert upstream_index() == "https://other.example/simple"
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    from gym_swe.tasks.dated_index import host_pip_settings

    settings = host_pip_settings()
    assert settings.get("PIP_CERT") == os.environ.get("PIP_CERT", "/x.pem")
    assert "PIP_INDEX_URL" not in settings and "PIP_CONFIG_FILE" not in settings
