"""Alias of `orbitlab replay` (the code: orbitlab/cli/replay.py); `python scripts/replay_demos.py --help`."""

import sys

from orbitlab.cli.dispatch import main as orbitlab_main
from orbitlab.cli.replay import *

if __name__ == "__main__":
    sys.exit(orbitlab_main(["replay", *sys.argv[1:]]))
