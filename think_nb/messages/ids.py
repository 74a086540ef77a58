"""Identifiers for messages, requests, text parts and tool calls (url-safe, sortable by creation)."""

import secrets
import time


def new_id(prefix: str = "") -> str:
    """Return a short unique id: 8 hex chars of milliseconds + 8 random hex chars, e.g. `m_19a4c0f1d2ab34cd`."""
    body = f"{int(time.time() * 1000) & 0xFFFFFFFF:08x}{secrets.token_hex(4)}"
    return f"{prefix}_{body}" if prefix else body
