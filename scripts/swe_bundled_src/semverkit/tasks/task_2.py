"""semverkit-2: ^0.0.x caret ranges are too wide.

Bug: _caret() handles a zero major (bump the minor) but not a zero major AND
minor, where only the patch may not change: ^0.0.3 must mean >=0.0.3 <0.0.4,
it gives >=0.0.3 <0.1.0.  The README table documents the right meaning.

Secret check: ``str(Range("^0.0.19"))``; the issue and the README only
spell out ^0.0.3.
"""

BASE = 8
CREATED_AT = "2024-04-04T15:02:51Z"

PROBLEM_STATEMENT = """
Caret range ^0.0.3 accepts 0.0.9

The README says the caret "allows changes that do not modify the left-most
non-zero part" and even lists `^0.0.3` as `>=0.0.3 <0.0.4`.  That is not what
happens:

    >>> from semverkit import Range, max_satisfying
    >>> r = Range("^0.0.3")
    >>> str(r)
    '>=0.0.3 <0.1.0'
    >>> r.contains("0.0.4")
    True
    >>> max_satisfying(["0.0.3", "0.0.4", "0.0.9", "0.1.0"], "^0.0.3")
    Version('0.0.9')

For a 0.0.x package every patch release may be breaking, which is the whole
point of pinning with ^0.0.3 - our dependency resolver happily picked up
0.0.9 and broke the build.  `^0.2.3` works as documented (`<0.3.0`).

semverkit 0.3.0 / CPython 3.12.1 / macOS 14
"""

HINTS_TEXT = ""

PATCH = [
    {
        "file": "semverkit/range.py",
        "replace": """\
    if partial.major > 0 or partial.minor is None:
        upper = Version(partial.major + 1, 0, 0)
    else:
        upper = Version(0, partial.minor + 1, 0)
    return [Comparator(">=", partial.floor()), Comparator("<", upper)]
""",
        "with": """\
    if partial.major > 0 or partial.minor is None:
        upper = Version(partial.major + 1, 0, 0)
    elif partial.minor > 0 or partial.patch is None:
        upper = Version(0, partial.minor + 1, 0)
    else:
        upper = Version(0, 0, partial.patch + 1)
    return [Comparator(">=", partial.floor()), Comparator("<", upper)]
""",
    },
]

TEST_PATCH = [
    {
        "file": "tests/test_range.py",
        "replace": """\
    def test_caret_partial(self):
""",
        "with": """\
    def test_caret_zero_zero_patch(self):
        assert str(Range("^0.0.3")) == ">=0.0.3 <0.0.4"
        assert str(Range("^0.0.19")) == ">=0.0.19 <0.0.20"

    def test_caret_zero_zero_excludes_next_patch(self):
        rng = Range("^0.0.3")
        assert rng.contains("0.0.3")
        assert not rng.contains("0.0.4")
        assert str(max_satisfying(["0.0.3", "0.0.4", "0.0.9", "0.1.0"], "^0.0.3")) == "0.0.3"

    def test_caret_partial(self):
""",
    },
]

FAIL_TO_PASS = [
    "tests/test_range.py::TestCaret::test_caret_zero_zero_patch",
    "tests/test_range.py::TestCaret::test_caret_zero_zero_excludes_next_patch",
]
