"""Scripted models for tests and teaching notebooks, reached through the model seam like any model.

An agent whose `get_model()` returns `scripted.model` (`"think-scripted/<id>"`) streams exactly
the script, so the code under test is the code users run (only the model is replaced). Scripted
models run in-process (`think_nb.models.inprocess`, no litellm); the same script also works as
the litellm custom provider `think-scripted` (`ModelConfig(scripted.model, via_litellm=True)`):

    scripted = ScriptedModel([
        [ScriptedModel.tool_call("add", {"a": 2, "b": 40})],        # step 1: call a tool
        [ScriptedModel.text("The answer is 42."), ScriptedModel.usage(20, 6)],  # step 2: answer
    ])

Each step is one model call. `scripted.requests` records what the model was sent.

Recording costs a call no copy of its history: the call keeps a reference (the list is copied,
not its messages) and the plain-JSON snapshot is made when `requests` is first read (a long
scripted conversation stays flat per turn; the engine never changes a sent message).

A `FunctionModel` reacts instead of replaying: its function is called once per model call with
the OpenAI-format messages and a `ModelCallInfo` (the tools offered, the call's options, the call
number), and returns that call's reply (a string, or the same items a script step holds). It is
reached the same way (`fm.model`, `"think-scripted/function-<id>"`), in-process or through litellm:

    def reply(messages, info):
        last = messages[-1]
        if last["role"] == "tool":                                   # step 2: the tool's result
            return f"The answer is {last['content']}."
        return ScriptedModel.tool_call("add", {"a": 2, "b": 40})      # step 1: call a tool

    fm = FunctionModel(reply)
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from think_nb.errors import ModelError, UserError
from think_nb.jsonsafe import dumps_plain
from think_nb.models.litellm_env import register_provider
from think_nb.models.resolve import SCRIPTED_PROVIDER

__all__ = ["FakeClock", "FunctionModel", "ModelCallInfo", "ScriptedModel", "number_tool_reply", "play",
           "start_local_ray"]

_REGISTRY: dict[str, ScriptedModel | FunctionModel] = {}
_ids = itertools.count(1)
_function_ids = itertools.count(1)


@dataclass
class _Item:
    kind: str  # text | reasoning | reasoning-deltas | deltas | tool_call | error | usage | silent | stall
    value: Any
    chunk_size: int = 3


@dataclass
class ScriptedModel:
    """A deterministic model: a list of steps, each a list of script items, consumed one step per call.

    Args:
        steps: `[[item, ...], ...]`; items from `ScriptedModel.text/tool_call/usage/error`.
        delay: seconds to sleep before each streamed chunk (to make a turn take time).

    Attributes:
        model: the litellm model string to return from `get_model()`.
        requests: one entry per call: `{"messages": [...], "tools": [...], "options": {...}}`.

    A call after the last step raises `RuntimeError("ScriptedModel ... has no step left")`,
    which the turn reports as an `error` chunk.
    """

    steps: list[list[_Item]]
    delay: float = 0.0
    model: str = ""
    record: bool = True
    """False: `requests` stays empty (a benchmark's script keeps no reference to what it was sent,
    as a provider keeps nothing; recording every request's history grows what the garbage collector
    scans turn after turn)."""
    calls: int = field(default=0, init=False)
    """Calls so far (numbers the scripted tool-call ids: `call_<call>_<index>`)."""
    _requests: list[dict] = field(default_factory=list, init=False, repr=False)
    _unread: int = field(default=0, init=False, repr=False)  # calls recorded by reference, from the end

    def __post_init__(self) -> None:
        self.steps = [list(step) for step in self.steps]
        self.model = f"{SCRIPTED_PROVIDER}/script-{next(_ids)}"
        _REGISTRY[self.model.split("/", 1)[1]] = self

    @staticmethod
    def text(text: str, chunk_size: int = 3) -> _Item:
        """Stream `text` as content deltas of `chunk_size` characters."""
        return _Item("text", text, chunk_size)

    @staticmethod
    def tool_call(name: str, arguments: dict | str, id: str | None = None, chunk_size: int = 8) -> _Item:
        """Call tool `name`; the JSON arguments stream in pieces of `chunk_size` characters.
        Pass a string to send raw (possibly invalid) argument text."""
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return _Item("tool_call", {"name": name, "arguments": raw, "id": id}, chunk_size)

    @staticmethod
    def reasoning(text: str, chunk_size: int = 3) -> _Item:
        """Stream `text` as reasoning deltas of `chunk_size` characters (an OpenAI-compatible
        model's `reasoning_content`: `reasoning-*` chunks, a `reasoning` part). Played in-process
        (litellm's custom-provider path drops it)."""
        return _Item("reasoning", text, chunk_size)

    @staticmethod
    def reasoning_deltas(deltas: list[str]) -> _Item:
        """Stream exactly these reasoning deltas (used to replay a recorded turn; in-process only,
        as `reasoning`)."""
        return _Item("reasoning-deltas", list(deltas))

    @staticmethod
    def deltas(deltas: list[str]) -> _Item:
        """Stream exactly these content deltas (used to replay a recorded turn)."""
        return _Item("deltas", list(deltas))

    @staticmethod
    def usage(prompt_tokens: int | None, completion_tokens: int | None) -> _Item:
        """Report token usage for this call, as the provider would. A call without a `usage` item
        reports none: the turn's usage is unknown (litellm's estimate kept apart as
        `estimated_tokens`); `usage(None, None)` (either count None) is the same
        as leaving it out (a replayed turn whose usage was unknown)."""
        if prompt_tokens is None or completion_tokens is None:
            return _Item("usage", None)
        return _Item("usage", {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                               "total_tokens": prompt_tokens + completion_tokens})

    @staticmethod
    def finish(reason: str) -> _Item:
        """End this call with the provider's finish reason `reason`, e.g. `"length"`: the reply was
        cut at its output token limit (the panel then offers Continue)."""
        return _Item("finish", reason)

    @staticmethod
    def silent() -> _Item:
        """End this call's stream without sending a single chunk (no text, no finish reason, no
        usage): a provider that streams nothing. The step's usage is then unknown."""
        return _Item("silent", None)

    @staticmethod
    def stall(seconds: float | None = None) -> _Item:
        """Stop sending at this point for `seconds` (None: until the call is cancelled): a provider
        whose stream hangs (the stall watchdog's test case)."""
        return _Item("stall", seconds)

    @staticmethod
    def wait(event: Any) -> _Item:
        """Stop sending at this point until `event` (an `asyncio.Event`, set on the turn's loop) is
        set: a provider that pauses where the test decides (e.g. to queue a second message)."""
        return _Item("wait", event)

    @staticmethod
    def error(message: str) -> _Item:
        """Fail the call at this point with `RuntimeError(message)`."""
        return _Item("error", message)

    @property
    def requests(self) -> list[dict]:
        """One entry per call so far: `{"messages": [...], "tools": [...], "options": {...}}`, plain
        JSON copies of what the model was sent (snapshotted on this first read after the call)."""
        if self._unread:
            for entry in self._requests[len(self._requests) - self._unread:]:
                entry["messages"] = json.loads(dumps_plain(entry["messages"]))  # copied in C
            self._unread = 0
        return self._requests

    def next_step(self, messages: list, optional_params: dict) -> list[_Item]:
        self.calls += 1
        if self.record:
            self._requests.append({"messages": list(messages),  # by reference; copied when `requests` is read
                                   "tools": optional_params.get("tools") or [],
                                   "options": {k: v for k, v in optional_params.items() if k != "tools"}})
            self._unread += 1
        if not self.steps:
            raise RuntimeError(f"ScriptedModel {self.model!r} has no step left (call {self.calls}): this demo's "
                               "script is used up; run the cell that made the agent again, or give the agent "
                               "a real model (get_model).")
        return self.steps.pop(0)


Reply = str | _Item | list[str | _Item]
"""What a `FunctionModel`'s function returns for one call: a string (the reply's text), one
`ScriptedModel` item, or a list of strings and items (a script step)."""


@dataclass(frozen=True)
class ModelCallInfo:
    """What a `FunctionModel`'s function is told about one model call, besides the messages.

    Attributes:
        model: the model string called (`"think-scripted/function-<id>"`).
        call: this model's call number, from 1 (every step of every turn, and a compaction summary,
            is one call); it numbers the call's tool-call ids `call_<call>_<index>`.
        tools: the tools offered, as sent: OpenAI function declarations
            `[{"type": "function", "function": {"name", "description", "parameters"}}, ...]`
            (`[]`: none offered).
        options: the call's other arguments as sent (`tool_choice`, `temperature`, `max_tokens`, ...).
    """

    model: str
    call: int
    tools: list[dict]
    options: dict

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered, in order."""
        return [t.get("function", {}).get("name", "") for t in self.tools]


class FunctionModel:
    """A model whose every call is answered by a function: a model that reacts to what it is sent.

    `fn(messages, info)` is called once per model call (each step of a turn) with plain-JSON copies
    of the OpenAI-format messages sent (`[{"role": "system"|"user"|"assistant"|"tool", ...}]`; a
    tool's result is a `{"role": "tool", "tool_call_id", "content"}` message, its content the
    result as JSON text, or `"Error: ..."` for a call that failed) and a `ModelCallInfo`. It may
    be sync or async (a coroutine is awaited) and returns what the model says on that call
    (`Reply`): a string (text streamed in pieces of `stream_chunk_size` characters), one
    `ScriptedModel` item (`ScriptedModel.text`, `.tool_call`, `.usage`, `.error`, `.finish`, ...)
    or a list of strings and items, streamed exactly as a `ScriptedModel` step is.

    Args:
        fn: `(messages: list[dict], info: ModelCallInfo) -> Reply` (or an awaitable of one).
        stream_chunk_size: characters per streamed content delta of a returned string (>= 1).
        delay: seconds to sleep before each streamed chunk (to make a turn take time).

    Attributes:
        model: the model string to return from `get_model()` (`"think-scripted/function-<id>"`); it
            also works as `ModelConfig(fm.model, via_litellm=True)`.
        calls: calls so far.
        requests: one entry per call: `{"messages": [...], "tools": [...], "options": {...}}`,
            plain JSON copies of what the model was sent (as `ScriptedModel.requests`).

    Raises (as the model call's error: the turn ends `error` with this one line, the user's
    message is kept):
        ModelError: `fn` raised; the message names the function, the exception and the call.
        UserError: `fn` returned something else than a `Reply`; the message says what to return.
    """

    def __init__(self, fn: Callable[[list[dict], ModelCallInfo], Reply | Awaitable[Reply]], *,
                 stream_chunk_size: int = 3, delay: float = 0.0) -> None:
        if not callable(fn):
            raise UserError(f"FunctionModel(fn) takes a function (messages, info) -> reply, not {fn!r}.")
        if not isinstance(stream_chunk_size, int) or isinstance(stream_chunk_size, bool) or stream_chunk_size < 1:
            raise UserError(f"FunctionModel stream_chunk_size must be a positive int, not {stream_chunk_size!r}.")
        self.fn = fn
        self.stream_chunk_size = stream_chunk_size
        self.delay = delay
        self.calls = 0
        self.requests: list[dict] = []
        self.model = f"{SCRIPTED_PROVIDER}/function-{next(_function_ids)}"
        _REGISTRY[self.model.split("/", 1)[1]] = self

    def __repr__(self) -> str:
        return f"FunctionModel({_name_of(self.fn)}, model={self.model!r}, calls={self.calls})"

    def __setstate__(self, state: dict) -> None:
        """Unpickled in another process (a Ray worker running a batch run's rows, which gets the
        agent's class by cloudpickle): registered there under the same model string."""
        self.__dict__.update(state)
        _REGISTRY[self.model.split("/", 1)[1]] = self

    async def respond(self, messages: list, optional_params: dict) -> tuple[list[_Item], int]:
        """One call: records the request, calls `fn`, returns its reply as items and the call number."""
        self.calls += 1
        call = self.calls
        sent = dumps_plain({"messages": list(messages), "tools": optional_params.get("tools") or [],
                            "options": {k: v for k, v in optional_params.items() if k != "tools"}})
        self.requests.append(json.loads(sent))
        seen = json.loads(sent)  # fn's own copy: what it changes is neither stored nor recorded
        info = ModelCallInfo(self.model, call, seen["tools"], seen["options"])
        name = _name_of(self.fn)
        try:
            reply = self.fn(seen["messages"], info)
            if inspect.isawaitable(reply):
                reply = await reply
        except Exception as exc:
            raise ModelError(f"FunctionModel function {name!r} raised {type(exc).__name__}: {exc} "
                             f"(call {call}).") from exc
        return self._items(reply, name), call

    def _items(self, reply: Any, name: str) -> list[_Item]:
        if isinstance(reply, str):
            return [ScriptedModel.text(reply, self.stream_chunk_size)]
        if isinstance(reply, _Item):
            return [reply]
        if isinstance(reply, (list, tuple)):
            bad = [r for r in reply if not isinstance(r, (str, _Item))]
            if not bad:
                return [ScriptedModel.text(r, self.stream_chunk_size) if isinstance(r, str) else r for r in reply]
            what = f"a {type(reply).__name__} holding {_short(bad[0])} ({type(bad[0]).__name__})"
        else:
            what = f"{_short(reply)} ({type(reply).__name__})"
        raise UserError(f"FunctionModel function {name!r} returned {what}; return a str (the reply's text), "
                        "a ScriptedModel item (ScriptedModel.text(...), .tool_call(...), .usage(...), "
                        ".error(...)) or a list of them.")


def _name_of(fn: Any) -> str:
    """`fn`'s qualified name without its enclosing functions (`Tutor.reply`, `reply`), else its repr."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name.rsplit("<locals>.", 1)[-1] if isinstance(name, str) else repr(fn)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class _Stall:
    seconds: float | None
    event: Any = None


def _generic_chunks(items: list[_Item], call: int) -> Iterator[dict | list[dict] | Exception | _Stall]:
    """The step's chunks, in order; a text item's chunks come as one list (`play_batches` hands
    them over together)."""
    if any(item.kind == "silent" for item in items):
        return
    usage = None
    has_tools = False
    tool_index = 0
    for item in items:
        if item.kind == "text":
            size = item.chunk_size
            yield [{"text": item.value[start:start + size], "tool_use": None, "is_finished": False,
                    "finish_reason": "", "usage": None, "index": 0} for start in range(0, len(item.value), size)]
        elif item.kind == "reasoning":
            for start in range(0, len(item.value), item.chunk_size):
                yield {**_chunk(), "reasoning_content": item.value[start:start + item.chunk_size]}
        elif item.kind == "deltas":
            yield [{"text": delta, "tool_use": None, "is_finished": False, "finish_reason": "", "usage": None,
                    "index": 0} for delta in item.value]  # `_chunk(text=delta)` each, without a call per delta
        elif item.kind == "reasoning-deltas":
            yield from ({**_chunk(), "reasoning_content": delta} for delta in item.value)
        elif item.kind == "tool_call":
            has_tools = True
            yield from _tool_chunks(item, tool_index, call)
            tool_index += 1
        elif item.kind == "error":
            yield RuntimeError(item.value)
        elif item.kind == "stall":
            yield _Stall(item.value)
        elif item.kind == "wait":
            yield _Stall(None, item.value)
    finish = "tool_calls" if has_tools else "stop"
    for item in items:
        if item.kind == "usage":
            usage = item.value
        elif item.kind == "finish":
            finish = item.value
    yield _chunk(is_finished=True, finish_reason=finish, usage=usage)


def _tool_chunks(item: _Item, index: int, call: int) -> Iterator[dict]:
    value, raw, size = item.value, item.value["arguments"], item.chunk_size
    call_id = value["id"] or f"call_{call}_{index}"
    pieces = value.get("pieces") or [raw[i:i + size] for i in range(0, len(raw), size)] or [""]
    for n, piece in enumerate(pieces):
        first = n == 0
        yield _chunk(tool_use={"id": call_id if first else None, "type": "function", "index": index,
                               "function": {"name": value["name"] if first else None, "arguments": piece}})


def _chunk(text: str = "", tool_use: dict | None = None, is_finished: bool = False,
           finish_reason: str = "", usage: dict | None = None) -> dict:
    return {"text": text, "tool_use": tool_use, "is_finished": is_finished, "finish_reason": finish_reason,
            "usage": usage, "index": 0}


async def play(model: str, messages: list, optional_params: dict) -> AsyncIterator[dict]:
    """One call of the `ScriptedModel` (or `FunctionModel`) named by `model`: its next step as litellm
    `GenericStreamingChunk` dicts (called by litellm through the `think-scripted` custom provider)."""
    async for batch in play_batches(model, messages, optional_params):
        for chunk in batch:
            yield chunk


async def play_batches(model: str, messages: list, optional_params: dict) -> AsyncIterator[list[dict]]:
    """`play`, its chunks handed over in lists (what `think_nb.models.inprocess` calls): the chunks
    that are ready together (every chunk up to the script's next stall, wait or error) come as one
    list, as a real model hands over the tokens it made since it was last read; with a `delay`,
    one chunk a list, after each wait."""
    source = _lookup(model)
    items, call = await _next_items(source, messages, optional_params)
    delay = source.delay
    batch: list[dict] = []
    for item in _generic_chunks(items, call):
        if not delay:
            if type(item) is list:
                batch.extend(item)
                continue
            if type(item) is dict:
                batch.append(item)
                continue
        if batch:
            yield batch
            batch = []
        for chunk in item if isinstance(item, list) else (item,):
            if delay:
                await asyncio.sleep(delay)
            if isinstance(chunk, _Stall):
                if chunk.event is not None:
                    await chunk.event.wait()
                else:
                    await (asyncio.sleep(chunk.seconds) if chunk.seconds is not None else asyncio.Event().wait())
                continue
            if isinstance(chunk, Exception):
                raise chunk
            yield [chunk]
    if batch:
        yield batch


async def _next_items(source: ScriptedModel | FunctionModel, messages: list,
                      optional_params: dict) -> tuple[list[_Item], int]:
    """The items of `source`'s next call and that call's number (it numbers the tool-call ids)."""
    if isinstance(source, FunctionModel):
        return await source.respond(messages, optional_params)
    return source.next_step(messages, optional_params), source.calls


def _make_handler() -> Any:
    from litellm import CustomLLM
    from litellm.types.utils import ModelResponse

    class ScriptedHandler(CustomLLM):
        """litellm custom provider that plays `ScriptedModel` scripts and `FunctionModel` replies."""

        # litellm declares astreaming a coroutine returning an iterator, but iterates what the
        # call returns (main.py hands it to CustomStreamWrapper): an async generator is right.
        async def astreaming(  # type: ignore[override]
            self, model: str, messages: list, *args: Any, **kwargs: Any
        ) -> AsyncIterator[Any]:
            async for batch in play_batches(model, messages, kwargs.get("optional_params") or {}):
                for chunk in batch:
                    yield chunk

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
            items, _ = await _next_items(_lookup(model), messages, kwargs.get("optional_params") or {})
            text = "".join(i.value if i.kind == "text" else "".join(i.value) for i in items
                           if i.kind in ("text", "deltas"))
            for item in items:
                if item.kind == "error":
                    raise RuntimeError(item.value)
            return ModelResponse(choices=[{"message": {"role": "assistant", "content": text}}])

    return ScriptedHandler()


def _lookup(model: str) -> ScriptedModel | FunctionModel:
    key = model.split("/", 1)[-1]
    if key not in _REGISTRY:
        if key.startswith("function-"):
            raise RuntimeError(f"No FunctionModel named {model!r} in this process; create it with FunctionModel(fn).")
        raise RuntimeError(f"No ScriptedModel named {model!r} in this process; create it with ScriptedModel([...]).")
    return _REGISTRY[key]


register_provider(SCRIPTED_PROVIDER, _make_handler)


class FakeClock:
    """A clock for scheduled tasks that moves only when told (`Think.schedule_clock = FakeClock()`):
    `advance(seconds)` moves time on and wakes the scheduler; nothing sleeps for real.

    Args:
        start: the starting time, epoch seconds.
    """

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self.t = float(start)
        self._tick: asyncio.Event | None = None

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        """Move time on by `seconds` and wake every waiting scheduler."""
        self.t += float(seconds)
        if self._tick is not None:
            self._tick.set()
            self._tick = None

    async def sleep_until(self, when: float, wake: asyncio.Event) -> None:
        while self.t < when and not wake.is_set():
            if self._tick is None:
                self._tick = asyncio.Event()
            tick = asyncio.ensure_future(self._tick.wait())
            woken = asyncio.ensure_future(wake.wait())
            try:
                await asyncio.wait({tick, woken}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                tick.cancel()
                woken.cancel()


def number_tool_reply(tool: str, answer: str) -> Callable[[list[dict], ModelCallInfo], Reply]:
    """A `FunctionModel` function for batch tests and benchmarks: on the user's message it calls
    `tool` with `{"x": <the number ending the message>}`; on the tool's result it answers
    `"<answer> <result>"`, e.g. `number_tool_reply("triple", "triple is")` answers "Triple 4"
    with "triple is 12" (usage 10 in / 2 out, then 10 / 3)."""

    def reply(messages: list[dict], info: ModelCallInfo) -> Reply:
        last = messages[-1]
        if last["role"] == "tool":
            return [f"{answer} {last['content']}", ScriptedModel.usage(10, 3)]
        text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
        return [ScriptedModel.tool_call(tool, {"x": int(text.split()[-1])}), ScriptedModel.usage(10, 2)]

    reply.__name__ = reply.__qualname__ = f"{tool}_reply"
    return reply


def start_local_ray(num_cpus: int = 2, *, join: bool = True, attempts: int = 3) -> Callable[[], None]:
    """Start a local Ray cluster of `num_cpus` CPUs and connect this process to it, for tests and
    benchmarks of `map(engine="ray")`; returns `stop()`, which disconnects and shuts it down.

    `join=True`: the cluster is started apart (`ray.cluster_utils.Cluster`, its agents' ports given)
    and joined with `ray.init(address=...)`, as a notebook joins a cluster it did not start.
    `join=False`: `ray.init(address="local")`, this process's own cluster (what a user's
    `ray.init()` in a kernel does; `think_nb.batch.ray_engine.reap_with_this_process` applies).
    Ray 2.60's raylet aborts when its dashboard agent takes over 15 s to start, which a loaded
    2-core machine was seen to miss: a start that timed out ("timed out during startup") is
    cleared away (the processes it left killed) and tried again, up to `attempts` times; any other
    failure is raised at once. Needs the `ray` extra."""
    import ray

    for attempt in range(attempts):
        cluster = None
        try:
            if join:
                from ray.cluster_utils import Cluster

                cluster = Cluster()
                cluster.add_node(num_cpus=num_cpus, include_dashboard=False, metrics_agent_port=_free_port(),
                                 metrics_export_port=_free_port(), dashboard_agent_listen_port=_free_port(),
                                 runtime_env_agent_port=_free_port())
                ray.init(address=cluster.address, log_to_driver=False)
            else:
                ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
            break
        except Exception as exc:
            ray.shutdown()
            if cluster is not None:
                cluster.shutdown()
            _kill_ray_children()
            if attempt == attempts - 1 or "timed out during startup" not in str(exc):
                raise

    def stop() -> None:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()

    return stop


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kill_ray_children() -> None:
    """Kill the Ray processes a failed start left among this process's children."""
    import contextlib

    try:
        import psutil  # type: ignore[import-untyped]
    except ImportError:  # not installed: Ray's own shutdown is all there is
        return

    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "/ray/" in " ".join(proc.cmdline()) or proc.name().startswith("ray::"):
                proc.kill()
