"""inikit-3: getlist() keeps empty items.

Bug: convert.to_list() strips items but never drops the empty ones, so the
multi-line list style with trailing commas that the README recommends gives
``['auth', '', 'cache', ...]`` and an empty value gives ``['']``.
One-line fix.  Hidden tests: two new methods of the TestToList class and a
Config-level test in a second test file.

Secret check: a ``;``-separated multi-line list with empty items, whose
items appear nowhere in the issue or the repository.
"""

BASE = 6
CREATED_AT = "2024-02-28T21:03:12Z"

PROBLEM_STATEMENT = """
getlist returns empty strings for trailing commas

The README shows this layout for lists and says "Empty items are skipped, so
trailing commas are harmless":

```ini
[app]
plugins = auth,
    cache,
    metrics,
extra =
```

but

```python
>>> config.getlist("app", "plugins")
['auth', '', 'cache', '', 'metrics', '']
>>> config.getlist("app", "extra")
['']
```

We then try to import a plugin called `''`. Expected `['auth', 'cache',
'metrics']` and `[]`.

Python 3.13.0, inikit 0.2.0
"""

HINTS_TEXT = ""

PATCH = [
    {
        "file": "inikit/convert.py",
        "replace": """\
        items.extend(item.strip() for item in line.split(sep))
""",
        "with": """\
        items.extend(item.strip() for item in line.split(sep) if item.strip())
""",
    },
]

TEST_PATCH = [
    {
        "file": "tests/test_convert.py",
        "replace": """\
    def test_one_item_per_line(self):
        assert to_list("first\\nsecond, third") == ["first", "second", "third"]
""",
        "with": """\
    def test_one_item_per_line(self):
        assert to_list("first\\nsecond, third") == ["first", "second", "third"]

    def test_trailing_separators_are_ignored(self):
        assert to_list("auth,\\ncache,\\nmetrics,") == ["auth", "cache", "metrics"]
        assert to_list("a,, b") == ["a", "b"]
        assert to_list("ldap-sync;\\n  audit log ;;\\n  rate-limiter;", sep=";") == [
            "ldap-sync",
            "audit log",
            "rate-limiter",
        ]

    def test_empty_value_gives_empty_list(self):
        assert to_list("") == []
        assert to_list(" , ") == []
""",
    },
    {
        "file": "tests/test_document.py",
        "append": """

def test_getlist_multiline_with_trailing_commas():
    config = loads("[app]\\nplugins = auth,\\n    cache,\\n    metrics,\\nextra =\\n")
    assert config.getlist("app", "plugins") == ["auth", "cache", "metrics"]
    assert config.getlist("app", "extra") == []
""",
    },
]

FAIL_TO_PASS = [
    "tests/test_convert.py::TestToList::test_trailing_separators_are_ignored",
    "tests/test_convert.py::TestToList::test_empty_value_gives_empty_list",
    "tests/test_document.py::test_getlist_multiline_with_trailing_commas",
]
