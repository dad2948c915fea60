"""Logging filters the settings name by dotted path."""

from __future__ import annotations

import logging


class NoClientErrorTracebacks(logging.Filter):
    """A request refused with a 4xx (403, 404) is the client's business: keep Django's one-line
    warning, drop the traceback of the exception that produced it."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
