"""Teleoperation devices: command shaping, the scripted replay, keyboard parsing and key
hold, gamepad and SpaceMouse report parsing, and the missing-package / no-device errors.
No hardware and no TTY are needed."""

from __future__ import annotations

import io
import os
import sys
import time

import numpy as np
import pytest
import torch

from orbitlab.devices import (
    DeviceCfg,
    DeviceNotFoundError,
    GamepadCfg,
    KeyboardCfg,
    ScriptedCfg,
    ScriptedDevice,
    SpaceMouse,
    SpaceMouseCfg,
    TeleopDependencyError,
    TerminalKeyboard,
    make_device,
    shape_command,
)
from orbitlab.devices.gamepad import Gamepad, GamepadState, normalize_abs, parse_axis_expr
from orbitlab.devices.keyboard import KeyHold, parse_keys
from orbitlab.devices.spacemouse import find_spacemouse, map_channels, parse_report


def scripted(commands, **kw) -> ScriptedDevice:
    return make_device("scripted", ScriptedCfg(commands=commands, **kw))


# --------------------------------------------------------------------------- shaping
def test_shape_sensitivity_clip_and_deadband():
    cfg = DeviceCfg(translation_sensitivity=0.5, rotation_sensitivity=(1.0, 2.0, -1.0))
    out = shape_command([1.0, -0.4, 0.2, 0.3, 0.8, 0.5], cfg)
    np.testing.assert_allclose(out, [0.5, -0.2, 0.1, 0.3, 1.0, -0.5])  # 1.6 clipped
    out = shape_command([3.0, 0, 0, 0, 0, 0], DeviceCfg())
    assert out[0] == 1.0  # raw clipped
    cfg = DeviceCfg(deadband=0.2)
    out = shape_command([0.1, -0.19, 0.2, 0.6, -1.0, 1.0], cfg)
    np.testing.assert_allclose(out, [0.0, 0.0, 0.0, 0.5, -1.0, 1.0])
    with pytest.raises(ValueError, match="deadband"):
        shape_command(np.zeros(6), DeviceCfg(deadband=1.0))


def test_advance_dtype_shape_and_mode():
    dev = scripted([[0.25, 0, 0, 0, 0, -0.5]], mode="velocity")
    cmd = dev.advance()
    assert isinstance(cmd, torch.Tensor) and cmd.dtype == torch.float32 and cmd.shape == (6,)
    torch.testing.assert_close(cmd, torch.tensor([0.25, 0, 0, 0, 0, -0.5]))
    assert dev.mode == "velocity" and make_device("scripted").mode == "wrench"
    with pytest.raises(ValueError, match="mode"):
        ScriptedDevice(ScriptedCfg(mode="force"))


# --------------------------------------------------------------------------- scripted
def test_scripted_sequence_and_end_behaviours():
    seq = torch.tensor([[0.1] * 6, [0.2] * 6, [0.3] * 6])
    for end, expect in {
        "loop": [0.1, 0.2, 0.3, 0.1, 0.2],
        "hold": [0.1, 0.2, 0.3, 0.3, 0.3],
        "zero": [0.1, 0.2, 0.3, 0.0, 0.0],
    }.items():
        dev = scripted(seq, end=end)
        got = [float(dev.advance()[3]) for _ in range(5)]
        assert got == pytest.approx(expect), end
        assert dev.finished and dev.step == 5
    dev = scripted([[0.5, 0, 0, 0, 0, 0], [1.0, 0, 0, 0, 0, 0]])
    dev.advance()
    dev.reset()
    assert dev.step == 0 and float(dev.advance()[0]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"\(T, 6\)"):
        scripted(np.zeros((4, 5)))


def test_scripted_sensitivity_and_clipping():
    dev = scripted(
        [[0.6, -0.6, 0.1, 0.5, -0.9, 2.0]],
        translation_sensitivity=2.0,
        rotation_sensitivity=0.5,
        deadband=0.05,
    )
    out = dev.advance().numpy()

    def db(r):
        return np.sign(r) * (abs(r) - 0.05) / 0.95

    np.testing.assert_allclose(
        out, [1.0, -1.0, 2 * db(0.1), 0.5 * db(0.5), 0.5 * db(-0.9), 0.5], rtol=1e-6
    )


