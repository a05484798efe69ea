"""Django's own test runner, ``tests/runtests.py`` (the django/django tasks of SWE-bench, Django 1.11-5.0).

SWE-bench runs ``./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 LABELS`` from the
repository's root (its records' ``eval_script``), the labels being the test patch's files as modules
relative to ``tests/`` (``tests/foo/test_x.py`` -> ``foo.test_x``), and reads the verbose lines
``<id> ... ok``. The ids its records hold come in three shapes (the django ids of SWE-bench Lite and
Verified: 10,609 distinct ones):

- ``test_name (module.Class)``, unittest's name of a test up to Python 3.10, the module dotted from
  ``tests/`` (``test_foo (admin_views.tests.AdminViewBasicTest)``): 7,735 ids. Node id
  ``tests/admin_views/tests.py::AdminViewBasicTest::test_foo``: the module is the longest dotted prefix that
  is one of the files read, the rest the class (a nested class's qualified name).
- ``test_name (module.Class.test_name)``, the same from Python 3.11 on (Django 4.x-5.x tasks): 1,074 ids.
  The same node id, the trailing ``.test_name`` dropped.
- The first line of the test method's docstring, which the verbose runner prints in place of the name
  (``Regression test for #10348: ChangeList.get_results() ...``, ``--help is equivalent to help``, even
  ``"``): 1,800 ids. Python <= 3.6 takes the docstring's first line as it is (a docstring that opens with a
  newline prints no description, so its test has a name-shaped id), later ones its first non-blank line: the
  second reading covers both. Matched against every ``test*`` method of the files read, a method inherited
  from a class of those files counting for each subclass that does not define it again; a plain mixin (a
  class with no bases) runs nowhere by itself. A method decorated with asgiref's ``async_to_sync`` prints
  the docstring of that wrapper's class, whatever its own (`ASYNC_TO_SYNC_LINE`, django__django-16136).
  Two tests or more share the line of about one docstring id
  in six (123 of the 796 of the 3.0 and 5.0 tasks, in those releases' files: the serializers' formats, a
  family of variants documented alike); SWE-bench's log parser kept the status printed last, so the id
  maps to the last of them in unittest's order (the files in the order given, classes by name, methods by
  name), which is Django's own order where the classes are of one kind (Django runs TestCase classes
  before the others).

No subTest-suffixed id occurs (a verbose run prints no line per subTest before Python 3.11, and a failing
subTest fails its test either way). `unsupported` refuses only an id that no shape can be: empty, more than
one line, or with blanks around it (the parser strips its lines): none of the 10,609.

The files a task's tests are in: the test patch's Python files under ``tests/`` (SWE-bench's labels; a file
the patch deletes is left out), and the module of each name-shaped id that is not one of them (a class
imported into a patched module runs under its own module's name: django__django-14238), which also covers a
patch of data files only (django__django-10097, where SWE-bench ran the whole suite; here the modules its
ids name). What is not seen: a docstring id of a test outside all of those files; and a patched file
outside ``tests/`` is no label here (SWE-bench passes ``django.test.testcases`` for django__django-14011,
a module with no tests).

The shim (`django_driver`) runs ``runtests.py`` in-process and streams one line per test as it ends, named
by the class's own module, with the runner's own names beside the node id (``id``: unittest's name,
``doc``: the docstring line the run printed, if any; see its docstring).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from shlex import quote
from typing import TYPE_CHECKING

from gym_swe.grading.runners.base import TestRunner
from gym_swe.tasks.id_formats import unreadable

if TYPE_CHECKING:
    from gym_swe.grading.environment import Environment

TESTS_DIR = "tests/"
RUNTESTS_ARGS = ("--verbosity", "2", "--settings=test_sqlite", "--parallel", "1")
"""SWE-bench's arguments to ``runtests.py``, before the labels."""

ASYNC_TO_SYNC_LINE = "Utility class which turns an awaitable that only works on the thread with"
"""What a test method decorated with asgiref's ``async_to_sync`` prints for its docstring: the wrapper
object's, its class's (asgiref 3.2-3.8), whatever the method's own."""

