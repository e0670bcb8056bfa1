"""The environment variables orbitlab reads are checked before anything heavy loads: a bad
MUJOCO_GL (MuJoCo's import would raise) or torchrun variable is one line naming it."""

from __future__ import annotations

import pytest

from orbitlab.cli import ArgumentError
from orbitlab.cli.environment import check_environment, distributed_ranks


@pytest.mark.parametrize(
    "environ, words",
    [
        ({"MUJOCO_GL": "bogus"}, ["MUJOCO_GL='bogus'", "egl"]),
        ({"WORLD_SIZE": "abc"}, ["WORLD_SIZE='abc'", "integer"]),
        ({"WORLD_SIZE": "0"}, ["WORLD_SIZE=0", ">= 1"]),
        ({"LOCAL_RANK": "x"}, ["LOCAL_RANK='x'"]),
        ({"RANK": "-1"}, ["RANK=-1", "[0, WORLD_SIZE=1)"]),
        ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, ["RANK=2"]),
        ({"WORLD_SIZE": "2"}, ["MASTER_ADDR", "torchrun"]),
    ],
)
def test_a_bad_variable_is_one_line_naming_it(environ, words):
    with pytest.raises(ArgumentError) as info:
        check_environment(environ)
    message = str(info.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_torchruns_variables_and_an_empty_environment_pass():
    check_environment({})
    check_environment({"MUJOCO_GL": "EGL "})
    torchrun = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}
    assert distributed_ranks({**torchrun, "MASTER_ADDR": "h", "MASTER_PORT": "29500"}) == (1, 1, 2)
    assert distributed_ranks({}) == (0, 0, 1)
