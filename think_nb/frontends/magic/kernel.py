"""`%think kernel AGENT [PATTERN]`: what the agent sees of the live kernel (its `list_variables` view)."""

from __future__ import annotations

from typing import Any

from think_nb.frontends.magic.base import Command, agent_and_rest


def kernel(magics: Any, args: list[str]) -> Any:
    """Print which kernel tools AGENT has and return the variables `list_variables` shows it
    (bounded as the model gets them) as a DataFrame: name, type, shape, preview."""
    import pandas as pd

    from think_nb.binding import runtime_of
    from think_nb.kernel import namespace
    from think_nb.kernel.shell import namespace as user_namespace
    from think_nb.kernel.toolset import KERNEL_TOOL_NAMES
    from think_nb.tools.toolset import resolve_tools

    agent, rest = agent_and_rest(magics, args)
    pattern = rest[0] if rest else None
    runtime = runtime_of(agent)
    tools = dict(runtime.kernel_tools())
    try:
        found = agent.get_tools()
        tools.update(resolve_tools(found) if not hasattr(found, "__await__") else {})
    except Exception:  # noqa: BLE001 - get_tools is user code: what is known is shown
        pass
    has = [name for name in KERNEL_TOOL_NAMES if name in tools]
    run = tools.get("run_code")
    gate = "" if run is None else " (run_code asks for approval)" if run.needs_approval else \
        " (run_code runs without asking)"
    shell, ns = user_namespace()
    seen = namespace.list_variables(ns, getattr(shell, "user_ns_hidden", None), pattern=pattern)
    head = (f"{agent.name!r} has the kernel tools {', '.join(has)}{gate}." if has else
            f"{agent.name!r} has no kernel tools (include_kernel_tools = True, or kernel_tools() in get_tools()); "
            "with them it would see:")
    print(f"{head}\n{seen['text'].splitlines()[0]}" + (f" ({seen['shown']} shown)" if seen["truncated"] else ""))
    return pd.DataFrame(seen["variables"], columns=["name", "type", "shape", "preview"])


KERNEL = Command("%think kernel AGENT [PATTERN] [--name NAME]\n    What AGENT sees of this kernel: its kernel "
                 "tools, and the variables list_variables shows it (PATTERN: a glob such as df*) as a DataFrame.",
                 kernel)