_NAMED = re.compile(r"^(?P<name>\w+) \((?P<dotted>\w+(?:\.\w+)*)\)$")
_DIFF_HEADER = re.compile(r"^diff --git a/(?P<a>.*) b/(?P<b>.*)$")


@dataclass
class _Class:
    file: str
    qualname: str
    bases: list[str]
    """The last dotted part of each base (``TestCase``, ``Mixin``)."""
    methods: dict[str, str | None]
    """Its own ``test*`` methods -> their docstring lines."""


class DjangoRunner(TestRunner):
    """``tests/runtests.py`` through `django_driver` (see the module's docstring)."""

    name = "django"
    driver = "django_driver.py"

    def unsupported(self, ids: Sequence[str]) -> list[str]:
        return unreadable(self.name, ids)

    def test_files(self, ids: Sequence[str], test_patch: str) -> list[str]:
        files: list[str] = []
        for path in patched_files(test_patch):
            if path.startswith(TESTS_DIR) and path.endswith(".py") and path not in files:
                files.append(path)
        modules = {module_of(path) for path in files}
        for test_id in ids:
            named = _parse_named(test_id)
            if named is None:
                continue
            dotted = named[1]
            module = _guess_module(dotted)
            if module and module not in modules:
                modules.add(module)
                files.append(TESTS_DIR + module.replace(".", "/") + ".py")
        return files

    def node_ids(self, ids: Sequence[str], sources: Mapping[str, str]) -> dict[str, str]:
        classes = _classes(sources)
        by_module = {module_of(file): file for file in sources if file.startswith(TESTS_DIR)}
        doc_index: dict[str, list[tuple[str, str, str]]] | None = None
        found: dict[str, str] = {}
        for test_id in ids:
            named = _parse_named(test_id)
            node = _named_node(named, by_module, classes) if named else None
            if node is None:
                if doc_index is None:
                    doc_index = _doc_index(classes)
                matches = doc_index.get(test_id.strip())
                if matches:
                    file, qualname, method = matches[-1]
                    node = "::".join([file, *qualname.split("."), method])
            if node is not None:
                found[test_id] = node
        return found

    def command(
        self,
        workdir: str,
        driver: str,
        files: Sequence[str],
        environment: Environment | None = None,
        options: Sequence[str] = (),
    ) -> str:
        labels = []
        for path in files:
            if path.startswith(TESTS_DIR) and path.endswith(".py"):
                label = module_of(path)
                if label not in labels:
                    labels.append(label)
        arguments = " ".join(quote(part) for part in (*RUNTESTS_ARGS, *labels))
        shim = f"python {quote(driver)} run {quote(workdir)} -- ./tests/runtests.py"
        return f"cd {quote(workdir)} && {shim} {arguments}"

    def environment(self) -> dict[str, str]:
        # SWE-bench's eval scripts export en_US.UTF-8 (generated there by locale-gen, and PYTHONIOENCODING
        # for 1.11-2.2); C.UTF-8 is the UTF-8 locale every sandbox here has.
        return {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "LANGUAGE": "en_US:en", "PYTHONIOENCODING": "utf8"}


def patched_files(patch: str) -> list[str]:
    """The files a patch leaves in the tree (its ``b/`` side; a deleted file is left out)."""
    files: list[str] = []
    current: str | None = None
    for line in patch.splitlines():
        header = _DIFF_HEADER.match(line)
        if header:
            current = header["b"]
            files.append(current)
        elif current is not None and line == "+++ /dev/null":
            files.remove(current)
            current = None
    return files


def module_of(path: str) -> str:
    """The dotted module of a file under ``tests/`` as runtests.py's labels name it (``tests/foo/tests.py``
    -> ``foo.tests``; an ``__init__.py`` keeps its name, as SWE-bench's labels do)."""
    return path[len(TESTS_DIR) : -len(".py")].replace("/", ".")


def _parse_named(test_id: str) -> tuple[str, str] | None:
    match = _NAMED.match(test_id)
    return (match["name"], match["dotted"]) if match else None


def _guess_module(dotted: str) -> str | None:
    """The module of ``module.Class`` (or ``module.Class.test_name``) without the tree: the parts before the
    first one that opens with a capital letter (Django's test classes all do, its modules none)."""
    parts = dotted.split(".")
    for index, part in enumerate(parts):
        if part[:1].isupper():
            return ".".join(parts[:index]) or None
    return ".".join(parts[:-1]) or None


