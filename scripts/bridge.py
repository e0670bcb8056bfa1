"""Alias of `orbitlab bridge` (the code: orbitlab/cli/bridge.py)."""

import sys

from orbitlab.cli.bridge import *
from orbitlab.cli.bridge import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
