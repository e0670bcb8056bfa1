"""orbitlab.jsonio: metrics and score files are valid JSON, written atomically."""

import json
import math

from orbitlab.jsonio import json_safe, write_json


def test_non_finite_floats_become_null_and_the_file_is_strict_json(tmp_path):
    path = tmp_path / "sub" / "metrics.json"
    write_json(path, {"a": math.nan, "b": [1.0, math.inf, {"c": -math.inf}], "d": (2, "x")})
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text

    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    assert json.loads(text, parse_constant=refuse) == {
        "a": None,
        "b": [1.0, None, {"c": None}],
        "d": [2, "x"],
    }
    assert [p.name for p in path.parent.iterdir()] == ["metrics.json"]  # no temporary left


def test_json_safe_keeps_finite_values():
    assert json_safe({"x": 1.5, "n": 3, "s": "nan", "t": True}) == {
        "x": 1.5,
        "n": 3,
        "s": "nan",
        "t": True,
    }