def _named_node(
    named: tuple[str, str], by_module: Mapping[str, str], classes: Mapping[tuple[str, str], _Class]
) -> str | None:
    """The node of ``name (module.Class)`` or ``name (module.Class.name)``: the reading whose class is one of
    the files' classes; where none is, the new shape's (a nested class named like the test is no reading),
    as long as its module is one of the files."""
    name, dotted = named
    readings = [dotted[: -len(name) - 1]] if dotted.endswith("." + name) else []
    readings.append(dotted)
    candidates = []
    for reading in readings:
        parts = reading.split(".")
        for cut in range(len(parts) - 1, 0, -1):  # the longest module prefix that is a file read
            file = by_module.get(".".join(parts[:cut]))
            if file is None:
                continue
            node = "::".join([file, *parts[cut:], name])
            if (file, ".".join(parts[cut:])) in classes:
                return node
            candidates.append(node)
            break
    return candidates[0] if candidates else None


def _classes(sources: Mapping[str, str]) -> dict[tuple[str, str], _Class]:
    """Every class of the files (nested ones under their qualified names), in the files' order."""
    found: dict[tuple[str, str], _Class] = {}

    def visit(body: list[ast.stmt], file: str, prefix: str) -> None:
        for statement in body:
            if isinstance(statement, ast.ClassDef):
                qualname = prefix + statement.name
                bases = [_last_name(base) for base in statement.bases]
                methods = {
                    item.name: _doc_line(item)
                    for item in statement.body
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and item.name.startswith("test")
                }
                found[(file, qualname)] = _Class(file, qualname, [base for base in bases if base], methods)
                visit(statement.body, file, qualname + ".")
            elif isinstance(statement, (ast.If, ast.Try, ast.With)):  # classes under a version check
                for block in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(statement, block, [])
                    for item in inner:
                        visit(item.body if isinstance(item, ast.ExceptHandler) else [item], file, prefix)

    for file, text in sources.items():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        visit(tree.body, file, "")
    return found


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):  # a class factory: unknown, but a base all the same
        return "?"
    return ""


def _doc_line(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    for decorator in function.decorator_list:
        if _last_name(decorator) == "async_to_sync":
            return ASYNC_TO_SYNC_LINE
    doc = ast.get_docstring(function, clean=False)
    if not doc or not doc.strip():
        return None
    return doc.strip().split("\n")[0].strip()


def _doc_index(classes: Mapping[tuple[str, str], _Class]) -> dict[str, list[tuple[str, str, str]]]:
    """Docstring line -> the (file, class, method) of each test that prints it, the one printed last last."""
    by_name: dict[str, list[_Class]] = {}
    for cls in classes.values():
        by_name.setdefault(cls.qualname.rsplit(".", 1)[-1], []).append(cls)
    merged: dict[tuple[str, str], dict[str, str | None]] = {}

    def methods(cls: _Class, seen: frozenset[tuple[str, str]] = frozenset()) -> dict[str, str | None]:
        """Its test methods with those it inherits from classes of the files (a base of another file too:
        a name, as the ids give no more)."""
        key = (cls.file, cls.qualname)
        if key in merged:
            return merged[key]
        result: dict[str, str | None] = {}
        for base in reversed(cls.bases):  # the first base wins, roughly as the MRO has it
            for parent in by_name.get(base, []):
                if (parent.file, parent.qualname) not in seen | {key}:
                    result.update(methods(parent, seen | {key}))
                    break
        result.update(cls.methods)
        merged[key] = result
        return result

    index: dict[str, list[tuple[str, str, str]]] = {}
    files = list(dict.fromkeys(cls.file for cls in classes.values()))
    for file in files:
        # unittest loads a module's classes by name (dir()); a class with no bases is a mixin, run by none
        runnable = sorted(
            (cls for cls in classes.values() if cls.file == file and cls.bases and cls.bases != ["object"]),
            key=lambda cls: cls.qualname,
        )
        for cls in runnable:
            for name, line in sorted(methods(cls).items()):
                if line:
                    index.setdefault(line, []).append((file, cls.qualname, name))
    return index