def test_scripted_callbacks_at_steps_and_pause():
    calls: list[tuple[str, int]] = []
    dev = scripted(
        np.full((6, 6), 0.5), events={1: "reset", 2: ["pause", "save"], 4: "pause", 5: "quit"}
    )
    for name in ("reset", "save", "quit"):
        dev.add_callback(name, lambda name=name: calls.append((name, dev.step)))
    paused = []
    for _ in range(6):
        cmd = dev.advance()
        paused.append(dev.paused)
        assert float(cmd.abs().sum()) == (0.0 if dev.paused else pytest.approx(3.0))
    assert calls == [("reset", 2), ("save", 3), ("quit", 6)]
    assert paused == [False, False, True, True, False, False]
    assert dev.quit_requested
    dev.reset()
    assert not dev.quit_requested and not dev.paused
    with pytest.raises(ValueError, match="no button"):
        dev.add_callback("fire", lambda: None)


def test_scripted_is_context_manager():
    with scripted(np.zeros((2, 6))) as dev:
        dev.advance()
    assert dev._closed


def test_a_pilot_flies_the_device_and_presses_its_buttons():
    from orbitlab.devices import PilotCfg, PilotDevice

    steps = iter([([2.0, 0, 0, 0, 0, -0.5], []), ([0.1] * 6, ["grip"])])
    dev = make_device("pilot")
    assert isinstance(dev, PilotDevice) and "grip" in dev.buttons
    with pytest.raises(RuntimeError, match="no pilot"):
        dev.advance()
    dev.fly(lambda: next(steps))
    grips = []
    dev.add_callback("grip", lambda: grips.append(True))
    assert dev.advance().tolist() == [1.0, 0, 0, 0, 0, -0.5]  # clipped as a person's device
    assert dev.advance().tolist() == pytest.approx([0.1] * 6) and grips == [True]
    rogue = PilotDevice(PilotCfg(pilot=lambda: ([0.0] * 6, ["self-destruct"])))
    with pytest.raises(ValueError, match="pressed 'self-destruct'"):
        rogue.advance()


# --------------------------------------------------------------------------- keyboard
def test_parse_keys():
    assert parse_keys(b"wWa sQ") == ["w", "w", "a", "space", "s", "q"]
    assert parse_keys(b"\x1b") == ["esc"]
    assert parse_keys(b"\x1b[A\x1b[Dx\x1bOC") == ["up", "left", "x", "right"]
    assert parse_keys(b"\x1b[1;5A\x1b[3~r") == ["r"]  # other sequences skipped
    assert parse_keys(b"\r\t\x7f\x01") == ["enter", "tab", "backspace", "ctrl+a"]
    assert parse_keys(b"") == []


class FakeTerminal:
    """An injectable reader and clock for TerminalKeyboard."""

    def __init__(self):
        self.t = 0.0
        self.pending = b""

    def reader(self) -> bytes:
        data, self.pending = self.pending, b""
        return data

    def clock(self) -> float:
        return self.t


def test_terminal_keyboard_hold_semantics():
    term = FakeTerminal()
    cfg = KeyboardCfg(key_first_hold_s=0.5, key_hold_s=0.1)
    kb = TerminalKeyboard(cfg, reader=term.reader, clock=term.clock)
    assert kb.advance().abs().sum() == 0
    term.pending = b"w"  # first press: held for 0.5 s
    assert kb.advance().tolist() == [1, 0, 0, 0, 0, 0]
    term.t = 0.4
    assert kb.advance()[0] == 1  # bridges the auto-repeat delay
    term.t, term.pending = 0.45, b"w"  # auto-repeat: +0.1 s
    assert kb.advance()[0] == 1
    term.t = 0.52
    assert kb.advance()[0] == 1
    term.t = 0.56  # released: drops within key_hold_s
    assert kb.advance()[0] == 0
    term.t, term.pending = 0.6, b"aa"  # a repeat never shortens a hold
    assert kb.advance()[1] == 1
    term.t = 1.05
    assert kb.advance()[1] == 1
    term.t, term.pending = 1.15, b""
    assert kb.advance()[1] == 0
    term.t, term.pending = 1.2, b"wsJl"  # opposite keys cancel
    assert kb.advance().tolist() == [0, 0, 0, 0, 0, 0]
    term.t, term.pending = 2.0, b"dEiU"
    assert kb.advance().tolist() == [0, -1, -1, 1, 1, 0]
    term.t = 3.0
    assert kb.advance().abs().sum() == 0


