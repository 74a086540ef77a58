"""Exporting a transcript: markdown, Jupyter notebook, JSON (round-trippable) or sanitised HTML.

`agent.export(format, path=None)` (and `%think export AGENT FILE`) renders the current branch:

- **markdown**: one `### User` / `### Assistant` section per message; text as written, reasoning
  as a quote, each tool call as a fenced `json` block of its input followed by its result (fenced
  block), error or denial; approvals, the model, token usage, finish reason and turn errors as an
  italic line under the message. Fences are longer than any backtick run inside them.
- **ipynb** (nbformat 4): one markdown cell per message (the markdown above, without its tool
  calls); each tool call is a code cell `add(**{"a": 2})` whose output is its result
  (`execute_result`), or an `error` output for a failed / denied call. Cells carry
  `metadata.think_nb = {message_id, tool_call_id?, state?}`.
- **json**: `{"format": "think_nb.transcript", "version": 1, "agent": {class, name}, "messages":
  [UIMessage, ...]}` exactly as stored; `Think.import_messages` reads it back.
- **html**: the markdown rendered with markdown-it-py, then sanitised with nh3 (ammonia): no
  script, no event handler attributes, no `javascript:` links, whatever the messages contain.

Renderings never raise on odd part shapes: unknown parts are shown as their JSON.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from think_nb import jsonsafe
from think_nb.errors import UserError

FORMATS = ("markdown", "ipynb", "json", "html")
JSON_FORMAT = "think_nb.transcript"
JSON_VERSION = 1
_SUFFIX = {".md": "markdown", ".markdown": "markdown", ".ipynb": "ipynb", ".json": "json", ".html": "html",
           ".htm": "html"}
TOOL_STATES_SHOWN = {"output-available": "result", "output-error": "error", "output-denied": "denied"}


def format_for_path(path: str | Path) -> str:
    """The export format a file name asks for (`.md`, `.ipynb`, `.json`, `.html`); `UserError` otherwise."""
    fmt = _SUFFIX.get(Path(path).suffix.lower())
    if fmt is None:
        raise UserError(f"cannot tell the export format of {str(path)!r}: name the file .md, .ipynb, .json or .html.")
    return fmt


def export(messages: list[dict], fmt: str, *, agent_class: str, agent_name: str) -> str:
    """The transcript `messages` as text in format `fmt` (one of `FORMATS`); `UserError` for others."""
    if fmt not in FORMATS:
        raise UserError(f"format={fmt!r}: choose one of {', '.join(map(repr, FORMATS))}.")
    title = f"{agent_class} {agent_name!r}"
    if fmt == "json":
        doc = {"format": JSON_FORMAT, "version": JSON_VERSION, "agent": {"class": agent_class, "name": agent_name},
               "messages": messages}
        return json.dumps(jsonsafe.to_json_value(doc), indent=1, ensure_ascii=False, allow_nan=False)
    if fmt == "markdown":
        return to_markdown(messages, title=title)
    if fmt == "html":
        return to_html_document(messages, title=title)
    return to_ipynb(messages, title=title)


# -- markdown ---------------------------------------------------------------------------------------
def fence(body: str, lang: str = "") -> str:
    """A fenced code block holding `body` verbatim (the fence outgrows any backtick run in it)."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{body}\n{ticks}"


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(jsonsafe.to_json_value(value), indent=2, ensure_ascii=False)


def tool_name(part: dict) -> str:
    """`tool-add` → `add`; a `dynamic-tool` part's `toolName`."""
    kind = str(part.get("type", ""))
    return str(part.get("toolName", "tool")) if kind == "dynamic-tool" else kind[len("tool-"):]


