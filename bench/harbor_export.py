"""An exported SWE task's verification with its seals learned at export (``--build``) against one that learns
them at every verification (no ``--build``): the same bundled task exported both ways, its gold fix played
the Harbor way with docker (tests/integrations/harbor_play.py) ``--rounds`` times, alternating. Prints the
medians of the grader's own duration (grade.json) and of the whole play (container start, commands, test.sh),
and their ratios (with seals / without). The first play of each is untimed (image builds).

    python bench/harbor_export.py --task gymswe__semverkit-1 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import tomllib

from tests.integrations.harbor_play import docker, export, play, remove_images


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", default="gymswe__semverkit-1", help="a bundled SWEGym-v0 task id")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    from gym_swe.tasks.images import build_task_image
    from gym_swe.tasks.repos import RepoSource
    from gym_swe.tasks.swe import load_swe_tasks

    build_task_image(load_swe_tasks("bundled").get(args.task), RepoSource(None), log=lambda _: None)
    times: dict[str, dict[str, list[float]]] = {
        mode: {"grader": [], "play": []} for mode in ("learns", "sealed")
    }
    with tempfile.TemporaryDirectory(prefix="gym_swe-bench-export-") as scratch:
        folders = {}
        for mode, flags in (("learns", []), ("sealed", ["--build"])):
            out = Path(scratch) / mode
            done = export(Path(scratch), "--format", "harbor", "--env", "SWEGym-v0", "--out", str(out),
                          "--task-id", args.task, *flags)  # fmt: skip
            if done.returncode != 0:
                print(done.stderr, file=sys.stderr)
                return 1
            (folders[mode],) = [path for path in out.iterdir() if path.is_dir()]
        gold = (folders["learns"] / "solution" / "solve.sh").read_text()
        built = tomllib.loads((folders["sealed"] / "task.toml").read_text())["environment"]["docker_image"]
        try:
            for round_ in range(args.rounds + 1):
                for mode, folder in folders.items():
                    started = time.perf_counter()
                    played = play(folder, [gold])
                    seconds = time.perf_counter() - started
                    if played.reward != 1.0:
                        print(f"{mode}: the gold fix earned {played.reward}: {played.grade}", file=sys.stderr)
                        return 1
                    if round_:  # the first: image builds
                        times[mode]["grader"].append(played.grade["duration"])
                        times[mode]["play"].append(seconds)
        finally:
            remove_images()
            docker("rmi", "-f", built, check=False)
    medians = {mode: {part: statistics.median(values) for part, values in parts.items()}
               for mode, parts in times.items()}  # fmt: skip
    for part in ("grader", "play"):
        ratio = medians["sealed"][part] / medians["learns"][part]
        print(f"{part}: seals from the export {medians['sealed'][part]:.2f} s, learned in the verification "
              f"{medians['learns'][part]:.2f} s, ratio {ratio:.2f}x (median of {args.rounds})")  # fmt: skip
    print(json.dumps({"task": args.task, "rounds": args.rounds, "medians": medians, "all": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
