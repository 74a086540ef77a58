"""Client tools: tools the model calls that run in the browser, in the chat panel.

Declared from Python with a JavaScript body (Think's client tools are declared by the browser;
here both work):

    tz = client_tool("time_zone", "The user's time zone.", {"type": "object", "properties": {}},
                     js="return Intl.DateTimeFormat().resolvedOptions().timeZone;")

`js` is the body of an async function of `input` (the model's arguments) returning a
JSON-compatible value; throwing makes the call an `output-error`. The kernel never runs it:
the turn ends after the step, the panel runs the call and sends `tool_result`, and when every
client call of that step has its result the agent continues (Think's batch barrier).
Tools the panel registers itself arrive as schemas `{name, description?, parameters?}` with a
`use_chat_request` and are remembered for continuations (Think's `lastClientTools`).
"""

from __future__ import annotations

import logging

from think_nb.errors import UserError
from think_nb.tools.tool import Tool, valid_tool_name

log = logging.getLogger(__name__)

EMPTY_OBJECT = {"type": "object", "properties": {}}


def client_tool(name: str, description: str, parameters: dict | None = None, *, js: str) -> Tool:
    """A tool that runs in the browser (see the module docstring).

    Args:
        name: tool name the model sees.
        description: what it does.
        parameters: JSON schema of the input object (default: no parameters).
        js: body of an async JavaScript function of `input`.

    Raises:
        UserError: when `name` is not a valid tool name, `js` is empty or `parameters` is not an object schema.
    """
    if not js or not js.strip():
        raise UserError(f"client_tool({name!r}) needs js=..., the body of an async function of `input`.")
    schema = parameters or EMPTY_OBJECT
    if schema.get("type") != "object":
        raise UserError(f"client_tool({name!r}): parameters must be a JSON object schema ({{'type': 'object', ...}}).")
    return Tool(name, description, schema, None, client=True, js=js)


def from_schemas(schemas: object) -> dict[str, Tool]:
    """Panel-registered client tools (`{name, description?, parameters?}`) as `{name: Tool}`.

    `schemas` is untrusted JSON (from the panel, or as stored in agent state): anything but a
    list of such objects is skipped.
    """
    tools = {}
    for schema in schemas if isinstance(schemas, list) else []:
        if not isinstance(schema, dict) or not isinstance(schema.get("name"), str):
            continue
        if not valid_tool_name(schema["name"]):
            log.warning("ignoring the panel's client tool %r: not a valid tool name", schema["name"])
            continue
        tools[schema["name"]] = Tool(schema["name"], schema.get("description") or schema["name"],
                                     schema.get("parameters") or EMPTY_OBJECT, None, client=True)
    return tools
