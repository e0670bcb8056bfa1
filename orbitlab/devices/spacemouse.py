"""3Dconnexion SpaceMouse teleoperation through hidapi (`pip install
'orbitlab-sim[teleop]'`), reading the raw HID reports, no 3Dconnexion driver needed.

HID reports (first byte: report id; values int16 little-endian, about +-350 full range):

    id 1, 7 bytes     translation x, y, z
    id 2, 7 bytes     rotation rx, ry, rz
    id 1, 13 bytes    translation and rotation in one report (newer/wireless models)
    id 3              button bitmask (bit i: button i; left = 0, right = 1)

Raw axes are x right, y toward the user, z down (rotations about those axes). The
default `axis_map` turns them into the body frame x forward, y left, z up, so pushing
the cap away from you gives +x, lifting it +z, twisting it counter-clockwise +yaw.
The device sends reports only on change; the last values are held in between.

On Linux the user needs read access to /dev/hidraw* (a udev rule such as
SUBSYSTEM=="hidraw", ATTRS{idVendor}=="256f", MODE="0666"), and spacenavd or the
3Dconnexion driver must not hold the device exclusively.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from orbitlab.devices.base import Device, DeviceCfg, DeviceNotFoundError, require

VENDOR_IDS = (0x046D, 0x256F)
"""Logitech (older 3Dconnexion devices) and 3Dconnexion."""

LOGITECH_3DX_PRODUCTS = frozenset(
    {0xC603, 0xC605, 0xC606, 0xC621, 0xC623, 0xC625, 0xC626, 0xC627, 0xC628, 0xC629, 0xC62B}
)
"""3Dconnexion product ids under Logitech's vendor id (other 0x046d devices are mice,
keyboards, ...); every product under 0x256f is accepted."""


def _default_axis_map() -> tuple[tuple[int, float], ...]:
    # raw channels: 0 x, 1 y, 2 z, 3 rx, 4 ry, 5 rz
    return ((1, -1.0), (0, -1.0), (2, -1.0), (4, -1.0), (3, -1.0), (5, -1.0))


def _default_button_map() -> dict[int, str]:
    return {0: "pause", 1: "reset"}


@dataclass(kw_only=True)
class SpaceMouseCfg(DeviceCfg):
    """HID selection, scaling and mapping of a SpaceMouse."""

    scale: float = 350.0
    """Raw count giving a full-scale (+-1) reading."""
    axis_map: tuple[tuple[int, float], ...] = field(default_factory=_default_axis_map)
    """Per command component [fx, fy, fz, tx, ty, tz]: (raw channel 0..5, sign/gain);
    raw channels are x, y, z, rx, ry, rz."""
    button_map: dict[int, str] = field(default_factory=_default_button_map)
    """Button bit -> button name (fires on press)."""
    vendor_id: int | None = None
    """Open only this vendor id (None: any of `VENDOR_IDS`)."""
    product_id: int | None = None
    """Open only this product id (None: any known 3Dconnexion product)."""
    path: bytes | None = None
    """Open this HID path directly (from `hid.enumerate()`), skipping the search."""


def _int16(lo: int, hi: int) -> int:
    v = (lo & 0xFF) | ((hi & 0xFF) << 8)
    return v - 0x10000 if v >= 0x8000 else v


def parse_report(
    report: Sequence[int] | bytes, channels: np.ndarray, scale: float = 350.0
) -> int | None:
    """Apply one HID report to the 6 raw `channels` (updated in place, in [-1, 1]).

    Returns the button bitmask if it is a button report, else None. Unknown or short
    reports are ignored."""
    data = list(report)
    if len(data) < 2:
        return None
    rid = data[0]

    def values(start: int, count: int) -> list[float]:
        return [
            float(np.clip(_int16(data[start + 2 * k], data[start + 2 * k + 1]) / scale, -1.0, 1.0))
            for k in range(count)
        ]

    if rid == 1 and len(data) >= 13:
        channels[:6] = values(1, 6)
    elif rid == 1 and len(data) >= 7:
        channels[:3] = values(1, 3)
    elif rid == 2 and len(data) >= 7:
        channels[3:6] = values(1, 3)
    elif rid == 3:
        mask = 0
        for k, byte in enumerate(data[1:]):
            mask |= (byte & 0xFF) << (8 * k)
        return mask
    return None


def map_channels(channels: np.ndarray, axis_map: Sequence[tuple[int, float]]) -> np.ndarray:
    """Raw channels (x, y, z, rx, ry, rz) -> raw command (6,) in [-1, 1]."""
    if len(axis_map) != 6:
        raise ValueError(f"axis_map needs 6 entries, got {len(axis_map)}")
    return np.clip([gain * channels[ch] for ch, gain in axis_map], -1.0, 1.0)


def find_spacemouse(hid, vendor_id: int | None = None, product_id: int | None = None) -> list[dict]:
    """The `hid.enumerate()` entries of connected 3Dconnexion devices, multi-axis
    interface (usage page 1, usage 8) first."""
    found = []
    for info in hid.enumerate():
        vid, pid = info.get("vendor_id"), info.get("product_id")
        if vendor_id is not None and vid != vendor_id:
            continue
        if product_id is not None and pid != product_id:
            continue
        if vendor_id is None and vid not in VENDOR_IDS:
            continue
        if product_id is None and vid == 0x046D and pid not in LOGITECH_3DX_PRODUCTS:
            continue
        found.append(info)
    found.sort(key=lambda i: (i.get("usage_page"), i.get("usage")) != (1, 8))
    return found


class SpaceMouse(Device):
    """A 3Dconnexion SpaceMouse read through hidapi's `hid.device`."""

    cfg: SpaceMouseCfg

    def __init__(self, cfg: SpaceMouseCfg | None = None, *, hid_device=None):
        """`hid_device` (tests): an already open object with `read(n)` and `close()`."""
        super().__init__(cfg if cfg is not None else SpaceMouseCfg())
        self._channels = np.zeros(6)
        self._buttons = 0
        self.name = "SpaceMouse"
        self._dev = hid_device if hid_device is not None else self._open()

    def _open(self):
        hid = require("hid", "spacemouse", package="hidapi")
        if not hasattr(hid, "device"):
            raise DeviceNotFoundError(
                "spacemouse: the imported 'hid' module is not hidapi's (no hid.device); "
                "pip uninstall hid, then pip install 'orbitlab-sim[teleop]' (hidapi)."
            )
        path = self.cfg.path
        if path is None:
            found = find_spacemouse(hid, self.cfg.vendor_id, self.cfg.product_id)
            if not found:
                raise DeviceNotFoundError(
                    "spacemouse: no 3Dconnexion HID device found (vendor 0x046d/0x256f). "
                    "Check that it is plugged in (or its wireless receiver is, and it is "
                    'switched on), that it is listed by `python -c "import hid; '
                    'print(hid.enumerate())"`, and on Linux that your user may read '
                    "/dev/hidraw* (udev rule)."
                )
            path = found[0]["path"]
            self.name = found[0].get("product_string") or self.name
        dev = hid.device()
        try:
            dev.open_path(path)
        except OSError as exc:
            raise DeviceNotFoundError(
                f"spacemouse: cannot open HID path {path!r} ({exc}); check the permissions "
                "of /dev/hidraw* (udev rule) and that spacenavd / the 3Dconnexion driver "
                "does not hold it."
            ) from exc
        dev.set_nonblocking(1)
        return dev

    def _extra_buttons(self) -> Iterable[str]:
        return self.cfg.button_map.values()

    def reset(self) -> None:
        """Zero the held axis values (the next report refreshes them), unpause."""
        super().reset()
        self._channels[:] = 0.0

    def feed(self, report: Sequence[int] | bytes) -> None:
        """Apply one HID report: update the axes, fire newly pressed buttons."""
        mask = parse_report(report, self._channels, self.cfg.scale)
        if mask is None:
            return
        new = mask & ~self._buttons
        self._buttons = mask
        for bit, name in self.cfg.button_map.items():
            if new >> bit & 1:
                self._press(name)

    def _poll(self) -> np.ndarray:
        for _ in range(256):  # drain the queue, bounded
            report = self._dev.read(64)
            if not report:
                break
            self.feed(report)
        return map_channels(self._channels, self.cfg.axis_map)

    def close(self) -> None:
        if not self._closed and self._dev is not None:
            self._dev.close()
        super().close()

    def help_text(self) -> str:
        buttons = ", ".join(f"button {i}={n}" for i, n in self.cfg.button_map.items())
        return f"SpaceMouse '{self.name}' ({self.mode} command): {buttons}"
