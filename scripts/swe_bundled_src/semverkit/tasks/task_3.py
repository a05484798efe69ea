"""semverkit-3: ``python -m semverkit`` does not work.

Bug: the README (since the CLI commit) promises ``python -m semverkit ...``,
but the package has no ``__main__.py``.  The gold patch adds that module; the
hidden tests are a new test file that runs the package as a module.

Secret check: the stdout of ``python -m semverkit bump 2.17.9 minor``; the
issue and the CLI tests only show ``bump 1.4.2 minor``.
"""

BASE = 6
CREATED_AT = "2024-03-05T19:27:44Z"

PROBLEM_STATEMENT = """
`python -m semverkit` fails: "is a package and cannot be directly executed"

The README's command line section says the commands also work without the
console script, straight from a checkout:

> The same commands work without installing the console script, e.g. from a
> checkout: `python -m semverkit bump 1.4.2 minor`.

Trying exactly that in a fresh clone:

```
$ git clone ... semverkit && cd semverkit
$ python -m semverkit bump 1.4.2 minor
/usr/bin/python3: No module named semverkit.__main__; 'semverkit' is a package and cannot be directly executed
$ echo $?
1
```

Expected `1.5.0` on stdout, like `semverkit bump 1.4.2 minor` prints when the
package is pip-installed.  We call it as `python -m` from CI scripts where
the console script is not on PATH, and we rely on the exit status of
`satisfies` (1 when nothing matches), so that should carry over too.

Python 3.10.13, Debian 12, semverkit at current main.
"""

HINTS_TEXT = """
The console script points at semverkit.cli:main; `-m` needs a
semverkit/__main__.py that calls it and exits with its return value.
"""

PATCH = [
    {
        "file": "semverkit/__main__.py",
        "create": '''\
"""Support ``python -m semverkit``; same as the ``semverkit`` console script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
''',
    },
]

TEST_PATCH = [
    {
        "file": "tests/test_main_module.py",
        "create": '''\
import os
import subprocess
import sys

from semverkit.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_module(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "semverkit"] + list(args),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=120,
    )


def test_python_m_semverkit_bump():
    proc = run_module("bump", "1.4.2", "minor")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1.5.0\\n"
    proc = run_module("bump", "2.17.9", "minor")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "2.18.0\\n"


def test_python_m_semverkit_exit_status():
    proc = run_module("satisfies", "^2.0.0", "1.0.0", "1.9.9")
    assert proc.returncode == 1
    assert proc.stdout == ""
    proc = run_module("compare", "1.0", "1.0.0")
    assert proc.returncode == 2
    assert "not a valid semantic version" in proc.stderr


def test_cli_main_returns_status(capsys):
    assert main(["satisfies", "~1.2", "1.2.9", "1.3.0"]) == 0
    assert capsys.readouterr().out == "1.2.9\\n"
''',
    },
]

FAIL_TO_PASS = [
    "tests/test_main_module.py::test_python_m_semverkit_bump",
    "tests/test_main_module.py::test_python_m_semverkit_exit_status",
]
