"""docs/swebench.md §6's table of real instances, from the results files of each run (bench/real_*.md and
bench/real_instances_pytest.md): one row per instance, its local and docker validation, the tests that
passed with the gold patch and with none, and the cause where it does not validate.

    python bench/swebench_table.py            # prints the table and the per-repository counts
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EARLIER = "| instance | set | version | validated | sealed | reason |"  # §6's table of 2026-11-27


def rows(text: str, header_start: str) -> list[dict[str, str]]:
    """The rows of the first markdown table whose header line starts with ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    names = [cell.strip() for cell in lines[start].strip().strip("|").split("|")]
    found = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        found.append(dict(zip(names, cells, strict=False)))
    return found


def short(cause: str, limit: int = 150) -> str:
    cause = re.sub(r"\s+", " ", cause).strip()
    return cause if len(cause) <= limit else cause[: limit - 3].rsplit(" ", 1)[0] + "..."


def main() -> None:
    table: dict[str, dict[str, str]] = {}

    def put(instance: str, **fields: str) -> None:
        row = table.setdefault(instance, {"instance": instance})
        # a later run of the same instance decides: its cause replaces an earlier one's, even when empty
        row.update({key: value for key, value in fields.items() if value or key in ("cause", "docker_cause")})

    docs = (ROOT / "bench" / "real_instances_pytest.md").read_text()
    for row in rows(docs, EARLIER):
        instance = row["instance"].split(" (")[0]  # "ID (new)", "ID (date, note)"
        ok = row["validated"] == "y"
        fix = re.search(r"fix (\d+/\d+), no fix (\d+/\d+)", row["reason"])
        put(instance, set=row["set"], version=row["version"], local="ok" if ok else "FAIL",
            fix=fix.group(1) if fix else "-", none=fix.group(2) if fix else "-",
            cause="" if ok else short(row["reason"]), source="real_instances_pytest.md")  # fmt: skip
    bench = ROOT / "bench"
    for row in rows((bench / "real_instances_django.md").read_text(), "| instance | set | version | rebased"):
        local, docker = row["validated local"], row["validated docker"]
        fix, none = row["fix"].split(" (")[0], row["no fix"].split(" (")[0]
        put(row["instance"], set=row["set"], version=row["version"], local=local,
            docker=docker if docker != "-" else "", fix=fix, none=none,
            cause=short(row.get("cause when not / note", "")),
            source="real_instances_django.md")  # fmt: skip
    for row in rows(
        (bench / "real_instances_compiled.md").read_text(), "| instance | set | version | checkout"
    ):
        if "documented way" in row["checkout"] and row["prepared"] == "n" and row["instance"] in table:
            continue  # the same instance again with system libraries, below or above
        ok = row["validated"] == "y"
        put(row["instance"], set=row["set"], version=row["version"],
            local="ok" if ok else ("FAIL" if row["validated"] == "n" else row["validated"]),
            fix=row["fix"], none=row["no fix"], cause=short(row["cause when not"]),
            source="real_instances_compiled.md")  # fmt: skip
    sympy = bench / "real_instances_sympy.md"
    if sympy.is_file():
        for row in rows(sympy.read_text(), "| instance | set | version | prepared"):
            ok = row["validated local"] == "ok"
            # "ID, before the fix" / "ID, again": the same instance, the later row deciding
            put(row["instance"].split(",")[0], set=row["set"], version=row["version"],
                local=row["validated local"], fix=row["fix"], none=row["no fix"],
                cause=short(row["cause when not"]), source="real_instances_sympy.md")  # fmt: skip
        for row in rows(sympy.read_text(), "| instance | set | version | image built"):
            ok = row["validated docker"] == "ok"
            put(row["instance"].split(",")[0], docker=row["validated docker"],
                docker_cause="" if ok else "docker: " + short(row["cause when not"]))  # fmt: skip
    docker = bench / "real_instances_docker.md"
    if docker.is_file():
        for row in rows(docker.read_text(), "| instance | repo | image python"):
            if row["instance"] == "TABLE":
                continue
            ok = row["validated"] in ("ok", "yes")
            put(row["instance"], docker="ok" if ok else "FAIL",
                docker_cause="" if ok else "docker: " + short(row.get("cause when not", "")))  # fmt: skip
    for extra in sys.argv[1:]:  # instance=local:fix:none:version:set
        instance, _, value = extra.partition("=")
        local, fix, none, version, set_ = value.split(":")
        put(instance, local=local, fix=fix, none=none, version=version, set=set_)

    columns = ["repository", "instance", "set", "version", "local", "docker", "fix", "no fix",
               "cause where not valid, or a note"]  # fmt: skip
    print("| " + " | ".join(columns) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    by_repo: dict[str, Counter[str]] = defaultdict(Counter)
    for instance in sorted(table, key=lambda name: (name.split("__")[0], name)):
        row = table[instance]
        repo = instance.split("-")[0].replace("__", "/") if "__" in instance else instance
        repo = re.sub(r"-\d+$", "", instance).replace("__", "/")
        cause = "; ".join(filter(None, [row.get("cause", ""), row.get("docker_cause", "")]))
        print(f"| {repo} | {instance} | {row.get('set', '')} | {row.get('version', '')} | "
              f"{row.get('local', '')} | {row.get('docker', '')} | {row.get('fix', '')} | "
              f"{row.get('none', '')} | {cause} |")  # fmt: skip
        by_repo[repo]["instances"] += 1
        by_repo[repo]["local ok"] += row.get("local") == "ok"
        by_repo[repo]["docker ok"] += row.get("docker") == "ok"
        by_repo[repo]["docker run"] += bool(row.get("docker"))
    print()
    print("| repository | instances | valid on local | run on docker | valid on docker |")
    print("|---|---|---|---|---|")
    total: Counter[str] = Counter()
    for repo, counts in sorted(by_repo.items()):
        total.update(counts)
        print(f"| {repo} | {counts['instances']} | {counts['local ok']} | {counts['docker run']} | "
              f"{counts['docker ok']} |")  # fmt: skip
    print(
        f"| all | {total['instances']} | {total['local ok']} | {total['docker run']} | {total['docker ok']} |"
    )


if __name__ == "__main__":
    main()
