"""semverkit-1: comparing prereleases whose identifiers mix numbers and words crashes.

Bug: Version._key() puts the raw prerelease tuple (ints and strs mixed) into
the sort key, so comparing e.g. ("alpha", 1) with ("alpha", "beta") ends up
comparing 1 < "beta" -> TypeError.  SemVer says numeric identifiers always
sort before alphanumeric ones.

Secret check (what the grader seals against a forged report): the order of
seven ``v2.4.0`` tags mixing numeric and alphanumeric identifiers, a list
written nowhere in the issue or the repository.
"""

BASE = 5
CREATED_AT = "2024-02-26T08:41:13Z"

PROBLEM_STATEMENT = """
sort_versions() raises TypeError for some prerelease tags

We use semverkit to order the release tags of our internal packages before
publishing a changelog.  One package has both `1.0.0-alpha.1` and
`1.0.0-alpha.beta` tags, and sorting blows up:

```python
from semverkit import sort_versions

tags = ["1.0.0", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-rc.1", "0.9.0"]
print(sort_versions(tags))
```

```
Traceback (most recent call last):
  File "order_tags.py", line 4, in <module>
    print(sort_versions(tags))
  File ".../semverkit/version.py", line 212, in sort_versions
    return sorted((Version.parse(v) for v in versions), reverse=reverse)
  File ".../semverkit/version.py", line 189, in __lt__
    return self._key() < other._key()
TypeError: '<' not supported between instances of 'str' and 'int'
```

Plain comparisons fail the same way, e.g.
`Version.parse("1.0.0-alpha.1") < Version.parse("1.0.0-alpha.beta")`, and so
does `1.0.0-1` vs `1.0.0-alpha`.

I expected the order from the SemVer spec (section 11):
1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-alpha.beta < 1.0.0-beta < 1.0.0-beta.2 <
1.0.0-beta.11 < 1.0.0-rc.1 < 1.0.0

semverkit 0.2.0, Python 3.11.7 on Ubuntu 22.04
"""

HINTS_TEXT = """
Thanks for the report. The spec says numeric identifiers always have lower
precedence than alphanumeric identifiers, we only ever tested lists where the
identifiers at the same position were of the same kind.
"""

PATCH = [
    {
        "file": "semverkit/version.py",
        "replace": """\
        if self.prerelease:
            return (self.major, self.minor, self.patch, 0, self.prerelease)
""",
        "with": """\
        if self.prerelease:
            # Numeric identifiers sort before alphanumeric ones; tag each
            # identifier so that an int is never compared with a str.
            prerelease = tuple((0, p) if isinstance(p, int) else (1, p) for p in self.prerelease)
            return (self.major, self.minor, self.patch, 0, prerelease)
""",
    },
]

TEST_PATCH = [
    {
        "file": "tests/test_version.py",
        "replace": """\
    def test_compare_with_string(self):
""",
        "with": """\
    def test_sort_mixed_identifiers(self):
        versions = ["1.0.0-rc.1", "1.0.0-alpha.beta", "1.0.0", "1.0.0-alpha.1", "1.0.0-alpha"]
        assert [str(v) for v in sort_versions(versions)] == [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-rc.1",
            "1.0.0",
        ]

    def test_compare_with_string(self):
""",
    },
    {
        "file": "tests/test_version.py",
        "append": """

SPEC_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
]


@pytest.mark.parametrize("lower,higher", list(zip(SPEC_ORDER, SPEC_ORDER[1:])))
def test_spec_precedence_chain(lower, higher):
    assert Version.parse(lower) < Version.parse(higher)
    assert Version.parse(higher) > Version.parse(lower)


def test_numeric_identifiers_sort_before_alphanumeric():
    assert Version.parse("1.0.0-1") < Version.parse("1.0.0-alpha")
    assert Version.parse("1.0.0-rc.9") < Version.parse("1.0.0-rc.final")
    assert max(Version.parse("2.0.0-0"), Version.parse("2.0.0-x")) == "2.0.0-x"
    tags = ["v2.4.0-rc.10", "v2.4.0-7", "v2.4.0-rc.x", "v2.4.0", "v2.4.0-rc", "v2.4.0-42", "v2.4.0-rc.9"]
    assert [str(v) for v in sort_versions(tags)] == [
        "2.4.0-7",
        "2.4.0-42",
        "2.4.0-rc",
        "2.4.0-rc.9",
        "2.4.0-rc.10",
        "2.4.0-rc.x",
        "2.4.0",
    ]
""",
    },
]

FAIL_TO_PASS = [
    "tests/test_version.py::TestOrdering::test_sort_mixed_identifiers",
    "tests/test_version.py::test_spec_precedence_chain[1.0.0-alpha.1-1.0.0-alpha.beta]",
    "tests/test_version.py::test_numeric_identifiers_sort_before_alphanumeric",
]
