"""``python -m gym_swe.cli``: the ``gym-swe`` command without its console script."""

import sys

from gym_swe.cli import main

sys.exit(main())
