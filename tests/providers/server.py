"""A provider-shaped HTTP server on 127.0.0.1 for litellm's real `openai/` and `anthropic/` providers.

`FakeProvider("openai")` serves `POST /v1/chat/completions`, `FakeProvider("anthropic")` serves
`POST /v1/messages`, each streaming server-sent events in that provider's wire format. Every
request is first checked the way the provider checks it (`openai_format.problems`,
`anthropic_format.problems`); a request the real provider would refuse gets the provider's 400
error body, and the problem is kept in `rejections`. Answers are scripted, one `Reply` per request:

    async with FakeProvider("anthropic") as server:
        server.replies += [Reply(tool_calls=[Call("add", {"a": 2, "b": 40})]), Reply(text="42.")]
        agent_model = server.model_config()   # ModelConfig("anthropic/claude-fake", {"api_base": ...})

Faults (`Reply.fail(...)`, `Reply(fault=...)`) reproduce what users hit: error statuses with the
provider's error body and headers, a stream cut mid-way (`cut`: the connection drops; `truncated`:
the stream's last event comes early, with no finish reason before it; `empty`: right after the
first event), malformed SSE, a server that stalls before
its first byte or between chunks. A stall waits until the client gives up (the server sees the
request closed: `disconnects`) or the server stops; the server stops with the `async with` block.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from providers import anthropic_format, openai_format
from think_nb.models.resolve import ModelConfig

Format = Literal["openai", "anthropic"]
Fault = Literal["cut", "truncated", "empty", "malformed", "stall_first_byte", "stall_between"] | None
UsageMode = Literal["normal", "final_only", "none"]



@dataclass
class Call:
    """A tool call the scripted reply makes; `arguments` is sent as is when it is a string."""

    name: str
    arguments: dict | str
    id: str | None = None

    def raw(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Reply:
    """One scripted answer.

    Attributes:
        text, reasoning: streamed in pieces of `piece` characters.
        tool_calls: calls made after the text.
        usage: `(input_tokens, output_tokens)` reported by the provider, or None (no usage sent).
        usage_mode: `"normal"`; `"final_only"`: usage only in the last event (OpenAI: a choice-less
            chunk; Anthropic: `message_delta`, `message_start` carries none); `"none"`: never.
        status, error, headers: an HTTP error answer instead of a stream (the provider's body, or
            `body` as given).
        fault: see the module docstring.
    """

    text: str = ""
    tool_calls: list[Call] = field(default_factory=list)
    reasoning: str = ""
    usage: tuple[int, int] | None = (12, 5)
    usage_mode: UsageMode = "normal"
    status: int = 200
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    fault: Fault = None
    piece: int = 4
    body: dict | None = None
    """The error answer's JSON body exactly (a provider's real one), instead of `error`'s."""

    @classmethod
    def fail(cls, status: int, message: str = "", headers: dict[str, str] | None = None) -> Reply:
        return cls(status=status, error=message or f"scripted {status}", headers=headers or {})


class FakeProvider:
    """See the module docstring.

    Attributes:
        replies: scripted answers, consumed one per request (a request with none left gets a 500).
        requests: every request body received, in order.
        rejections: the validation problem of every request answered 400.
        disconnects: requests whose client closed the connection before the answer ended.
    """

    def __init__(self, fmt: Format, model: str | None = None) -> None:
        self.format: Format = fmt
        self.model_name = model or ("gpt-fake" if fmt == "openai" else "claude-fake")
        self.replies: list[Reply] = []
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.rejections: list[str] = []
        self.disconnects = 0
        self.completed = 0
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------
    async def __aenter__(self) -> FakeProvider:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/v1/messages", self._handle)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}" + ("/v1" if self.format == "openai" else "")

    @property
    def provider(self) -> str:
        return self.format

    def model_config(self, **options: Any) -> ModelConfig:
        """The `ModelConfig` that points litellm's real provider at this server."""
        key = "sk-test-key" if self.format == "openai" else "sk-ant-test-key"
        return ModelConfig(f"{self.format}/{self.model_name}", {"api_base": self.api_base, "api_key": key,
                                                                  **options})

    # -- requests ---------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        fmt = openai_format if self.format == "openai" else anthropic_format
        problem = fmt.problem(body)
        if problem is not None:
            self.rejections.append(problem)
            return web.json_response(fmt.error_body(400, problem), status=400)
        reply = self.replies.pop(0) if self.replies else Reply.fail(500, "FakeProvider has no reply left")
        if reply.status != 200:
            return web.json_response(reply.body or fmt.error_body(reply.status, reply.error), status=reply.status,
                                     headers=reply.headers)
        prefix = "call" if self.format == "openai" else "toolu"
        for n, call in enumerate(reply.tool_calls):  # unique ids, as providers make them
            call.id = call.id or f"{prefix}_{len(self.requests)}_{n}"
        if not body.get("stream"):
            return web.json_response(fmt.completion(reply, self.model_name))
        try:
            if reply.fault == "stall_first_byte":
                await self._stopping.wait()
                return web.Response(status=503)
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
            await response.prepare(request)
            events = list(fmt.events(reply, self.model_name))
            cut_at = len(events) // 2
            for n, event in enumerate(events):
                if reply.fault == "stall_between" and n == cut_at:
                    await self._stopping.wait()
                    return response
                if reply.fault == "cut" and n == cut_at:
                    assert request.transport is not None
                    request.transport.close()  # the connection drops: no end of the chunked body
                    return response
                if (reply.fault == "truncated" and n == cut_at) or (reply.fault == "empty" and n == 1):
                    await response.write(events[-1])  # `[DONE]` / `message_stop` early: no finish reason
                    break
                if reply.fault == "malformed" and n == cut_at:
                    await response.write(b"data: {\"choices\": [{\"delta\": {\"content\": \"x\"\n\n")
                await response.write(event)
            await response.write_eof()
            self.completed += 1
            return response
        except asyncio.CancelledError:  # the client closed the request (handler_cancellation)
            self.disconnects += 1
            raise


@contextlib.asynccontextmanager
async def closed_port() -> Any:
    """A loopback port nothing listens on (bound, then released): connecting to it is refused."""
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    yield port
