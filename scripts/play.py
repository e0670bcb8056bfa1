"""Alias of `orbitlab play` (the code: orbitlab/cli/play.py); `python scripts/play.py --help`."""

import sys

from orbitlab.cli.dispatch import main as orbitlab_main
from orbitlab.cli.play import *

if __name__ == "__main__":
    sys.exit(orbitlab_main(["play", *sys.argv[1:]]))
