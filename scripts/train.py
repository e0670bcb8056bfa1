"""Alias of `orbitlab train` (the code: orbitlab/cli/train.py); `python scripts/train.py --help`."""

import sys

from orbitlab.cli.dispatch import main as orbitlab_main
from orbitlab.cli.train import *

if __name__ == "__main__":
    sys.exit(orbitlab_main(["train", *sys.argv[1:]]))