def test_terminal_keyboard_buttons_and_sensitivity():
    term = FakeTerminal()
    kb = TerminalKeyboard(
        KeyboardCfg(translation_sensitivity=0.3), reader=term.reader, clock=term.clock
    )
    seen = []
    for name in ("reset", "pause", "save", "quit"):
        kb.add_callback(name, lambda name=name: seen.append(name))
    term.pending = b"r q"
    cmd = kb.advance()
    assert seen == ["reset", "pause"] and kb.paused and cmd.abs().sum() == 0
    term.pending = b" q"
    assert kb.advance()[2] == pytest.approx(0.3) and not kb.paused
    term.pending = b"c\x1b"
    kb.advance()
    assert seen[-2:] == ["save", "quit"] and kb.quit_requested
    kb.reset()
    assert kb.advance().abs().sum() == 0  # held keys released by reset


def test_terminal_keyboard_custom_map():
    term = FakeTerminal()
    cfg = KeyboardCfg(axis_keys={"up": (0, 1.0), "down": (0, -0.5)}, button_keys={"x": "quit"})
    kb = TerminalKeyboard(cfg, reader=term.reader, clock=term.clock)
    term.pending = b"\x1b[B"
    assert kb.advance()[0] == pytest.approx(-0.5)
    term.pending = b"w\x1b"  # unmapped keys ignored
    kb.advance()
    assert not kb.quit_requested
    assert "quit" in kb.help_text() and "up" in kb.help_text()
    with pytest.raises(ValueError, match="0..5"):
        KeyHold({"z": (6, 1.0)})


def test_terminal_keyboard_needs_a_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("w"))
    with pytest.raises(DeviceNotFoundError, match="not a terminal"):
        make_device("keyboard")


def test_terminal_keyboard_on_a_pty_restores_settings(monkeypatch):
    termios = pytest.importorskip("termios")
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    with open(slave, "r", closefd=True) as tty_in:
        monkeypatch.setattr(sys, "stdin", tty_in)
        before = termios.tcgetattr(slave)
        with pytest.raises(RuntimeError, match="boom"), make_device("keyboard") as kb:
            during = termios.tcgetattr(slave)
            assert during[3] & termios.ICANON == 0 and during[3] & termios.ECHO == 0
            os.write(master, b"q")
            deadline = time.monotonic() + 2.0  # the pty delivers asynchronously
            while kb.advance()[2] == 0.0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert kb.advance()[2] == 1.0  # nothing new to read: still held
            raise RuntimeError("boom")
        assert termios.tcgetattr(slave) == before
        kb.close()  # idempotent
    os.close(master)


def test_window_keyboard_with_dummy_video(monkeypatch):
    pg = pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    t = [0.0]
    from orbitlab.devices import WindowKeyboard

    with WindowKeyboard(KeyboardCfg(), clock=lambda: t[0]) as kb:
        quits = []
        kb.add_callback("quit", lambda: quits.append(1))
        pg.event.post(pg.event.Event(pg.KEYDOWN, key=pg.K_w))
        pg.event.post(pg.event.Event(pg.KEYDOWN, key=pg.K_j))
        assert kb.advance().tolist() == [1, 0, 0, 0, 0, 1]
        t[0] = 10.0  # real key-up: no timeout
        assert kb.advance()[0] == 1
        pg.event.post(pg.event.Event(pg.KEYUP, key=pg.K_w))
        pg.event.post(pg.event.Event(pg.KEYDOWN, key=pg.K_ESCAPE))
        assert kb.advance().tolist() == [0, 0, 0, 0, 0, 1]
        assert quits == [1] and kb.quit_requested


