#!/bin/bash
# Ordinary tests decide reward.txt; checks.json holds values only a correct square() computes, on inputs
# whose results appear nowhere in this folder (gym_swe seals them against the oracle's).
python3 - <<'PY'
import json
import sys

sys.path.insert(0, ".")
try:
    from square import square

    passed = square(3) == 9 and square(-2) == 4 and square(0) == 0
    checks = {"large": square(12345), "negative": square(-777), "one": square(1)}
except Exception as error:  # a missing or broken square.py: no reward, no checks
    print(f"error: {error!r}")
    passed, checks = False, {}
with open("/logs/verifier/checks.json", "w") as out:
    json.dump(checks, out)
with open("/logs/verifier/reward.txt", "w") as out:
    out.write("1" if passed else "0")
PY
