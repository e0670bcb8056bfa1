"""Alias of `orbitlab export` (the code: orbitlab/cli/export.py); `python scripts/export.py --help`."""

import sys

from orbitlab.cli.dispatch import main as orbitlab_main
from orbitlab.cli.export import *

if __name__ == "__main__":
    sys.exit(orbitlab_main(["export", *sys.argv[1:]]))
