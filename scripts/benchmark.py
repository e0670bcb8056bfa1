"""Alias of `orbitlab bench` (the code: orbitlab/cli/bench.py); `python scripts/benchmark.py --help`."""

import sys

from orbitlab.cli.bench import *
from orbitlab.cli.dispatch import main as orbitlab_main

if __name__ == "__main__":
    sys.exit(orbitlab_main(["bench", *sys.argv[1:]]))
