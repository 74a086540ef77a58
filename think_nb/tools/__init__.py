"""Tools: plain Python functions (sync or async) the model can call.

`tool.py` turns a function into a `Tool` (JSON schema from type hints and the docstring, via
pydantic); `toolset.py` normalises what `get_tools()` returns; `builtin.py` is the table of the
built-in tool families (which a turn offers, in what order); `demo.py` is the small tool set
the terminal main job uses.
"""

from think_nb.tools.tool import Tool, tool
from think_nb.tools.toolset import resolve_tools

__all__ = ["Tool", "resolve_tools", "tool"]
