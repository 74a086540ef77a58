"""Rich display of a step-mode pause (`HookEvent._repr_html_`): the hook, where it is, its context.

`before_turn` shows the model, the system prompt, the model messages as a DataFrame, and the tool
names with their schemas; tool hooks show the name and input (and output or error, time); a step
shows its text, tool calls and usage; `done` shows the turn's result.
"""

from __future__ import annotations

import html
import json
from typing import Any

from think_nb.jsonsafe import to_json_value


def _pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(to_json_value(value), indent=1, ensure_ascii=False)
    return f"<pre style='white-space:pre-wrap;margin:0'>{html.escape(text)}</pre>"


def _row(label: str, body: str) -> str:
    return (f"<tr><th style='text-align:left;vertical-align:top;padding-right:1em'>{label}</th>"
            f"<td style='text-align:left'>{body}</td></tr>")


def _messages_table(messages: list[dict]) -> str:
    import pandas as pd

    rows = [{"role": m.get("role"), "content": m.get("content"),
             "tool_calls": ", ".join(c["function"]["name"] for c in m.get("tool_calls") or []) or None,
             "tool_call_id": m.get("tool_call_id")} for m in messages]
    return pd.DataFrame(rows).to_html(index=True, na_rep="", classes="dataframe")


def render_event(event: Any) -> str:
    """HTML for one `HookEvent`."""
    ctx, rows = event.ctx, []
    where = [f"step {event.step}" if event.step is not None else "", f"tool {event.tool}" if event.tool else ""]
    title = f"paused at <b>{html.escape(event.hook)}</b>" if event.hook != "done" else "<b>turn finished</b>"
    if event.hook == "before_turn":
        rows += [_row("model", html.escape(ctx.model)), _row("system", _pre(ctx.system)),
                 _row("messages", _messages_table(ctx.messages)),
                 _row("tools", _pre({n: t.parameters for n, t in ctx.tools.items()})),
                 _row("continuation", str(ctx.continuation))]
    elif event.hook == "before_tool_call":
        rows += [_row("tool", html.escape(ctx.tool_name)), _row("input", _pre(ctx.input)),
                 _row("call id", html.escape(ctx.tool_call_id))]
        if ctx.parent_tool_call_id:  # an inner call of a running tool (execute's code)
            rows.append(_row("called from", html.escape(ctx.parent_tool_call_id)))
    elif event.hook == "after_tool_call":
        error = f"<span style='color:var(--jp-error-color1,red)'>{html.escape(str(ctx.error))}</span>"
        outcome = _pre(ctx.output) if ctx.success else error
        rows += [_row("tool", html.escape(ctx.tool_name)), _row("input", _pre(ctx.input)),
                 _row("output" if ctx.success else "error", outcome), _row("time", f"{ctx.duration_ms:.1f} ms")]
    elif event.hook == "on_step_finish":
        rows += [_row("finish", html.escape(ctx.finish_reason)), _row("text", _pre(ctx.text)),
                 _row("tool calls", _pre(ctx.tool_calls)), _row("results", _pre(ctx.tool_results)),
                 _row("usage", _pre(ctx.usage))]
    elif event.hook == "on_chat_response":
        rows += [_row("status", html.escape(ctx.status)), _row("error", html.escape(ctx.error or ""))]
    else:
        result = event.result
        rows += [_row("status", html.escape(result.status)), _row("error", html.escape(result.error or ""))]
    hint = "" if event.hook == "done" else ("<div style='opacity:.7'>edit <code>event.ctx</code>, then "
                                            "<code>stepper.next()</code> or <code>stepper.run()</code></div>")
    return (f"<div class='think-step-event'><div>{title} {html.escape(' · '.join(w for w in where if w))}</div>"
            f"<table>{''.join(rows)}</table>{hint}</div>")
