"""Alias of `orbitlab record` (the code: orbitlab/cli/record.py); `python scripts/record_demos.py --help`."""

import sys

from orbitlab.cli.dispatch import main as orbitlab_main
from orbitlab.cli.record import *

if __name__ == "__main__":
    sys.exit(orbitlab_main(["record", *sys.argv[1:]]))
