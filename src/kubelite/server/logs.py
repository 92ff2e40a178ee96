"""Logging for ``kubelite serve``: ``--log-level`` (debug, info, warning, error) and
``--log-format`` (text, json), as klog's text and JSON (logr/zap) outputs carry them.

A record's structured fields travel in ``extra={"kv": {...}}``. The text form is klog's
``InfoS``: the message quoted, then ``key="value"`` pairs (numbers bare); the JSON form one
object a line: ``ts`` (seconds since the epoch), ``level``, ``logger``, ``msg``, the fields,
and ``err`` with the traceback for an exception.

Nothing here decides what is logged: callers never pass request bodies, headers or tokens.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
FORMATS = ("text", "json")


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    kv = getattr(record, "kv", None)
    return kv if isinstance(kv, dict) else {}


def _quote(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(str(value)).decode()


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        fields = _fields(record)
        if fields:
            line += " " + " ".join(f"{k}={_quote(v)}" for k, v in fields.items())
        return line


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in _fields(record).items():
            out.setdefault(key, value)
        if record.exc_info:
            out["err"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


def configure(level: str = "info", fmt: str = "text") -> None:
    """Send every logger's records at ``level`` and above to standard error in ``fmt``."""
    handler = logging.StreamHandler()
    handler.setFormatter(JSONFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(LEVELS[level])
