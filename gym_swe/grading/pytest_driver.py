"""Runs pytest for the repository grader, inside the grading sandbox, so that the test runner and its plugins
come from the grader's environment whatever the workspace holds.

Run as a script with the task environment's python, standard library only, Python >= 3.6:

    python pytest_driver.py probe WORKDIR          -> one JSON line: pytest's version and location, the
                                                      pytest11 plugins the environment installs, the
                                                      top-level module names a workspace must not shadow,
                                                      and the workspace directories an editable install
                                                      puts on sys.path with the modules each holds
    python pytest_driver.py run WORKDIR PLUGINS -- PYTEST ARGS

``probe`` runs on the pristine tree, before any change of the agent's is applied. ``run`` takes pytest and
each plugin module (comma-separated ``PLUGINS``) from ``sys.path`` with the workspace and this script's own
directory taken off, then puts the workspace first on ``sys.path`` (as ``python -m pytest`` does) and runs
pytest with plugin autoloading off (PYTEST_DISABLE_PLUGIN_AUTOLOAD, set by the grader) and the probed
plugins named with ``-p``. A module the workspace adds later cannot replace what is already imported, and a
``*.dist-info`` it adds registers no plugin.
"""

import json
import os
import sys

ENTRY_POINT_GROUP = "pytest11"


def outside(workdir):
    """sys.path without the script's directory, the current directory and anything under the workspace."""
    here = os.path.dirname(os.path.abspath(__file__))
    kept = []
    for entry in sys.path:
        real = os.path.realpath(entry or os.getcwd())
        if real == here or real == workdir or real.startswith(workdir + os.sep):
            continue
        kept.append(entry)
    return kept


def plugin_entry_points():
    """(name, module) of every pytest11 entry point installed, first one of each name."""
    found = []
    try:
        from importlib import metadata

        for distribution in metadata.distributions():
            for entry_point in distribution.entry_points:
                if entry_point.group == ENTRY_POINT_GROUP:
                    found.append((entry_point.name, entry_point.value.split(":")[0].strip()))
    except ImportError:  # Python < 3.8: setuptools' pkg_resources, where installed
        try:
            import pkg_resources

            for entry_point in pkg_resources.iter_entry_points(ENTRY_POINT_GROUP):
                found.append((entry_point.name, entry_point.module_name))
        except ImportError:
            pass
    seen, unique = set(), []
    for name, module in found:
        if name not in seen:
            seen.add(name)
            unique.append((name, module))
    return unique


def top_level_modules(paths):
    """Names importable at the top level from ``paths``, the builtins and the standard library."""
    names = set(sys.builtin_module_names)
    names.update(getattr(sys, "stdlib_module_names", ()))
    for entry in paths:
        names.update(modules_in(entry))
    return sorted(names)


def modules_in(entry):
    """The top-level module and package names one ``sys.path`` entry holds."""
    if not os.path.isdir(entry):
        return []
    try:
        listing = os.listdir(entry)
    except OSError:
        return []
    names = set()
    for name in listing:
        if name.endswith(".py"):
            names.add(name[:-3])
        elif name.endswith((".so", ".pyd")):
            names.add(name.split(".", 1)[0])
        elif "." not in name and os.path.isdir(os.path.join(entry, name)) and name.isidentifier():
            names.add(name)
    return sorted(names)


def probe(workdir):
    # A new module at the workspace's root (first on sys.path in `run`) must not take the name of one in
    # these, or the tests would import it in place of the project's code; nor may a new module in one of
    # them take an installed name (they can come before a system site-packages that follows the venv's).
    editable = {}
    for entry in installed_into(workdir):
        editable[os.path.relpath(os.path.realpath(entry), workdir)] = modules_in(entry)
    sys.path[:] = outside(workdir)
    report = {"python": sys.version.split()[0], "plugins": plugin_entry_points()}
    try:
        import pytest

        report["pytest"] = getattr(pytest, "__version__", "?")
        report["pytest_file"] = getattr(pytest, "__file__", "?")
    except Exception as error:  # reported, and the grader says why it cannot run the tests
        report["pytest"] = None
        report["error"] = "%s: %s" % (type(error).__name__, error)
    report["shadowable"] = top_level_modules(sys.path)
    report["editable"] = editable
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


def installed_into(workdir):
    """The entries under the workspace that the environment's site-packages put on sys.path: an editable
    install of a src layout (``pip install -e .``) adds ``WORKDIR/src`` through a .pth file there."""
    here = os.path.dirname(os.path.abspath(__file__))
    kept = []
    for entry in sys.path[1:]:  # sys.path[0] is this script's directory
        if not entry or entry == here:
            continue
        real = os.path.realpath(entry)
        if real != workdir and real.startswith(workdir + os.sep):
            kept.append(entry)
    return kept


def run(workdir, plugins, args):
    # Read before sys.path changes; these come from the prepared venv's .pth files, which the agent cannot
    # change (the venv is read-only): only the modules they lead to are the workspace's.
    startup = list(sys.path)
    editable = installed_into(workdir)
    sys.path[:] = outside(workdir)
    import pytest

    for module in plugins:
        try:
            __import__(module)
        except Exception as error:  # a plugin that does not import is left to pytest's own error
            sys.stderr.write("gym_swe: plugin %s does not import: %s\n" % (module, error))
    # The code under test is found as `python -m pytest` would find it, now that the runner is imported: the
    # workspace first, and each editable entry where site put it, after the site-packages whose .pth named
    # it, so that a module there never takes the place of an installed one.
    sys.path.insert(0, workdir)
    for entry in editable:
        before = [kept for kept in startup[: startup.index(entry)] if kept in sys.path]
        sys.path.insert(sys.path.index(before[-1]) + 1 if before else 1, entry)
    options = []
    for module in plugins:
        options += ["-p", module]
    return pytest.main(options + list(args))


def main(argv):
    mode, workdir = argv[1], os.path.realpath(argv[2])
    if mode == "probe":
        return probe(workdir)
    plugins = [name for name in argv[3].split(",") if name]
    separator = argv.index("--")
    return run(workdir, plugins, argv[separator + 1 :])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
