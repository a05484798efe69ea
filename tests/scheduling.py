"""How the suite runs in parallel, and how its time is watched (a pytest plugin; tests/conftest.py loads it).

`make test` runs the suite under pytest-xdist (``-n`` workers, ``--dist loadscope``, which this plugin's
`UnitScheduling` takes over): most tests wait on sandboxes, containers, servers and subprocesses, so a 2-core
machine runs several at once. The unit of work is a test module (its module fixtures start once, on one
worker), or a group of tests that share a costly session fixture (`SHARED_FIXTURES`: the tests that use the
vLLM server go to one worker, which starts it once, not one per worker), or, in a module of long independent
tests (`SPREAD`), a test. Units start longest
first, by ``tests/durations.json`` (seconds per unit, from an earlier run; a unit it lacks counts
`UNKNOWN_TEST_SECONDS` a test), so that no long unit starts last and keeps one worker busy at the end.

The controller that schedules sees test ids only, so a group is a list of tests written here; collection
checks it (a test that uses a shared fixture and is missing from its group is a usage error naming it).

A test marked ``alone`` disturbs what every other test uses (it restarts dockerd): a worker refuses to run it
beside others (the test fails before it starts, saying so), and `make test` runs it after the parallel run, by
itself (``-m alone``).

Every run writes what each unit took to ``.tmp/test-durations.json`` (over what an earlier run wrote there); copy it over ``tests/durations.json`` to
refresh the order (stale figures only make the schedule worse, never a result wrong). Without xdist (a plain
``pytest tests/x``), none of this changes anything but the order tests run in.

The log of every run lists the slowest tests (``--durations`` in pyproject.toml) and, where a test took more
than `SLOW_SECONDS` and has no docstring saying why, names it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DURATIONS = REPO_ROOT / "tests" / "durations.json"
MEASURED = REPO_ROOT / ".tmp" / "test-durations.json"
UNKNOWN_TEST_SECONDS = 2.0
SLOW_SECONDS = 60.0

# A session fixture that costs a process start of tens of seconds and a GB of memory, the group its users run
# in (on one worker, which starts it once), and the tests of that group (module::function). The other tests of
# their modules are units of their own module.
SHARED_FIXTURES = {"vllm_server": "vllm"}
GROUPS = {
    "vllm": (
        "tests/integrations/test_atropos.py::test_the_readme_process_command_writes_scored_groups_and_atropos_html_view",
        "tests/integrations/test_atropos.py::test_serve_feeds_a_trainer_through_run_api",
        "tests/integrations/test_atropos.py::test_evaluate_writes_metrics_and_samples",
        "tests/integrations/test_verifiers.py::test_vf_eval_of_a_tiny_model_is_graded_as_gym_swe_grades_its_samples",
        "tests/rollout/test_generators.py::test_vllm_server_generates_with_processed_logprobs",
        "tests/rollout/test_generators.py::test_vllm_server_too_long_prompt_is_a_truncation_not_an_error",
        "tests/rollout/test_generators.py::test_vllm_server_dropped_connections_are_retried",
        "tests/rollout/test_generators.py::test_collect_with_the_vllm_server",
        "tests/rollout/test_generators.py::test_openai_chat_against_vllms_chat_endpoint",
        "tests/rollout/test_proxy.py::test_rollouts_through_a_real_vllm_server",
        "tests/rollout/test_seeds.py::test_vllm_server_samples_of_one_prompt_differ",
        "tests/rollout/test_seeds.py::test_vllm_server_chunking_on_cpu_refuses_seeds",
        "tests/rollout/test_seeds.py::test_openai_chat_samples_differ_and_seeds_repeat",
        "tests/rollout/test_weight_sync.py::test_vllm_server_sync_from_disk_and_refusals",
    ),
}
GROUP_OF_TEST = {test: group for group, tests in GROUPS.items() for test in tests}
# Modules of long, independent tests with no costly module fixture: each test is a unit of its own, so that
# they spread over the workers rather than queue on one (each runs its own trainer, server or sandboxes).
SPREAD = (
    "tests/trainers/test_grpo_runs.py",
    "tests/trainers/test_grpo_vllm.py",
    "tests/grading/test_seal_shapes.py",
    "tests/grading/test_decoys.py",
)


def unit_of(nodeid: str) -> str:
    """The unit a test is scheduled in: its group, else itself in a `SPREAD` module, else its module."""
    module = nodeid.split("::", 1)[0]
    group = GROUP_OF_TEST.get(nodeid.split("[", 1)[0])
    if group is not None:
        return group
    return nodeid if module in SPREAD else module


def _known_durations() -> dict[str, float]:
    try:
        recorded = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(unit): float(seconds) for unit, seconds in recorded.items()}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = sorted(
        {
            f"{item.nodeid.split('[', 1)[0]} (uses {fixture}: group {group!r})"
            for item in items
            for fixture, group in SHARED_FIXTURES.items()
            if fixture in getattr(item, "fixturenames", ()) and unit_of(item.nodeid) != group
        }
    )
    if missing:
        raise pytest.UsageError(f"add to tests/scheduling.py's GROUPS: {', '.join(missing)}")
    units = {id(item): unit_of(item.nodeid) for item in items}
    counts: dict[str, int] = defaultdict(int)
    for unit in units.values():
        counts[unit] += 1
    known = _known_durations()
    # A unit not yet measured: its share of its module's figure where the module was a unit before, else a guess
    tests_of_module: dict[str, int] = defaultdict(int)
    for item in items:
        tests_of_module[item.nodeid.split("::", 1)[0]] += 1
    weight = {}
    for unit, count in counts.items():
        module = unit.split("::", 1)[0]
        share = (
            known[module] * count / tests_of_module[module] if module in known and module != unit else None
        )
        weight[unit] = known.get(unit, share if share is not None else UNKNOWN_TEST_SECONDS * count)
    # Longest unit first; within a unit, the order pytest collected (sorted() is stable).
    items.sort(key=lambda item: -weight[units[id(item)]])


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("alone") and hasattr(item.config, "workerinput"):
        pytest.fail(
            "marked alone: it cannot run beside other tests (a parallel run): leave it out with -m 'not alone' "
            "and run it after with -m alone, as make test does",
            pytrace=False,
        )


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope``, with `unit_of`'s units in collection order (longest first, above)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _reschedule(self, node: Any) -> None:
            # xdist hands a worker its next unit while it has two tests left; with units of one long test that
            # queues minutes of work behind a busy worker while another idles. Here: only once its last test
            # is pending (a worker runs its last test only when it knows what comes next, or that nothing does).
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

    config.option.loadscopereorder = False  # xdist's own order is by test count
    return UnitScheduling(config, log)


class DurationRecorder:
    """Seconds per unit and per test, as reports come in (on the controller under xdist)."""

    def __init__(self) -> None:
        self.units: dict[str, float] = defaultdict(float)
        self.slow: list[tuple[float, str]] = []  # over SLOW_SECONDS, with no docstring

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        self.units[str(properties.get("unit", report.nodeid.split("::", 1)[0]))] += report.duration
        if properties.get("slow_without_docstring"):
            self.slow.append((report.duration, report.nodeid))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return  # a worker: the controller has every report
        MEASURED.parent.mkdir(parents=True, exist_ok=True)
        try:  # make test's two runs (-m 'not alone', then -m alone) add up in one file
            units = {**json.loads(MEASURED.read_text(encoding="utf-8")), **self.units}
        except (OSError, ValueError):
            units = dict(self.units)
        ordered = dict(sorted(((u, round(s, 1)) for u, s in units.items()), key=lambda kv: -kv[1]))
        MEASURED.write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(DurationRecorder(), "gym_swe_durations")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    # Where the item is (a worker under xdist): each report names its unit, and a slow test's whether its
    # docstring explains it.
    outcome = yield
    report = outcome.get_result()
    report.user_properties.append(("unit", unit_of(item.nodeid)))
    if report.when == "call" and report.duration > SLOW_SECONDS:
        documented = bool(getattr(getattr(item, "function", None), "__doc__", None))
        report.user_properties.append(("slow_without_docstring", not documented))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    recorder: DurationRecorder | None = terminalreporter.config.pluginmanager.get_plugin("gym_swe_durations")
    silent = [(s, n) for s, n in sorted(recorder.slow, reverse=True)] if recorder else []
    if silent:
        terminalreporter.section(f"tests over {SLOW_SECONDS:.0f} s with no docstring saying why")
        for seconds, nodeid in silent:
            terminalreporter.write_line(f"{seconds:8.1f}s {nodeid}")
