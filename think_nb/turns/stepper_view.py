"""Rich display of a step-mode pause (`HookEvent._repr_html_`): the hook, where it is, its context.

`before_turn` shows the model, the system prompt, the model messages as a DataFrame, and the
tool names, each schema folded under its name (`<details>`, click to open); for a model that is
sent less than the turn's messages and tools (the embedded model: `think_nb.models.sent`) it
says what it is sent, marks each message `sent` yes/no and strikes out the tools it is not
offered; tool hooks show the name and input (and output or error, time); a step shows its text,
tool calls and usage; `done` shows the turn's result.
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


def _messages_table(messages: list[dict], kept: list[bool] | None = None) -> str:
    import pandas as pd

    rows = [{"role": m.get("role"), "content": m.get("content"),
             "tool_calls": ", ".join(c["function"]["name"] for c in m.get("tool_calls") or []) or None,
             "tool_call_id": m.get("tool_call_id")} for m in messages]
    if kept is not None and not all(kept):
        for row, sent in zip(rows, kept, strict=True):
            row["sent"] = "yes" if sent else "no"
    return pd.DataFrame(rows).to_html(index=True, na_rep="", classes="dataframe")


def _tools(tools: dict, offered: tuple[str, ...] | None = None) -> str:
    """Each tool as its name, its schema folded under it (`<details>`); the ones the model is not
    offered struck through."""
    if not tools:
        return "<i>none</i>"
    out = []
    for name, tool in tools.items():
        label = html.escape(name) if offered is None or name in offered else f"<s>{html.escape(name)}</s>"
        out.append(f"<details style='display:inline-block;vertical-align:top;margin-right:.8em'>"
                   f"<summary><code>{label}</code></summary>{_pre(getattr(tool, 'parameters', tool))}</details>")
    return "".join(out)


def _sent(ctx: Any) -> Any:
    """What the model of `ctx` is sent (`think_nb.models.sent`), or None when it cannot be said."""
    try:
        from think_nb.models.resolve import resolve_model
        from think_nb.models.sent import sent

        system = [{"role": "system", "content": ctx.system}] if ctx.system else []
        schemas = [t.schema() if hasattr(t, "schema") else t for t in ctx.tools.values()]
        return sent(resolve_model(ctx.model), system + list(ctx.messages), schemas), len(system)
    except Exception:  # noqa: BLE001 - an edited ctx may hold anything; the view still shows it
        return None


def render_event(event: Any) -> str:
    """HTML for one `HookEvent`."""
    ctx, rows = event.ctx, []
    where = [f"step {event.step}" if event.step is not None else "", f"tool {event.tool}" if event.tool else ""]
    title = f"paused at <b>{html.escape(event.hook)}</b>" if event.hook != "done" else "<b>turn finished</b>"
    if event.hook == "before_turn":
        found = _sent(ctx)
        kept, offered, note = None, None, ""
        if found is not None:
            what, skip = found
            kept, offered, note = what.kept[skip:], what.tools, what.note
            if skip and not what.kept[0]:
                note = f"{note}; the system prompt is not sent" if note else "the system prompt is not sent"
        rows += [_row("model", html.escape(ctx.model)), _row("system", _pre(ctx.system)),
                 _row("messages", _messages_table(ctx.messages, kept)),
                 _row("tools", _tools(ctx.tools, offered)),
                 _row("continuation", str(ctx.continuation))]
        if note:
            rows.insert(3, _row("sent", html.escape(f"{what.summary(len(ctx.tools))}")))
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
