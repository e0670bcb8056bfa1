"""Valid JSON files written atomically: non-finite floats become null, then a rename."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float (NaN, inf) replaced by None, recursively through
    dicts, lists and tuples, so that it serializes to valid JSON (null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def write_json(path: str | Path, payload: dict[str, Any]) -> None:
    """Write `payload` to `path` as valid JSON (non-finite floats as null), atomically: a
    temporary file in the same directory, then os.replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(json_safe(payload), indent=2, allow_nan=False)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, delete=False, prefix=f".{path.name}.", suffix=".tmp"
    ) as file:
        file.write(text)
        tmp = file.name
    os.replace(tmp, path)
