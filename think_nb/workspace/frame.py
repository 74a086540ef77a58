"""The workspace as a pandas DataFrame (`agent.workspace_df()`, `%think files`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

FILE_COLUMNS = ["path", "size", "modified"]


def files_frame(fs: Any) -> pd.DataFrame:
    """One row per file of any fsspec file system, by path: path (`/a/b`), size (bytes, int64),
    modified (UTC timestamp; NaT when the backend does not say)."""
    found = fs.find("/", detail=True)
    rows = [{"path": "/" + str(name).lstrip("/"), "size": int(info.get("size") or 0),
             "modified": _mtime(info)} for name, info in sorted(found.items())]
    df = pd.DataFrame(rows, columns=FILE_COLUMNS)
    df["size"] = df["size"].astype("int64")
    df["modified"] = pd.to_datetime(df["modified"], utc=True)
    return df


def _mtime(info: dict) -> Any:
    value = info.get("mtime", info.get("modified", info.get("created")))
    if isinstance(value, (int, float)):
        return pd.Timestamp(value, unit="s", tz="UTC")
    return pd.Timestamp(value) if value is not None else pd.NaT