def tool_markdown(part: dict) -> str:
    """One tool call: a heading line, its input as a fenced json block, then its outcome."""
    name, state = tool_name(part), str(part.get("state", ""))
    lines = [f"**Tool call `{name}`** ({state}, id `{part.get('toolCallId', '?')}`)",
             fence(_pretty(part.get("input")), "json")]
    approval = part.get("approval")
    if isinstance(approval, dict) and "approved" in approval:
        verdict = "approved" if approval.get("approved") else "denied"
        reason = f": {approval['reason']}" if approval.get("reason") else ""
        lines.append(f"*Approval: {verdict}{reason}*")
    elif state == "approval-requested":
        lines.append("*Approval: requested*")
    if state == "output-available":
        lines += ["Result:", fence(_pretty(part.get("output")), "" if isinstance(part.get("output"), str) else "json")]
    elif state == "output-error":
        lines += ["Error:", fence(str(part.get("errorText", "")))]
    elif state == "output-denied":
        lines.append("*The call was denied; the tool did not run.*")
    return "\n\n".join(lines)


def part_markdown(part: dict, *, tools: bool = True) -> str:
    """One part as markdown ("" for parts with nothing to show, and tool parts when `tools` is False)."""
    kind = str(part.get("type", ""))
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "reasoning":
        text = str(part.get("text", "")).strip()
        return "\n".join(["> *Reasoning*", ">", *(f"> {line}" for line in text.splitlines())]) if text else ""
    if kind == "step-start":
        return ""
    if kind.startswith("tool-") or kind == "dynamic-tool":
        return tool_markdown(part) if tools else ""
    if kind == "file":
        return f"[file: {part.get('filename') or part.get('mediaType', '')}]({part.get('url', '')})"
    if kind == "source-url":
        return f"[{part.get('title') or part.get('url', '')}]({part.get('url', '')})"
    if kind == "data-context":
        data = _dict(part.get("data"))
        return f"**Data `{data.get('name', '?')}`** ({data.get('summary', '')})\n\n{data.get('markdown', '')}"
    return f"*{kind}*\n\n" + fence(_pretty({k: v for k, v in part.items() if k != "type"}), "json")


def footer(message: dict) -> str:
    """The italic line under a message: model, tokens, finish reason, error, interruption ("" if none)."""
    meta = _dict(message.get("metadata"))
    bits = []
    if meta.get("model"):
        bits.append(f"model {meta['model']}")
    usage = _dict(meta.get("usage"))
    if usage:
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        bits.append(f"{prompt} prompt + {completion} completion tokens" if prompt is not None and completion is not None
                    else "usage unknown")
    if meta.get("finishReason"):
        bits.append(f"finish: {meta['finishReason']}")
    if meta.get("interrupted") or meta.get("aborted"):  # stopped or cut: one state, one word (as the panel)
        bits.append("interrupted")
    line = f"*{' · '.join(bits)}*" if bits else ""
    if meta.get("error"):
        line += ("\n\n" if line else "") + f"**Error:** {meta['error']}"
    return line


def message_markdown(message: dict, *, tools: bool = True) -> str:
    """One message: `### Role` then its parts and footer, blank-line separated."""
    role = str(message.get("role", "?")).capitalize()
    parts = message.get("parts")
    parts = parts if isinstance(parts, list) else []
    body = [part_markdown(p, tools=tools) for p in parts if isinstance(p, dict)]
    return "\n\n".join([f"### {role}", *(b for b in body if b), *(f for f in [footer(message)] if f)])


def to_markdown(messages: list[dict], *, title: str = "") -> str:
    """The whole transcript as one markdown document (a `## title` heading when given)."""
    blocks = ([f"## {title}"] if title else []) + [message_markdown(m) for m in messages]
    return "\n\n".join(blocks) + "\n"


# -- html -------------------------------------------------------------------------------------------
def markdown_to_safe_html(text: str) -> str:
    """Render markdown (CommonMark + tables) to HTML that is safe to show anywhere and loads nothing.

    The panel's rules (js/src/markdown.ts), for what GitHub, nbviewer and nbconvert show of a saved
    notebook and for `export("html")`: raw HTML in the text is escaped, not passed through (a model's
    `<img>`, `<picture>` or `<form>` is shown as text); a markdown image (inline, reference-style, in a
    table) becomes a link to its URL, `🖼 alt`, so opening the page requests nothing; then nh3
    (ammonia) sanitises what markdown-it made, as a second layer (no `<img>` at all). A single line
    break is kept (`<br>`), as the panel shows it (a message typed with Shift+Enter, a poem).
    """
    import nh3

    html = _markdown_renderer().render(text)
    return nh3.clean(html, tags=_SAFE_TAGS, link_rel="noopener noreferrer nofollow")


