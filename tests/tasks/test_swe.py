"""SWE task sources: the bundled repositories, SWE-bench's own parquet files, and files of your own."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from gym_swe.errors import TaskError, TaskFormatError, TaskRefused
from gym_swe.grading.test_ids import unsupported
from gym_swe.tasks import swe
from gym_swe.tasks.repos import checkout
from gym_swe.tasks.swe import bundled_data_dir, docker_image, load_swe_tasks
from tests.tasks.check_swe_bundled import check_task

SWE_BENCH = ("SWE-bench_Lite-test.parquet", "SWE-bench_Verified-test.parquet")


def test_bundled_tasks() -> None:
    tasks = load_swe_tasks("bundled")
    assert len(tasks) >= 12
    repos = {task.repo for task in tasks}
    assert len(repos) >= 3
    for task in tasks:
        assert task.fail_to_pass and task.patch and task.test_patch
        assert task.environment.packages == () and task.environment.install == ()


@pytest.mark.parametrize("task_id", load_swe_tasks("bundled").ids)
def test_bundled_task_is_valid(task_id: str) -> None:
    """The data checker: F2P fail before and pass after the gold patch, P2P pass in both, the fix is
    not in the history, the patches touch the right files."""
    task = json.loads(
        next(
            line for line in (bundled_data_dir() / "tasks.jsonl").read_text().splitlines() if task_id in line
        )
    )
    assert check_task(task, bundled_data_dir()) == []


def test_checkouts_hold_no_history_after_the_base_commit() -> None:
    task = load_swe_tasks("bundled").get("gymswe__semverkit-1")
    path = checkout(task)
    git = lambda *a: subprocess.run(["git", *a], cwd=path, capture_output=True, text=True, check=True).stdout  # noqa: E731
    assert git("rev-parse", "HEAD").strip() == task.base_commit
    assert git("status", "--porcelain") == ""
    assert git("remote") == ""
    assert git("rev-list", "--all").split() == git("rev-list", task.base_commit).split()
    assert git("branch", "--format=%(refname:short)").split() == ["main"]


@pytest.mark.parametrize("name", SWE_BENCH)
def test_swe_bench_parquet_files_load(shared_data: Path, name: str) -> None:
    pytest.importorskip("pyarrow")
    tasks = load_swe_tasks(str(shared_data / "swe-bench" / name))
    assert len(tasks) == (300 if "Lite" in name else 500)
    assert not tasks.refused  # every repository's ids are read by its runner (Django's, sympy's, pytest)
    runners = {task.repo: task.test_runner for task in tasks}
    assert runners["django/django"] == "django" and runners["sympy/sympy"] == "sympy"
    assert runners["astropy/astropy"] == runners["pallets/flask"] == "pytest"
    for task in tasks:
        assert task.fail_to_pass and isinstance(task.pass_to_pass, tuple)
        assert task.image
        # The SWE-bench naming reproduces the image the official record names.
        assert docker_image(task, "swe-bench") == task.image
        assert docker_image(task, "auto") == task.image


def test_image_namings() -> None:
    task = swe.SWETask(instance_id="getmoto__moto-5752", repo="getmoto/moto", base_commit="a" * 40,
                       problem_statement="x", test_patch="", fail_to_pass=("t",), pass_to_pass=())  # fmt: skip
    assert docker_image(task, "swe-gym") == "xingyaoww/sweb.eval.x86_64.getmoto_s_moto-5752"
    assert docker_image(task, "swe-bench") == "swebench/sweb.eval.x86_64.getmoto_1776_moto-5752:latest"
    assert docker_image(task, "gym-swe") == "gym-swe-task:getmoto__moto-5752"


def test_rows_with_lists_or_json_strings(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (bundled_data_dir() / "tasks.jsonl").read_text().splitlines()[:2]]
    rows[1]["FAIL_TO_PASS"] = json.dumps(rows[1]["FAIL_TO_PASS"])
    rows[1]["PASS_TO_PASS"] = json.dumps(rows[1]["PASS_TO_PASS"])
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    tasks = load_swe_tasks(str(path))
    assert tasks[1].fail_to_pass == tuple(json.loads(rows[1]["FAIL_TO_PASS"]))


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r.pop("base_commit"), "row 1: missing field 'base_commit'"),
    (lambda r: r.update(FAIL_TO_PASS="not json"), "row 1: field 'FAIL_TO_PASS' is a string that is not a JSON list"),
    (lambda r: r.update(FAIL_TO_PASS=[]), "row 1: FAIL_TO_PASS is empty"),
    (lambda r: r.update(PASS_TO_PASS=[1, 2]), "row 1: field 'PASS_TO_PASS' must be a list of test ids"),
    (lambda r: r.update(environment={"pyhton": "3"}), "row 1: unknown 'environment' keys ['pyhton']"),
])  # fmt: skip
def test_malformed_rows(tmp_path: Path, change, message: str) -> None:
    row = json.loads((bundled_data_dir() / "tasks.jsonl").read_text().splitlines()[0])
    change(row)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(TaskFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_swe_tasks(str(path))


def test_named_sources_and_hub_loading(shared_data: Path, tmp_path: Path, monkeypatch) -> None:
    """The Hub names go through datasets.load_dataset(repo, split=...); a local directory laid out as the Hub
    has it stands in for SWE-bench Lite (the Hub is out of reach here)."""
    pytest.importorskip("datasets")
    with pytest.raises(TaskError, match="Did you mean 'swe-bench-lite'"):
        load_swe_tasks("swe-bench-lit")
    repo = tmp_path / "SWE-bench_Lite" / "data"
    repo.mkdir(parents=True)
    (repo / "test-00000-of-00001.parquet").write_bytes(
        (shared_data / "swe-bench" / SWE_BENCH[0]).read_bytes()
    )
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(swe.HUB_SOURCES, "swe-bench-lite", (str(repo.parent), None, "test"))
    load_swe_tasks.cache_clear()
    try:
        tasks = load_swe_tasks("swe-bench-lite")
    finally:
        load_swe_tasks.cache_clear()
    assert len(tasks) == 300 and tasks[0].source == "swe-bench-lite"


@pytest.mark.parametrize(("packages", "version", "pin"), [
    ((), (3, 11), "pytest==8.3.5"),
    ((), (3, 8), "pytest==8.3.5"),
    ((), (3, 7), "pytest==7.4.4"),
    ((), (3, 6), "pytest==7.0.1"),
    ((), (3, 5), "pytest==6.2.5"),
    (("numpy<2",), (3, 9), "pytest==8.3.5"),
    (("pytest==5.4.3",), (3, 6), None),
    (("PyTest>=7",), (3, 11), None),
    (("pytest[testing]",), (3, 11), None),
    (("pytest-xdist",), (3, 11), "pytest==8.3.5"),
])  # fmt: skip
def test_the_pytest_pin(packages: tuple[str, ...], version: tuple[int, int], pin: str | None) -> None:
    assert swe.Environment(packages=packages).pytest_requirement(version) == pin


@pytest.mark.parametrize(("environment", "message"), [
    ({"packages": "pytest"}, "'environment.packages' must be a list of strings"),
    ({"install": [1]}, "'environment.install' must be a list of strings"),
    ({"env": {"A": 1}}, "'environment.env' must be an object of strings"),
    ({"python": ""}, "'environment.python' must be a version, a command or a path"),
    ("{not json", "'environment' is a string but not JSON"),
    ({"pip": []}, "unknown 'environment' keys ['pip'] (allowed: python, packages, install, rebuild, env, index_date)"),
])  # fmt: skip
def test_bad_environment_specs(environment, message: str) -> None:
    with pytest.raises(TaskFormatError, match=re.escape(message)):
        swe.Environment.from_value(environment, "f.jsonl, row 1")


def test_environment_spec_from_a_json_string() -> None:
    spec = swe.Environment.from_value(
        '{"python": "3.9", "packages": ["numpy<2"], "install": ["pip install -e ."], "env": {"B": "2"}}',
        "here",
        version="2.3",
    )
    assert spec.python == "3.9" and spec.packages == ("numpy<2",) and spec.install == ("pip install -e .",)
    assert spec.variables == {"B": "2", "SETUPTOOLS_SCM_PRETEND_VERSION": "2.3"}


def test_a_task_whose_exclusions_leave_nothing_to_fix_is_refused_alone(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (bundled_data_dir() / "tasks.jsonl").read_text().splitlines()[:2]]
    rows[0]["exclude_tests"] = list(rows[0]["FAIL_TO_PASS"])  # requests-1724: every one needs the network
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    tasks = load_swe_tasks(str(tmp_path / "t.jsonl"))
    assert tasks.ids == [rows[1]["instance_id"]]
    assert (
        "cannot be graded here: every FAIL_TO_PASS test is excluded" in tasks.refused[rows[0]["instance_id"]]
    )
    with pytest.raises(TaskRefused, match=f"^{rows[0]['instance_id']}: cannot be graded here"):
        tasks.get(rows[0]["instance_id"])
    (tmp_path / "one.jsonl").write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(TaskRefused, match="every FAIL_TO_PASS test is excluded"):
        load_swe_tasks(str(tmp_path / "one.jsonl"))


def test_ids_no_runner_reads_refuse_their_task_alone_and_a_record_may_name_its_runner(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (bundled_data_dir() / "tasks.jsonl").read_text().splitlines()[:2]]
    rows[0]["FAIL_TO_PASS"] = [
        "test_reverse (urlpatterns.tests.SimplifiedURLTests)"
    ]  # Django's, under pytest
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    tasks = load_swe_tasks(str(tmp_path / "t.jsonl"))
    assert tasks.ids == [rows[1]["instance_id"]] and tasks[0].test_runner == "pytest"
    assert "1 test id(s) are not pytest test ids" in tasks.refused[rows[0]["instance_id"]]
    rows[1]["test_runner"] = "nose"
    (tmp_path / "bad.jsonl").write_text(json.dumps(rows[1]) + "\n")
    with pytest.raises(
        TaskFormatError, match="field 'test_runner': unknown test runner 'nose'; choose one of pytest"
    ):
        load_swe_tasks(str(tmp_path / "bad.jsonl"))


def test_swe_bench_lite_dev_split(shared_data: Path, tmp_path: Path, monkeypatch) -> None:
    """ "swe-bench-lite-dev" reads the dev split of SWE-bench Lite (a local directory stands in for the Hub)."""
    pytest.importorskip("datasets")
    import pyarrow.parquet as parquet

    assert swe.HUB_SOURCES["swe-bench-lite-dev"] == ("SWE-bench/SWE-bench_Lite", None, "dev")
    repo = tmp_path / "SWE-bench_Lite" / "data"
    repo.mkdir(parents=True)
    table = parquet.read_table(shared_data / "swe-bench" / SWE_BENCH[0]).slice(0, 3)
    parquet.write_table(table, repo / "dev-00000-of-00001.parquet")
    parquet.write_table(table.slice(0, 1), repo / "test-00000-of-00001.parquet")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(swe.HUB_SOURCES, "swe-bench-lite-dev", (str(repo.parent), None, "dev"))
    load_swe_tasks.cache_clear()
    try:
        tasks = load_swe_tasks("swe-bench-lite-dev")
    finally:
        load_swe_tasks.cache_clear()
    assert len(tasks) == 3 and tasks[0].source == "swe-bench-lite-dev"


def test_swe_bench_log_fragments_are_dropped(shared_data: Path) -> None:
    """pytest-dev__pytest-5227 lists '[100%]', '[' and '[100%]-----...' among its PASS_TO_PASS."""
    pytest.importorskip("pyarrow")
    task = load_swe_tasks(str(shared_data / "swe-bench" / SWE_BENCH[0])).get("pytest-dev__pytest-5227")
    assert set(task.dropped_ids) == {"[100%]", "[", "[100%]------------------------------"}
    assert not unsupported(task.fail_to_pass + task.pass_to_pass)


def test_every_id_format_has_its_runner_and_every_runner_its_format() -> None:
    """The task layer knows which runner a task takes and its ids' format (`id_formats`); the grader runs it
    (`gym_swe.grading.runners`): the two name the same runners, and each runner refuses what its format does."""
    from gym_swe.grading.runners import RUNNERS, runner_named
    from gym_swe.tasks.id_formats import FORMATS, unreadable

    assert list(FORMATS) == list(RUNNERS)
    ids = ["tests/a.py::test_x", "test_x (module.Class)", "test_issue_1", "", "a\nb"]
    for name in RUNNERS:
        assert runner_named(name).unsupported(ids) == unreadable(name, ids)
    assert unreadable("sympy", ids) == ["tests/a.py::test_x", "test_x (module.Class)", "", "a\nb"]
    assert unreadable("django", ids) == ["", "a\nb"]
