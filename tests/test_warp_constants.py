"""Warp evaluates arithmetic inside a kernel's `f64(...)` (or `wp.float64(...)`) on its
literals in float32: `f64(0.013 * _DEG)` loses ~1e-8 relative. Every such constant must
be computed in Python at module level and passed in whole, e.g. `f64(_OBLIQUITY_RATE)`."""

from __future__ import annotations

import ast
from pathlib import Path

import orbitlab

PACKAGE = Path(orbitlab.__file__).parent
CASTS = {"f64", "float64"}


def _cast_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _is_constant_arithmetic(node: ast.AST) -> bool:
    """A BinOp tree of literals and names (names taken for module constants: write runtime
    arithmetic outside the cast)."""
    if isinstance(node, ast.BinOp):
        return _is_constant_arithmetic(node.left) and _is_constant_arithmetic(node.right)
    if isinstance(node, ast.UnaryOp):
        return False  # -x is exact in any precision
    return isinstance(node, ast.Constant | ast.Name)


def test_no_float64_cast_wraps_constant_arithmetic():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and _cast_name(node) in CASTS
                and node.args
                and isinstance(node.args[0], ast.BinOp)
                and _is_constant_arithmetic(node.args[0])
            ):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    assert not offenders, "\n".join(offenders)


def test_the_check_finds_the_pattern():
    tree = ast.parse("x = f64(0.013 * _DEG) + wp.float64(1.0 / 6.0) + f64(a[0] * 2.0)")
    found = [
        ast.unparse(n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and _cast_name(n) in CASTS
        and isinstance(n.args[0], ast.BinOp)
        and _is_constant_arithmetic(n.args[0])
    ]
    assert found == ["f64(0.013 * _DEG)", "wp.float64(1.0 / 6.0)"]
