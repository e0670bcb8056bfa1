"""Ctrl-C during training: noted by the first SIGINT, raised at the next env step; a second
SIGINT raises at once; the previous handler comes back afterwards."""

import os
import signal
import threading

import pytest

from orbitlab.rl.train import interrupt


def _sigint() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    # the handler runs on the main thread at its next bytecode; give it a few
    for _ in range(1000):
        pass


def test_the_first_ctrl_c_waits_for_an_env_step_and_the_second_raises_at_once():
    before = signal.getsignal(signal.SIGINT)
    with interrupt.interrupt_at_env_steps():
        interrupt.raise_if_requested()  # nothing pressed: nothing raised
        _sigint()  # noted, not raised here
        assert interrupt.requested()
        with pytest.raises(KeyboardInterrupt):
            interrupt.raise_if_requested()
        with pytest.raises(KeyboardInterrupt):
            _sigint()
    assert signal.getsignal(signal.SIGINT) is before
    assert not interrupt.requested()
    with pytest.raises(KeyboardInterrupt):  # outside the block Ctrl-C is Python's again
        _sigint()


def test_the_env_wrappers_stop_at_their_step_when_ctrl_c_was_pressed():
    import torch

    from orbitlab.registry import make_env
    from orbitlab.rl.rsl_rl import RslRlVecEnvWrapper

    env = RslRlVecEnvWrapper(make_env("Detumble-RW", num_envs=2))
    try:
        env.reset()
        actions = torch.zeros(2, env.num_actions)
        with interrupt.interrupt_at_env_steps():
            env.step(actions)
            _sigint()
            steps = int(env.unwrapped.episode_length_buf[0])
            with pytest.raises(KeyboardInterrupt):
                env.step(actions)
            assert int(env.unwrapped.episode_length_buf[0]) == steps  # before any work
    finally:
        env.close()


def test_off_the_main_thread_the_block_changes_nothing():
    seen = []

    def worker():
        before = signal.getsignal(signal.SIGINT)
        with interrupt.interrupt_at_env_steps():
            seen.append(signal.getsignal(signal.SIGINT) is before)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [True]
