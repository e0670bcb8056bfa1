"""The orbit layer's schema (orbitlab/sim/schema.py) is the one declaration of its data."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import mujoco

import orbitlab.sim
from orbitlab.sim import elements
from orbitlab.sim.elements import ElementSet
from orbitlab.sim.kernels import KernelLayout
from orbitlab.sim.schema import ELEMENT_KINDS, LAYOUT_CONSTANTS, WORLD_FIELDS
from orbitlab.sim.spec import SimSpec
from orbitlab.testdata import FREE_BODY_XML

ELEMENT_CFGS = {f.name: f for f in dataclasses.fields(ElementSet)}


def test_element_kinds_are_the_element_set_and_their_columns_its_rows():
    assert [kind.name for kind in ELEMENT_KINDS] == list(ELEMENT_CFGS)
    model = mujoco.MjModel.from_xml_path(str(FREE_BODY_XML))
    for kind in ELEMENT_KINDS:
        cfg_type = ELEMENT_CFGS[kind.name].type.removeprefix("list[").removesuffix("]")
        row = getattr(elements, cfg_type)(name="x", body_name="spacecraft").resolve(model)
        keys = {column.key for column in kind.columns}
        assert keys <= set(row), f"{kind.name}: columns {keys - set(row)} not in its rows"


def test_kernel_layout_fields_come_from_the_schema():
    assert tuple(f.name for f in dataclasses.fields(KernelLayout)) == LAYOUT_CONSTANTS
    assert all(f.default == -1 for f in dataclasses.fields(KernelLayout))


def test_data_allocates_every_world_field_with_its_shape():
    spec = SimSpec.from_xml_path(FREE_BODY_XML)
    data = spec.compile(timestep=0.1).make_data(nworld=3)
    arrays = data.world_arrays()
    for f in WORLD_FIELDS:
        if f.per:
            assert arrays[f.name].shape == (3, data.model.count(f.per)), f.name
        else:
            assert arrays[f.name].shape[0] == 3, f.name


def test_spec_model_data_is_a_plain_import_chain():
    """spec imports model, model imports data, and never the other way (no cycle)."""
    root = Path(orbitlab.sim.__file__).parent

    def imports(module: str) -> set[str]:
        tree = ast.parse((root / f"{module}.py").read_text())
        return {
            node.module.removeprefix("orbitlab.sim.")
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("orbitlab.sim.")
        }

    assert "model" in imports("spec") and "spec" not in imports("model")
    assert "data" in imports("model") and not {"model", "spec"} & imports("data")
