"""orbitlab's command line: `orbitlab train|play|eval|export|record|replay|bench|bridge|list`.

This package's top level is the typed `key=value` toolkit of `orbitlab.cli.args` (errors,
converters, `parse_args`, `run`), which library modules import for their error types; the
commands themselves live in submodules (`orbitlab.cli.main` is the console entry point) and
are imported only when run.
"""

from orbitlab.cli.args import (
    FALSE,
    REQUIRED,
    TRUE,
    Arg,
    ArgumentError,
    Converter,
    UserError,
    bad,
    boolean,
    choice,
    existing_file,
    existing_files,
    flag,
    integer,
    names,
    number,
    optional,
    output_dir,
    output_file,
    parse_args,
    parse_key_values,
    run,
    text,
    wants_verbose,
)

__all__ = [
    "FALSE",
    "REQUIRED",
    "TRUE",
    "Arg",
    "ArgumentError",
    "Converter",
    "UserError",
    "bad",
    "boolean",
    "choice",
    "existing_file",
    "existing_files",
    "flag",
    "integer",
    "names",
    "number",
    "optional",
    "output_dir",
    "output_file",
    "parse_args",
    "parse_key_values",
    "run",
    "text",
    "wants_verbose",
]
