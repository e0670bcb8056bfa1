"""Demo-file tools.

    python scripts/demo_tools.py summary file=demos.hdf5
    python scripts/demo_tools.py merge out=all.hdf5 files=a.hdf5,b.hdf5
    python scripts/demo_tools.py split file=demos.hdf5 valid=0.1 seed=0

merge writes a new file (through a temporary one, renamed at the end) and refuses an `out`
that is one of its inputs (compared as files, so also through a symlink or another
spelling). A bad argument is one line on stderr and exit status 2, an unreadable file 1.
"""

from __future__ import annotations

import json
import sys

from orbitlab.cli import (
    Arg,
    ArgumentError,
    existing_file,
    existing_files,
    integer,
    number,
    output_file,
    parse_args,
    run,
)

COMMANDS = {
    "merge": {"files": Arg(None, existing_files), "out": Arg(None, output_file)},
    "split": {
        "file": Arg(None, existing_file),
        "valid": Arg("0.1", number(min=0.0, max=0.999)),
        "seed": Arg("0", integer(min=0)),
    },
    "summary": {"file": Arg(None, existing_file)},
}
"""Each command's key=value arguments (orbitlab.cli)."""


def main(argv: list[str]) -> None:
    """Run one command; ArgumentError / UserError on bad input."""
    if not argv or argv[0] not in COMMANDS:
        raise ArgumentError(
            f"usage: demo_tools.py {'|'.join(COMMANDS)} key=value ... "
            f"(got {argv[0] if argv else 'nothing'!r})"
        )
    args = parse_args(argv[1:], COMMANDS[argv[0]])
    from orbitlab.demos import tools

    if argv[0] == "merge":
        count = tools.merge(args["files"], args["out"])
        print(f"{args['out']}: {count} demos")
    elif argv[0] == "split":
        train, valid = tools.split(args["file"], args["valid"], args["seed"])
        print(f"{args['file']}: {train} train, {valid} valid")
    else:
        print(json.dumps(tools.summary(args["file"]), indent=2))


if __name__ == "__main__":
    sys.exit(run(main, sys.argv[1:], "demo_tools", __doc__))