# --------------------------------------------------------------------------- gamepad
def test_parse_axis_expr():
    assert parse_axis_expr("t5-t2") == [(1.0, "t", 5), (-1.0, "t", 2)]
    assert parse_axis_expr(" -a1 + hx0") == [(-1.0, "a", 1), (1.0, "hx", 0)]
    assert parse_axis_expr("0") == []
    for bad in ("x3", "a1a2", "a"):
        with pytest.raises(ValueError, match="expression"):
            parse_axis_expr(bad)


def test_gamepad_state_mapping_and_buttons():
    cfg = GamepadCfg()
    st = GamepadState(cfg.axis_map, cfg.button_map)
    # LX right 0.5, LY up -1, LT at rest, RX left -0.25, RY down 0.5, RT half; RB held
    axes = [0.5, -1.0, -1.0, -0.25, 0.5, 0.0]
    buttons = [0, 0, 0, 0, 0, 1, 0, 0]
    raw, pressed = st.update(axes, buttons)
    # RT reads 0.0: not yet seen moving -> released
    np.testing.assert_allclose(raw, [1.0, -0.5, 0.0, 1.0, -0.5, 0.25])
    assert pressed == []
    axes[5] = 0.5  # trigger now live: (0.5+1)/2
    raw, _ = st.update(axes, buttons)
    assert raw[2] == pytest.approx(0.75)
    axes[5] = 0.0  # once live, 0.0 means half pressed
    assert st.update(axes, buttons)[0][2] == pytest.approx(0.5)
    _, pressed = st.update(axes, [1, 1, 0, 0, 0, 0, 0, 1])
    assert pressed == ["pause", "reset", "quit"]
    _, pressed = st.update(axes, [1, 1, 0, 0, 0, 0, 0, 1])  # held: no new press
    assert pressed == []
    hat = GamepadState(("hx0", "hy0", "b2", "0", "0", "-a9"), {})
    raw, _ = hat.update([0.0], [0, 0, 1], [(1, -1)])  # missing axis index reads 0
    np.testing.assert_allclose(raw, [1, -1, 1, 0, 0, 0])
    with pytest.raises(ValueError, match="6 expressions"):
        GamepadState(("a0",), {})


def test_normalize_abs():
    assert normalize_abs(0, 0, 1023) == -1.0
    assert normalize_abs(1023, 0, 1023) == 1.0
    assert normalize_abs(0, -32768, 32767) == pytest.approx(0.0, abs=1e-4)
    assert normalize_abs(5, 3, 3) == 0.0


def test_gamepad_missing_libraries(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygame", None)
    monkeypatch.setitem(sys.modules, "evdev", None)
    with pytest.raises(TeleopDependencyError, match=r"orbitlab-sim\[teleop\]"):
        make_device("gamepad")
    with pytest.raises(TeleopDependencyError, match="pygame"):
        Gamepad(GamepadCfg(backend="pygame"))


def test_gamepad_none_connected(monkeypatch):
    pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    monkeypatch.setenv("SDL_JOYSTICK_ALLOW_BACKGROUND_EVENTS", "1")
    with pytest.raises(DeviceNotFoundError, match="gamepad: no joystick #7"):
        Gamepad(GamepadCfg(backend="pygame", joystick_index=7))


# --------------------------------------------------------------------------- spacemouse
def _report(rid: int, *values: int) -> list[int]:
    out = [rid]
    for v in values:
        out += list(int(v).to_bytes(2, "little", signed=True))
    return out


def test_parse_spacemouse_reports():
    ch = np.zeros(6)
    assert parse_report(_report(1, 350, -175, 700), ch) is None
    np.testing.assert_allclose(ch, [1.0, -0.5, 1.0, 0, 0, 0])  # 700 clipped
    parse_report(_report(2, -350, 35, 0), ch)
    np.testing.assert_allclose(ch, [1.0, -0.5, 1.0, -1.0, 0.1, 0.0])
    parse_report(_report(1, 0, 0, 0, 70, -70, 175), ch)  # 13-byte report
    np.testing.assert_allclose(ch, [0, 0, 0, 0.2, -0.2, 0.5])
    assert parse_report([3, 0b10, 0x01], ch) == 0b1_0000_0010
    assert parse_report([9, 1, 2, 3, 4, 5, 6], ch) is None and parse_report([1], ch) is None
    np.testing.assert_allclose(ch, [0, 0, 0, 0.2, -0.2, 0.5])
    np.testing.assert_allclose(
        map_channels(np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]), SpaceMouseCfg().axis_map),
        [-0.2, -0.1, -0.3, -0.5, -0.4, -0.6],
    )


