"""tabletext-4: None in a column with a format spec crashes rendering.

Bug: Column.format() applies ``fmt`` before checking for None, so a missing
value in a formatted column raises TypeError instead of showing the
column's ``missing`` text.  Fix: check for None first (a two-line move).

Secret check: a second table, two formatted columns with a None in each,
rendered; the issue only shows the region/revenue table.
"""

BASE = 3
CREATED_AT = "2024-02-05T11:52:18Z"

PROBLEM_STATEMENT = """
TypeError: unsupported format string passed to NoneType.__format__

Rendering a report where one region has no revenue yet:

```python
from tabletext import Column, Table

t = Table(["region", Column("revenue", fmt=",.2f", missing="n/a")], style="simple")
t.add_row("EMEA", 12500.0)
t.add_row("APAC", None)
print(t)
```

```
Traceback (most recent call last):
  File "report.py", line 6, in <module>
    print(t)
  File ".../tabletext/table.py", line 38, in __str__
    return self.render()
           ^^^^^^^^^^^^^
  File ".../tabletext/table.py", line 83, in render
    body = [self._cells(row) for row in self.rows]
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File ".../tabletext/table.py", line 83, in <listcomp>
    body = [self._cells(row) for row in self.rows]
            ^^^^^^^^^^^^^^^^
  File ".../tabletext/table.py", line 77, in _cells
    return [[column.format(value)] for column, value in zip(self.columns, values)]
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File ".../tabletext/table.py", line 77, in <listcomp>
    return [[column.format(value)] for column, value in zip(self.columns, values)]
             ^^^^^^^^^^^^^^^^^^^^
  File ".../tabletext/column.py", line 53, in format
    return format(value, self.fmt)
           ^^^^^^^^^^^^^^^^^^^^^^^
TypeError: unsupported format string passed to NoneType.__format__
```

Without `fmt` the None is shown as the `missing` text as documented
("`missing`: what to show for `None` values"). I expected

```
region    revenue
------  ---------
EMEA    12,500.00
APAC          n/a
```

Same with a callable `fmt`: it gets called with None and usually blows up.

tabletext 0.1.0 (main), Python 3.11.7
"""

HINTS_TEXT = """
The None check in Column.format() comes after the fmt branch. A formatter
should never see None; missing values always show `missing`.
"""

PATCH = [
    {
        "file": "tabletext/column.py",
        "replace": """\
        \"\"\"The text shown for *value*.\"\"\"
        if self.fmt is not None:
            if callable(self.fmt):
                return str(self.fmt(value))
            return format(value, self.fmt)
        if value is None:
            return self.missing
        return str(value)
""",
        "with": """\
        \"\"\"The text shown for *value*.\"\"\"
        if value is None:
            return self.missing
        if self.fmt is not None:
            if callable(self.fmt):
                return str(self.fmt(value))
            return format(value, self.fmt)
        return str(value)
""",
    },
]

TEST_PATCH = [
    {
        "file": "tests/test_column.py",
        "replace": """\


class TestAlignment:
""",
        "with": """\


def test_missing_value_with_format_spec():
    assert Column("revenue", fmt=",.2f", missing="n/a").format(None) == "n/a"
    assert Column("revenue", fmt=",.2f").format(None) == ""


def test_missing_value_is_not_passed_to_callable_fmt():
    column = Column("day", fmt=lambda d: d.strftime("%d %b"), missing="-")
    assert column.format(None) == "-"


class TestAlignment:
""",
    },
    {
        "file": "tests/test_table.py",
        "append": """

def test_none_in_formatted_column():
    table = Table(["region", Column("revenue", fmt=",.2f", missing="n/a")], style="simple")
    table.add_row("EMEA", 12500.0)
    table.add_row("APAC", None)
    assert table.render().splitlines() == [
        "region    revenue",
        "------  ---------",
        "EMEA    12,500.00",
        "APAC          n/a",
    ]
    readings = [Column("reading", fmt="+.3f", missing="offline"), Column("samples", fmt=",d", missing="?")]
    table = Table(["sensor", *readings], style="simple")
    table.add_row("kiln-7", -3.14159, 48213)
    table.add_row("vault-2", None, 905)
    table.add_row("dock-11", 0.5, None)
    assert table.render().splitlines() == [
        "sensor   reading  samples",
        "-------  -------  -------",
        "kiln-7    -3.142   48,213",
        "vault-2  offline      905",
        "dock-11   +0.500        ?",
    ]
""",
    },
]

FAIL_TO_PASS = [
    "tests/test_column.py::test_missing_value_with_format_spec",
    "tests/test_column.py::test_missing_value_is_not_passed_to_callable_fmt",
    "tests/test_table.py::test_none_in_formatted_column",
]
