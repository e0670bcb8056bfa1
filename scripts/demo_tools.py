"""Demo-file tools.

    python scripts/demo_tools.py summary file=demos.hdf5
    python scripts/demo_tools.py merge out=all.hdf5 files=a.hdf5,b.hdf5
    python scripts/demo_tools.py split file=demos.hdf5 valid=0.1 seed=0
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in ("merge", "split", "summary"):
        raise SystemExit("usage: demo_tools.py merge|split|summary key=value ...")
    args = dict(item.partition("=")[::2] for item in argv[1:])
    from orbitlab.demos import tools

    if argv[0] == "merge":
        count = tools.merge(args["files"].split(","), args["out"])
        print(f"{args['out']}: {count} demos")
    elif argv[0] == "split":
        train, valid = tools.split(args["file"], float(args.get("valid", "0.1")),
                                   int(args.get("seed", "0")))
        print(f"{args['file']}: {train} train, {valid} valid")
    else:
        print(json.dumps(tools.summary(args["file"]), indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