class FakeHid:
    """Stands in for an open hidapi device: returns queued reports, then []."""

    def __init__(self, reports):
        self.reports = list(reports)
        self.closed = False

    def read(self, n):
        return self.reports.pop(0) if self.reports else []

    def close(self):
        self.closed = True


def test_spacemouse_device_with_fake_hid():
    fake = FakeHid([_report(1, 350, 0, -350), _report(2, 0, 0, 175), [3, 1]])
    dev = SpaceMouse(SpaceMouseCfg(rotation_sensitivity=2.0), hid_device=fake)
    seen = []
    dev.add_callback("pause", lambda: seen.append("pause"))
    dev.add_callback("reset", lambda: seen.append("reset"))
    cmd = dev.advance()  # paused by button 0 in the same poll
    assert seen == ["pause"] and dev.paused and cmd.abs().sum() == 0
    fake.reports = [[3, 0], [3, 0b11]]  # release, then both pressed
    cmd = dev.advance()
    assert seen == ["pause", "pause", "reset"] and not dev.paused
    torch.testing.assert_close(cmd, torch.tensor([0.0, -1.0, 1.0, 0.0, 0.0, -1.0]))
    assert dev.advance()[1] == -1.0  # values held between reports
    dev.close()
    assert fake.closed


def test_find_spacemouse_filters_vendors():
    class FakeHidModule:
        @staticmethod
        def enumerate():
            return [
                {"vendor_id": 0x046D, "product_id": 0xC52B, "path": b"mouse"},
                {
                    "vendor_id": 0x046D,
                    "product_id": 0xC626,
                    "path": b"nav",
                    "usage_page": 1,
                    "usage": 8,
                },
                {
                    "vendor_id": 0x256F,
                    "product_id": 0xC652,
                    "path": b"rx-kbd",
                    "usage_page": 1,
                    "usage": 6,
                },
                {
                    "vendor_id": 0x256F,
                    "product_id": 0xC652,
                    "path": b"rx-3d",
                    "usage_page": 1,
                    "usage": 8,
                },
                {"vendor_id": 0x1234, "product_id": 0xC626, "path": b"other"},
            ]

    paths = [d["path"] for d in find_spacemouse(FakeHidModule)]
    assert paths == [b"nav", b"rx-3d", b"rx-kbd"]
    assert [d["path"] for d in find_spacemouse(FakeHidModule, vendor_id=0x256F)] == [
        b"rx-3d",
        b"rx-kbd",
    ]


def test_spacemouse_missing_hidapi(monkeypatch):
    monkeypatch.setitem(sys.modules, "hid", None)
    with pytest.raises(
        TeleopDependencyError, match=r"'hidapi'.*pip install 'orbitlab-sim\[teleop\]'"
    ):
        make_device("spacemouse")


def test_spacemouse_not_found(monkeypatch):
    import types

    fake = types.ModuleType("hid")
    fake.enumerate = lambda *a: []
    fake.device = object
    monkeypatch.setitem(sys.modules, "hid", fake)
    with pytest.raises(DeviceNotFoundError, match="no 3Dconnexion HID device"):
        make_device("spacemouse")


# --------------------------------------------------------------------------- factory
def test_make_device_factory():
    dev = make_device("scripted", DeviceCfg(translation_sensitivity=0.5, mode="velocity"))
    assert isinstance(dev, ScriptedDevice) and dev.mode == "velocity"
    assert dev.cfg.translation_sensitivity == 0.5
    with pytest.raises(ValueError, match="keyboard-window"):
        make_device("joystick9000")
    with pytest.raises(TypeError, match="ScriptedCfg"):
        make_device("scripted", GamepadCfg())


def test_window_keyboard_missing_pygame(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygame", None)
    with pytest.raises(TeleopDependencyError, match=r"keyboard-window.*\[teleop\]"):
        make_device("keyboard-window")