@functools.cache
def _markdown_renderer() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable("table")  # line breaks show, as in the panel

    def image_as_link(renderer: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
        import html as html_lib

        token = tokens[idx]
        url = str(token.attrGet("src") or "")
        alt = html_lib.escape(renderer.renderInlineAsText(token.children or [], options, env) or url or "image")
        in_link = sum({"link_open": 1, "link_close": -1}.get(t.type, 0) for t in tokens[:idx]) > 0
        if in_link or not url.lower().startswith(("http://", "https://")):
            return f"🖼 {alt}"  # a link's label; a relative or data: source would load from the page's place
        href = html_lib.escape(md.normalizeLink(url), quote=True)
        return f'<a href="{href}" title="image: {href} (not loaded)">🖼 {alt}</a>'

    md.add_render_rule("image", image_as_link)
    return md


_SAFE_TAGS = {
    "a", "p", "br", "hr", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li", "h1", "h2", "h3", "h4",
    "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "del", "s",
}
"""What markdown-it's CommonMark and tables emit, minus images: nothing else survives sanitising."""


def to_html_document(messages: list[dict], *, title: str = "") -> str:
    """A standalone HTML page of the transcript (sanitised body, a little inline CSS)."""
    import html as html_lib

    body = markdown_to_safe_html(to_markdown(messages, title=title))
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html_lib.escape(title or 'think_nb transcript')}</title>"
            "<style>body{font-family:sans-serif;max-width:50rem;margin:2rem auto;line-height:1.45}"
            "pre{background:#f5f5f5;padding:.5rem;overflow:auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 6px}</style></head>\n"
            f"<body>\n{body}</body></html>\n")


# -- ipynb ------------------------------------------------------------------------------------------
def to_ipynb(messages: list[dict], *, title: str = "") -> str:
    """An nbformat-4 notebook: a markdown cell per message, a code cell (with outputs) per tool call."""
    import nbformat
    from nbformat import v4

    cells = [v4.new_markdown_cell(f"## {title}")] if title else []
    for message in messages:
        meta = {"think_nb": {"message_id": message.get("id")}}
        text = message_markdown(message, tools=False)
        cells.append(v4.new_markdown_cell(text, metadata=meta))
        parts = message.get("parts")
        for part in parts if isinstance(parts, list) else []:
            kind = str(part.get("type", "")) if isinstance(part, dict) else ""
            if kind.startswith("tool-") or kind == "dynamic-tool":
                cells.append(_tool_cell(part, message.get("id")))
    nb = v4.new_notebook(cells=cells, metadata={"think_nb": {"format": JSON_FORMAT, "version": JSON_VERSION}})
    nbformat.validate(nb)
    return nbformat.writes(nb)


def _tool_cell(part: dict, message_id: Any) -> Any:
    from nbformat import v4

    name, state = tool_name(part), str(part.get("state", ""))
    args = json.dumps(jsonsafe.to_json_value(part.get("input")), ensure_ascii=False)
    source = f"# tool call {part.get('toolCallId', '?')} ({state})\n{name}(**{args})"
    outputs = []
    if state == "output-available":
        outputs.append(v4.new_output("execute_result", data={"text/plain": _pretty(part.get("output"))},
                                     execution_count=None))
    elif state == "output-error":
        outputs.append(v4.new_output("error", ename="ToolError", evalue=str(part.get("errorText", "")), traceback=[]))
    elif state == "output-denied":
        approval = _dict(part.get("approval"))
        outputs.append(v4.new_output("error", ename="Denied", evalue=str(approval.get("reason") or "denied"),
                                     traceback=[]))
    meta = {"think_nb": {"message_id": message_id, "tool_call_id": part.get("toolCallId"), "state": state}}
    return v4.new_code_cell(source, outputs=outputs, metadata=meta)


