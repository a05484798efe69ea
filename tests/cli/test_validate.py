"""`gym-swe validate`: its options (what it reports: tests/tasks/test_validate.py, tests/envs/test_swegym.py)."""

from __future__ import annotations

from tests.cli.shell import gym_swe


def test_validate_options_for_real_swe_tasks() -> None:
    validate = gym_swe("validate", "--help").stdout
    assert "--exclude-test ID" in validate and "-v, --verbose" in validate


def test_a_fix_whose_tests_were_skipped_names_why() -> None:
    """sphinx-doc__sphinx-10614 on a host without graphviz: its tests skip, and validate says what pytest said."""
    from gym_swe.validate import skip_cause

    log = (
        'SKIPPED [1] tests/test_ext_inheritance_diagram.py:18: graphviz "dot" is not available\n'
        'SKIPPED [1] tests/test_ext_inheritance_diagram.py:151: graphviz "dot" is not available\n'
    )
    cause = skip_cause(log, ["tests/test_x.py::test_svg (skipped)", "tests/test_x.py::test_png (skipped)"])
    assert cause == ' (its tests were skipped here: graphviz "dot" is not available)'
    # a failure is not explained by skips
    assert skip_cause(log, ["tests/test_x.py::test_svg (failed)"]) == ""
