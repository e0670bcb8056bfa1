"""Silence the chatter of rsl-rl's runner and torch.onnx while a policy loads or exports."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings

QUIET_LOGGERS = ("torch.onnx", "onnxscript", "onnx_ir")
"""Loggers whose INFO lines (optimizer passes, rewrite rules) an export hides."""


@contextlib.contextmanager
def quiet():
    """Swallow the chatter of rsl-rl's runner and torch.onnx (stdout, warnings, the INFO
    logs of torch.onnx, onnxscript and onnx_ir)."""
    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