# -- reading JSON back ------------------------------------------------------------------------------
def read_json(source: Any) -> list[dict]:
    """The messages of an exported JSON transcript: a path, its text, the parsed document, or a
    list of UIMessages. Raises `UserError` (one line) for anything else."""
    doc = source
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith(("{", "["))):
        path = Path(source)
        if not path.is_file():
            raise UserError(f"import_messages: no file {str(path)!r}; pass an exported .json path, its text, "
                            "or a list of UIMessages.")
        source = path.read_text(encoding="utf-8")
    if isinstance(source, str):
        try:
            doc = json.loads(source)
        except RecursionError:
            raise UserError("import_messages: the JSON is nested too deeply to read (thousands of levels); pass a "
                            "file written by agent.export('json').") from None
        except ValueError as exc:
            raise UserError(f"import_messages: not JSON ({exc}); pass a file written by agent.export('json').") \
                from None
    if isinstance(doc, dict):
        if doc.get("format") != JSON_FORMAT or not isinstance(doc.get("messages"), list):
            raise UserError(f"import_messages: not a think_nb transcript (format {doc.get('format')!r}); pass a file "
                            "written by agent.export('json').")
        if doc.get("version") != JSON_VERSION:
            raise UserError(f"import_messages: transcript version {doc.get('version')!r} is not {JSON_VERSION}; "
                            "export it again with this think_nb.")
        doc = doc["messages"]
    if not isinstance(doc, list):
        raise UserError(f"import_messages: got {type(doc).__name__}; pass an exported .json path, its text, "
                        "or a list of UIMessages.")
    return doc


# -- the panel's static fallback (saved notebooks without a kernel) ------------------------------------
FALLBACK_CHARS = 12_000
"""Most characters of markdown a panel's static fallback holds (the newest messages that fit)."""

FALLBACK_MESSAGES = 20
"""Most messages a panel's static fallback holds (the newest). With `FALLBACK_CHARS` this bounds what
each turn re-sends of it (the output is replaced whole, `update_display`, once a turn): about 25 KB of
markdown and HTML at most, whatever the conversation's length (issue 29 §2); the live panel and
`agent.export()` hold the rest."""

STATIC_TRANSCRIPT_STYLE = (
    "<style>.jp-OutputArea-child:has(> .jp-OutputArea-output.jupyter-widgets):not(:has(.think-panel))"
    ":has(+ .jp-OutputArea-child .think-static-transcript) { display: none; }</style>")
"""Shown with a panel's static transcript output (`ChatPanel._ipython_display_`): in a trusted notebook
(JupyterLab/Notebook 7 trust the notebooks they saved) it hides the widget output just before the
transcript while that output holds no panel ("Error displaying widget: model not found" after the
kernel is gone); an untrusted notebook drops `<style>`, and then that one line shows above the transcript."""


def static_transcript(messages: list[dict], *, title: str, limit: int = FALLBACK_CHARS,
                      max_messages: int = FALLBACK_MESSAGES) -> tuple[str, str]:
    """`(markdown, sanitised html)` of the newest messages (at most `max_messages`) that fit in `limit`
    characters of markdown, with a line saying how many older ones were left out and where to see
    them (the live panel, `agent.export()`); a single message longer than the limit is
    cut with a `… (N more characters)` marker. What a saved notebook shows where the widget cannot
    render (GitHub, nbviewer, nbconvert, VS Code without the kernel)."""
    head = f"## {title}" + ("" if messages else "\n\n*No messages yet.*")
    blocks: list[str] = []
    used = len(head)
    for message in reversed(messages):
        if len(blocks) == max_messages:
            break
        text = message_markdown(message)
        if used + len(text) > limit:
            if not blocks:  # the newest message alone is too long: keep its beginning
                keep = max(0, limit - used)
                blocks.append(text[:keep] + f"\n\n*… ({len(text) - keep} more characters)*")
            break
        blocks.append(text)
        used += len(text) + 2
    left_out = len(messages) - len(blocks)
    note = [(f"*… {left_out} earlier messages not shown here: the live panel shows them (run this cell), "
              "agent.export() writes them all.*")] if left_out else []
    markdown = "\n\n".join([head, *note, *reversed(blocks)]) + "\n"
    return markdown, markdown_to_safe_html(markdown)
