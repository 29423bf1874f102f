"""One logger for the package: lmms-eval's loguru logger, so our messages interleave with the runner's."""

from __future__ import annotations

from loguru import logger

__all__ = ["logger"]
