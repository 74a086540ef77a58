"""`Think`: the chat-agent base class. Subclass it, override what you need, talk to it.

    from think_nb import Think, tool

    @tool
    def add(a: float, b: float) -> float:
        '''Add two numbers.'''
        return a + b

    class Calc(Think):
        def get_tools(self):
            return [add]

    agent = Calc("calc")                     # transcript in .think/<notebook>.sqlite
    result = await agent.send("What is 2 plus 40?")
    agent.panel()                            # the chat panel (what `%think Calc` shows)

Overridable (Think's names in snake_case; each may be sync or async):
    get_model()            litellm model string or ModelConfig; default: the embedded SmolLM2 model
    get_system_prompt()    the system prompt
    get_tools()            list of functions / Tools, or dict name -> tool
    get_actions()          list of @action functions (think_nb.actions)
    authorize_turn(ctx)    / authorize_action(ctx): the actions' permissions (default: all granted)
    max_steps              class attribute, default 10 (model calls per turn)
Hooks (no-ops by default):
    before_turn(ctx)       once per turn; may return a `TurnConfig`
    before_step(ctx)       before each model call; may return a `StepConfig` for that step
    on_chunk(chunk)        every UIMessageChunk, observation only
    on_step_finish(ctx)    after each step (`StepContext`)
    on_chat_response(res)  after the turn's message is persisted; the next queued turn waits for it (`TurnResult`)
    on_chat_error(error)   may return a replacement error (its text is shown to the user)
    classify_chat_error(error, ctx)  "context_overflow" or None (with `context_overflow` set)
Everything else on the instance is yours: `self.store`, `self.key`, `self.db`, a method named
`workspace_tools`... Think's own names (`think_nb.names.RESERVED`: `messages`, `session`, `send`,
...) may not be redefined or assigned; the class statement or the assignment says so in one line.
The machinery lives beside the class, in `think_nb.runtime.AgentRuntime`.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import json
import logging
import os
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from think_nb import names
from think_nb.actions.authorize import default_decision
from think_nb.aio import script_loop
from think_nb.binding import bind
from think_nb.errors import UserError
from think_nb.messages import new_id, user_message
from think_nb.messages.media import MediaEviction
from think_nb.messages.types import UIMessage, UIMessageChunk
from think_nb.models.resolve import LOCAL_MODEL, ModelConfig
from think_nb.runtime import AgentRuntime
from think_nb.turns.capabilities import DEFAULT_SYSTEM_PROMPT
from think_nb.turns.engine import Messages
from think_nb.turns.hooks import TurnConfig, TurnContext
from think_nb.turns.overflow import ChatErrorContext, ContextOverflow, default_context_overflow_classifier
from think_nb.turns.repair import default_repair
from think_nb.turns.result import StepContext, TurnResult
from think_nb.turns.signal import AbortSignal

if TYPE_CHECKING:
    import pandas as pd
    from fsspec.spec import AbstractFileSystem

    from think_nb.actions.context import ActionAuthorizationContext
    from think_nb.compare import Comparison
    from think_nb.panel.widget import ChatPanel
    from think_nb.session.builder import Session
    from think_nb.turns import recovery
    from think_nb.turns.fork import ForkStepper
    from think_nb.turns.replay import Recording
    from think_nb.turns.stepper import Stepper
    from think_nb.turns.steps import PrepareStepContext, StepConfig
    from think_nb.turns.tool_hooks import ToolCallContext, ToolCallResultContext

T = TypeVar("T", bound="Think")
Json = Any
"""A JSON value (dicts, lists, strings, finite numbers, booleans, None)."""

_PARENT: contextvars.ContextVar[AgentRuntime | None] = contextvars.ContextVar("think_nb_parent", default=None)
"""The runtime of the agent whose `sub_agent` is creating a child (read by the child's `__init__`)."""

log = logging.getLogger("think_nb")



def _execution_id(execution_id: Any) -> str:
    if not isinstance(execution_id, str) or not execution_id:
        raise UserError(f"execution_id={execution_id!r:.40}: pass the id of a parked call, a string from "
                        "agent.pending_executions() (its 'execution_id').")
    return execution_id


def callable_as(cls: type, name: str, **kwargs: Any) -> None:
    """Raise `UserError` unless `cls(name, **kwargs)` binds to its `__init__` (how `%think Calc`
    and `sub_agent` make an agent), naming the fix."""
    try:
        inspect.signature(cls).bind(name, **kwargs)
    except TypeError as exc:
        given = ", ".join([repr(name), *(f"{k}=..." for k in kwargs)])
        raise UserError(f"cannot make the agent as {cls.__name__}({given}): {exc}; give {cls.__name__}.__init__'s "
                        f"other parameters defaults, or make it yourself (agent = {cls.__name__}(...)) and "
                        "pass the instance.") from None
    except ValueError:  # no signature to read: let the call say
        return


class Think:
    """A chat agent whose turns stream AI SDK UIMessageChunks and persist to SQLite.

    Args:
        name: the agent's name; with the class name it keys the agent's storage.
        db: SQLite file path; default `.think/<notebook-stem>.sqlite` beside the notebook
            (see `think_nb.store.location`). The resolved path is `self.db_path`.
        key: storage key; default `"<ClassName>:<name>"` (sub-agents get one under their parent's).

    Names: the overridable methods, hooks and settings below may be redefined in a subclass (and
    the settings set on an instance); Think's other names (`think_nb.names.RESERVED`) may not, and
    a class or an assignment that reuses one is refused with `UserError` naming the clash. Any
    other name is the subclass's own: the machinery is kept in a runtime beside the agent
    (`think_nb.runtime.AgentRuntime`), not in its namespace.
    """

    __runtime: AgentRuntime  # set by __init__ (think_nb.binding); not a name of the user's namespace

    max_steps: int = 10
    send_reasoning: bool = True
    """Stream the model's reasoning to the views (panel, terminal, `chat()` callbacks) and keep it
    in the stored message (Think's `sendReasoning`); False leaves it out of both (`on_chunk` still
    sees it, as Think's `onChunk` does). `TurnConfig.send_reasoning` overrides it per turn."""
    hydration_limit: int | None = 2_000
    """Messages of the current branch loaded into memory (the newest; never fewer than 4); older
    ones stay in SQLite (search, DataFrames). Think's `hydrationByteBudget`, counted in messages.
    None loads everything."""
    message_concurrency: Any = "queue"
    """Overlapping user submissions: "queue" | "latest" | "merge" | "drop" |
    {"strategy": "debounce", "debounce_ms": 750} (Think's `messageConcurrency`; `turns/admission.py`)."""
    chat_stream_stall_timeout: float | None = None
    """Seconds without a chunk (model or tool time) after which a turn is aborted as stalled, its
    partial kept and marked interrupted (Think's `chatStreamStallTimeoutMs`); None: never.
    `TurnConfig.chat_stream_stall_timeout` overrides it per turn (`turns/watchdog.py`)."""
    context_overflow: ContextOverflow | dict[str, Any] | bool | None = None
    """Recover a turn that outgrows the model's context window (Think's `contextOverflow`; off by
    default): `{"reactive": True, "max_retries": 1}` compacts the session and runs the turn again
    when its model call fails with an overflow (`classify_chat_error`); `{"proactive":
    {"max_input_tokens": N, "headroom": 0.9, "max_compactions": 1}}` compacts before a step whose
    previous step read at least N × headroom input tokens. Both may be given; True is
    `{"reactive": True}`. A `ContextOverflow` or a dict of its fields; bad values raise
    `UserError`. See `think_nb.turns.overflow`."""
    media_eviction: MediaEviction | dict[str, Any] | bool | None = True
    """Keep old images and files out of requests and out of the stored transcript (Think's
    `mediaEviction`, on by default). In each request, media older than the last
    `keep_recent_messages` (8, never fewer than 4) messages and at least `min_part_bytes` (32 KiB)
    large, and the oldest past `max_request_bytes` (20 MiB), reach the model as a one-line
    placeholder. After a turn, a background pass rewrites such aged stored messages (at most
    `max_rows_per_pass`, 64, per pass): large `data:` file parts and tool-output strings become
    `[evicted image/png, N bytes; preserved at /attachments/evicted/<id>-<n>.png]`, the bytes kept in
    `agent.workspace` (`externalize_to_workspace=False`: dropped); `chat:media:evicted` reports it.
    True (the defaults), False (off), a `MediaEviction` or a dict of its fields; bad values raise
    `UserError`. See `think_nb.messages.media`, `think_nb.session.media_eviction`."""
    chat_recovery: bool = True
    """Ask `on_chat_recovery` about turns a dead process left unfinished (Think's `chatRecovery`);
    False: their partial replies are still stored, nothing is continued."""
    chat_recovery_max_attempts: int = 3
    """How many recovery turns one interrupted turn may chain (each interrupted in turn) before
    `on_chat_recovery`'s `continue_` is ignored (`ctx.exhausted`); an attempt that recorded new
    parts resets the count (Think's `chatRecovery.maxAttempts`, reset on progress)."""
    chat_recovery_max_recovery_work: int = 1000
    """How many parts a chain's recovery turns may record in all before the chain is sealed
    (`ctx.exhausted_reason == "work_budget_exceeded"`; Think's `chatRecovery.maxRecoveryWork`)."""
    chat_recovery_no_progress_timeout: float | None = 300.0
    """Seconds a chain may go without an attempt recording new parts before it is sealed
    (`"no_progress_timeout"`), or None for no limit (Think's `noProgressTimeoutMs`, in seconds)."""
    include_mcp_tools: bool = True
    """Merge the tools of connected MCP servers into every turn (Think's `includeMcpTools`)."""
    wait_for_mcp_connections: bool | float | dict[str, float] = False
    """Before a turn's first model call, wait for MCP servers still connecting (Think's
    `waitForMcpConnections`): True waits up to 10 s, a number or `{"timeout": s}` up to s
    seconds (at most 600), False not at all. Think's `{timeout: 5000}` counts milliseconds; here
    it is refused in one line (write `{"timeout": 5}`) rather than read as 83 minutes."""
    include_extension_tools: bool = False
    """Give the model `load_extension` and `list_extensions` so it can write its own extensions
    (Think's `createExtensionTools`; off by default, as in Think). See `think_nb.extensions`."""
    extension_timeout: float = 10.0
    """Seconds an extension may run to load or to answer one tool call (then it is an error)."""
    extension_hook_timeout: float = 5.0
    """Seconds each extension hook may run (Think's `hookTimeout`, 5000 ms); then it is skipped."""
    extension_allowed_hosts: tuple[str, ...] | list[str] = ()
    """Hosts (`"api.example.com"`, `"*.example.com"`) an extension granted `network` may fetch;
    an extension reaches only the hosts both its manifest and this list name. Empty: no network."""
    extension_allow_private: tuple[str, ...] | list[str] = ()
    """Private addresses or networks (`"127.0.0.1"`) an extension's fetch may reach anyway
    (the fetch tool's SSRF guard refuses them otherwise)."""
    schedule_clock: Any = None
    """The clock scheduled tasks run by (`think_nb.schedules.clock.Clock`); None: wall time.
    Tests and demos set `think_nb.testing.FakeClock()` to move time by hand."""
    default_model: str | ModelConfig | None = None
    """What the default `get_model()` returns when set: `Think.default_model = "openai/gpt-4o-mini"`
    sets it for every agent of the notebook, `agent.default_model = ...` (or `%think --model`) for one.
    Unset, the `THINK_NB_MODEL` environment variable, then the embedded model (`LOCAL_MODEL`)."""

    include_workspace_tools: bool | None = None
    """Give the model Think's workspace tools (`read`, `write`, `edit`, `list`, `find`, `grep`,
    `delete` over `self.workspace`), merged before `get_tools()` so a tool of yours with the same name
    wins. None (default): yes, except when `get_model()` returns the embedded 135M model (`LOCAL_MODEL`),
    which picks the wrong tool once it is offered ten (measured: `read` instead of `add`). True/False:
    always/never. (Think merges them unconditionally; the opt-out is ours.)"""
    workspace_approval: bool = False
    """True: the workspace's `delete`, and `write` over an existing file, need the user's approval."""
    action_ledger_pending_retry_lease: float | bool = 300.0
    """Seconds after which an action call's ledger row still `pending` (its process died while it
    ran) may be run again, for actions with an explicit `idempotency_key` (Think's
    `actionLedgerPendingRetryLeaseMs`, 5 minutes); False: never (it stays refused)."""
    include_kernel_tools: bool | str = False
    """Give the model the live kernel (`think_nb.kernel.kernel_tools`), merged before `get_tools()`:
    False (default) none; True or "ask": `list_variables`, `notebook_history`, `describe_variable`,
    and `run_code`, which needs the user's approval for each call; "allow": `run_code` runs without
    asking; "off": the three read tools only. (Not Think's: Think has no kernel.)"""

    def __init__(self, name: str = "default", *, db: str | Path | None = None, key: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise UserError(f"name={name!r}: an agent's name is a non-empty string, e.g. Calc('calc').")
        if db is not None and (not isinstance(db, (str, os.PathLike)) or not str(db).strip()):
            raise UserError(f"db={db!r}: pass a file path (str or pathlib.Path) for the SQLite file, or leave it out.")
        runtime = AgentRuntime(self, Think, name, db, key, _PARENT.get())
        bind(self, runtime)
        runtime.open()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a subclass that redefines one of Think's own names (`think_nb.names.RESERVED`)."""
        super().__init_subclass__(**kwargs)
        for klass in cls.__mro__:  # the class and what it inherits before Think (a mixin's names too)
            if klass is Think:
                break
            for attr in vars(klass):
                if attr in names.RESERVED:
                    via = "" if klass is cls else f" (from {klass.__name__})"
                    raise UserError(names.clash(attr, f"class {cls.__name__} defines {attr!r}{via}"))
                problem = (names.setting_problem(attr, vars(klass)[attr], f"class {cls.__name__}")
                           or names.hook_problem(attr, vars(klass)[attr], f"class {cls.__name__}"))
                if problem:
                    raise UserError(problem)

    def __setattr__(self, attr: str, value: Any) -> None:
        if attr in names.RESERVED and attr not in names.ASSIGNABLE:
            raise UserError(names.clash(attr, f"{type(self).__name__}(...).{attr} = ..."))
        problem = (names.setting_problem(attr, value, f"{type(self).__name__}(...)")
                   or names.hook_problem(attr, value, f"{type(self).__name__}(...)"))
        if problem:
            raise UserError(problem)
        object.__setattr__(self, attr, value)

    def __getattr__(self, attr: str) -> Any:  # only for names not found: the runtime before __init__ ran
        if attr == "_Think__runtime":
            raise UserError(f"{type(self).__name__} was not set up: its __init__ must call "
                            "super().__init__(name, ...) before the agent is used.")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def __repr__(self) -> str:
        runtime = vars(self).get("_Think__runtime")
        if runtime is None:
            return f"<{type(self).__name__} (not set up: its __init__ must call super().__init__(name))>"
        return f"<{type(self).__name__} {runtime.name!r}: {len(runtime.conversation)} messages in {runtime.db_path}>"

    @property
    def name(self) -> str:
        """The agent's name (with the class name, it keys the agent's storage)."""
        return self.__runtime.name

    @property
    def db_path(self) -> Path:
        """The resolved path of the agent's SQLite file."""
        return self.__runtime.db_path

    @property
    def parent(self) -> Think | None:
        """The agent that created this one with `sub_agent`, else None."""
        parent = self.__runtime.parent
        return parent.agent if parent is not None else None

    @property
    def recovery_task(self) -> asyncio.Task[TurnResult] | None:
        """Continues/retries the interrupted turns `on_chat_recovery` asked to, after the sub-agents
        resumed for this agent's cut tool calls have answered (None: nothing to do); `await
        agent.recovery_task` waits for them (`think_nb.turns.recovery`, `think_nb.agent_tools`)."""
        return self.__runtime.recovery_task

    # -- overridable -----------------------------------------------------------
    def get_model(self) -> str | ModelConfig:
        """The model for this turn: a litellm model string (`"openai/gpt-4o-mini"`,
        `"anthropic/claude-3-5-haiku-latest"`, `"ollama/llama3.2"`) or a `ModelConfig`.
        Default: `default_model` if set, else the `THINK_NB_MODEL` environment variable, else the
        embedded SmolLM2-135M-Instruct model, offline (`LOCAL_MODEL`)."""
        return self.default_model or os.environ.get("THINK_NB_MODEL") or LOCAL_MODEL

    def get_system_prompt(self) -> str:
        """The system prompt sent first on every model call (used when `configure_session` gives
        no context blocks). The default, `DEFAULT_SYSTEM_PROMPT`, gets Think's capability block
        appended each turn ("You are running inside a Think agent. ...", listing what the turn's
        tools allow; `think_nb.turns.capabilities`); a prompt you return is sent as written."""
        return DEFAULT_SYSTEM_PROMPT

    def get_tools(self) -> list[Any] | dict[str, Any]:
        """Tools offered to the model: functions or `@tool` objects, as a list or a dict name -> tool."""
        return []

    def get_actions(self) -> list[Any] | dict[str, Any]:
        """Actions offered to the model (Think's `getActions`): `@action` functions, as a list (or a
        dict name -> action), merged after `get_tools()` and before extension tools; called every
        turn. An action is a tool with a durable idempotency ledger, approval (`approval-gated`,
        `durable-pause`), permissions, a timeout and bounded outputs: see `think_nb.actions`.
        An entry that is not an `@action` fails the turn in one line."""
        return []

    def get_extensions(self) -> list[dict[str, Any]]:
        """Extensions loaded each time the agent is created (Think's `getExtensions`), in hook
        order: `[{"manifest": {"name", "version", "description"?, "permissions"?: {"workspace":
        "none"|"read"|"read-write", "network": [hosts]}, "context"?: [{"label", "description"?,
        "max_tokens"?}]}, "source": "<python defining tools / hooks / context>"}]`. See
        `think_nb.extensions`. A broken one is reported in `extensions()`, never fatal."""
        return []

    def before_turn(self, ctx: TurnContext) -> TurnConfig | dict[str, Any] | None:
        """Called once per turn after assembly, before the first model call. Return a `TurnConfig`
        (or a dict of its fields) to change this turn's model, system prompt, messages, tools,
        active tools, tool choice, max steps or sampling options; None keeps the defaults."""

    def before_step(self, ctx: PrepareStepContext) -> StepConfig | dict[str, Any] | None:
        """Called before each model call of a turn (Think's `beforeStep`, the AI SDK's
        `prepareStep`) with a `PrepareStepContext`: `step_number` (0-based), `steps` (the finished
        steps' `StepContext`s), `messages`, `model`, `system`, `tools`, `active_tools`. Return a
        `StepConfig` (or a dict of its fields) to change that step only: `model` (a litellm string,
        resolved as `get_model()`'s), `system`, `messages`, `active_tools`, `tool_choice`,
        sampling; None changes nothing. Raising ends the turn with `error`, as `before_turn`."""

    def before_tool_call(self, ctx: ToolCallContext) -> Any:
        """Called before each tool runs. Return None (run), `ToolCallDecision.allow(input)`,
        `ToolCallDecision.block(reason)` (the reason becomes the output; the tool does not run) or
        `ToolCallDecision.substitute(output)` (the tool does not run). Raising fails this call only
        (Think: a throw becomes the tool's error): the call is an `output-error` naming this hook,
        the model reads it, the tool does not run, and the turn goes on."""

    def after_tool_call(self, ctx: ToolCallResultContext) -> Any:
        """Called after each tool call (run, blocked or substituted) with its input, output or
        error, success and `duration_ms`, before the call's result is streamed. Raising fails this
        call only: its result is replaced by an `output-error` naming this hook; the turn goes on."""

    def authorize_turn(self, ctx: TurnContext) -> Any:
        """Grant this turn's action calls their permissions (Think's `authorizeTurn`), once per turn
        after `before_turn`, with the turn's final `TurnContext`. Return True (every permission:
        the default), False (no action call runs; each one's output says it is not authorized) or
        `{"allowed": bool, "reason": str, "granted_permissions": [str, ...]}` (only those). A raise
        or another value fails the turn."""
        return True

    def authorize_action(self, ctx: ActionAuthorizationContext) -> Any:
        """Allow one action call (Think's `authorizeAction`), after its input and required
        permissions are known (`ctx.required_permissions`), before it runs or asks for approval
        (and again when an approved call runs). Return True, False or `{"allowed": bool, "reason":
        str}`; a refused call never runs: its output is `{"error": {"name":
        "ActionAuthorizationError", "message": reason, "permissions": [...]}}`, which the model
        reads. Default: the turn's grant (`authorize_turn`): refused when the turn was, or when a
        required permission was not granted ("Missing required permission: a, b")."""
        return default_decision(ctx)

    def on_chunk(self, chunk: UIMessageChunk) -> Any:
        """Called with every UIMessageChunk of every turn. Observation only."""

    def on_step_finish(self, ctx: StepContext) -> Any:
        """Called after each step with its text, tool calls and results, and token usage."""

    def on_chat_response(self, result: TurnResult) -> Any:
        """Called with the turn's `TurnResult` after its message is persisted (Think's
        `onChatResponse`). The turn keeps the queue until this returns (Think awaits it inside the
        turn), so an async hook ends before the next queued turn starts. A turn this hook starts
        (`await self.save_messages(...)`, or `self.submit(...)` not awaited) runs before queued
        ones, and the queue moves on once it has ended too. What it raises is logged."""

    def on_chat_error(self, error: Exception) -> Any:
        """Called when a turn fails (the partial message is already persisted). Return an
        exception or string to replace what the user sees, or None to keep it. A context
        overflow that `context_overflow` could not recover is a `ModelError` with
        `error.classification == "context_overflow"` (Think's `ChatErrorContext.classification`)."""

    def classify_chat_error(self, error: Exception, ctx: ChatErrorContext) -> str | None:
        """What a failed model call's `error` means (Think's `classifyChatError`): `"context_overflow"`
        (the prompt exceeded the model's context window) or None; `"rate_limit"`, `"transient"`,
        `"fatal"`, `"unknown"` are Think's other values, not acted on. Asked only when
        `context_overflow` is reactive, with `ctx.stage == "stream"` and `ctx.request_id`; may be
        async; what it raises is logged and counts as None. `error` is the turn's `ModelError`,
        the provider's exception its `__cause__`. Default: `default_context_overflow_classifier`
        (Think's default classifies nothing; its classifier must be assigned)."""
        return default_context_overflow_classifier(error, ctx)

    def configure_channels(self) -> dict[str, Any]:
        """The channels this agent talks through (Think's `configureChannels`), read at each use:
        `{channel_id: {"kind": "web" | "messenger" | "voice" | "custom", "instructions": text or
        fn(ChannelContext), "tools": [names] or fn(all_tools) -> tools, "max_turns": n,
        "capabilities": {...}}}` (every key optional; kind defaults to "custom"). The implicit
        "web" channel is always there (an entry "web" may change its policy, not its kind). A
        turn sent with `channel=` gets that channel's policy before `before_turn`: instructions
        prepended to the system prompt, tools narrowed, `max_turns` as its step limit unless
        `before_turn` returns `max_steps`. Must be sync. Bad entries raise `UserError`. See
        `think_nb.channels`."""
        return {}

    def on_submission_status(self, inspection: dict[str, Any]) -> Any:
        """Called on every status change of a submission (Think's `onSubmissionStatus`): accepted
        (`pending`), `running`, then `completed` | `error` | `aborted` | `skipped` (and `pending`
        again / `error` for a dead process's running one), with the inspection dict
        (`inspect_submission`'s). May be async; awaited in order before the drain goes on (the
        `pending` call before `submit_messages` returns). What it raises is logged, and the
        submission goes on."""

    # -- the workspace (Think's this.workspace) ------------------------------------
    @property
    def workspace(self) -> AbstractFileSystem:
        """The agent's virtual file system, an fsspec `AbstractFileSystem` (Think's `this.workspace`).

        Default: `think_nb.workspace.WorkspaceFileSystem` over this agent's rows in the notebook's
        SQLite file (survives restarts), large files spilled to `.think/<stem>.files/`. Assign any
        fsspec file system to swap the backend (`agent.workspace = fsspec.filesystem("memory")`, a
        `DirFileSystem` over a folder, a bucket): the default tools use whatever is assigned.
        Assigning anything else raises `UserError`."""
        return self.__runtime.workspace

    @workspace.setter
    def workspace(self, fs: AbstractFileSystem) -> None:
        self.__runtime.workspace = fs

    def workspace_df(self) -> pd.DataFrame:
        """The workspace's files as a DataFrame: path, size (bytes), modified (UTC timestamp)."""
        from think_nb.workspace.frame import files_frame

        return files_frame(self.__runtime.workspace)

    # -- messages ---------------------------------------------------------------
    @property
    def messages(self) -> list[UIMessage]:
        """The current branch of the transcript, oldest first (a live view; do not mutate)."""
        return cast("list[UIMessage]", self.__runtime.messages)

    def get_messages(self) -> list[UIMessage]:
        """A deep copy of the current branch."""
        return cast("list[UIMessage]", copy.deepcopy(self.__runtime.messages))

    def clear_messages(self) -> None:
        """Delete this agent's transcript (storage and views), cancel the running turn and skip
        queued ones, and forget the panel's client tool schemas of the last request (Think's
        `clearMessages`)."""
        self.__runtime.clear()

    # -- export and import ------------------------------------------------------------------
    def export(self, format: str = "markdown", path: str | Path | None = None) -> str:
        """The current branch as `format`: "markdown" | "ipynb" | "json" | "html" (see
        `think_nb.frontends.export`: tool calls with inputs and results, approvals, usage, errors). With
        `path`, also writes it there (UTF-8) and returns the text. Raises `UserError` for another
        format. JSON reads back with `import_messages`."""
        from think_nb.frontends import export as exporting

        text = exporting.export(copy.deepcopy(self.__runtime.messages), format, agent_class=type(self).__name__,
                                agent_name=self.name)
        if path is not None:
            Path(path).expanduser().write_text(text, encoding="utf-8")
        return text

    def import_messages(self, source: Any) -> int:
        """Load a transcript written by `export("json")` (a path, its text, the parsed document or
        a list of UIMessages) into this agent's active session, which must be empty (use
        `create_session()` or `clear_messages()` first); returns the number of messages stored.

        Runs no turn. Goes through the message trust boundary (`check_imported`): settled tool
        calls are kept as history, a pending call or approval is refused; nothing is stored
        unless every message passes. Raises `UserError` (one line) otherwise."""
        from think_nb.frontends import export as exporting
        from think_nb.messages.validate import check_imported

        messages = check_imported(exporting.read_json(source))
        runtime = self.__runtime
        if runtime.is_running or runtime.store.messages.count():
            raise UserError(f"import_messages: {self.name!r} already has a transcript in this session; import into "
                            "an empty one: agent.create_session() (or agent.clear_messages()) first.")
        for message in messages:
            runtime.conversation.append(message)
        runtime.messages_changed()
        return len(messages)

    # -- config and branches ---------------------------------------------------------------
    def configure(self, config: Any) -> None:
        """Persist one JSON-compatible config value for this agent; survives kernel restarts
        (Think's `configure`, stored under `_think_config`)."""
        try:
            json.dumps(config, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UserError(f"configure() needs a JSON value (dicts, lists, strings, finite numbers): {exc}") from None
        self.__runtime.store.state.set("_think_config", config)

    def get_config(self) -> Any:
        """The value stored by `configure`, or None if never set (Think's `getConfig`)."""
        return self.__runtime.store.state.get("_think_config")

    def get_on_start_degradations(self) -> list[dict[str, str]]:
        """The start-up steps that failed when this agent was created, `[{"step": ..., "error":
        "<Type>: <message>"}]` in the order they failed (Think's `getOnStartDegradations()`:
        best-effort steps, cloudflare/agents#1710). Steps: `transcript-hydration` (the branch could
        not be read: `messages` is empty until a later turn reads it; cleared then),
        `durable-work-recovery` (a dead process's turns and submissions were not recovered),
        `scheduled-task-reconcile` (`get_scheduled_tasks()` or the stored tasks failed). Each failure
        was also emitted as `chat:onstart:degraded` and warned (`think_nb.startup`)."""
        return self.__runtime.on_start_degradations()

    def get_branches(self, message_id: str) -> list[dict[str, Any]]:
        """The alternatives at `message_id`'s position (itself and its siblings, oldest first),
        e.g. every reply produced by `regenerate()`. Raises `UserError` for an unknown id."""
        return self.__runtime.get_branches(message_id)

    def switch_branch(self, message_id: str) -> None:
        """Make the branch through `message_id` current (following its newest descendants).
        Raises `UserError` for an unknown id (nothing changes)."""
        runtime = self.__runtime
        runtime.conversation.switch_branch(message_id)
        runtime.messages_changed()

    def on_chat_recovery(self, ctx: recovery.ChatRecoveryContext) -> Any:
        """Called, when the agent is created, for each turn a dead process left unfinished, and
        when the stall watchdog ends a turn (`ctx.reason`: `process-ended` | `stalled`) (Think's
        `onChatRecovery`). Return a `RecoveryDecision(persist=True, continue_=False)` (the default,
        also for None): `persist` stores the partial reply (settled tool results are kept either
        way), `continue_` starts a turn that continues it (or answers the user message again when
        nothing was streamed). May be async (then it runs in `agent.recovery_task`)."""
        return None

    def stash(self, data: Any) -> None:
        """Checkpoint `data` (JSON-serialisable) for the turn this code runs in, from a hook or a
        tool, whatever started the turn (`send`, `save_messages`, `chat`, the panel) (Think's
        `this.stash(data)`). If the turn is interrupted (its kernel dies, or the stall watchdog
        ends it), `on_chat_recovery` reads it back as `ctx.recovery_data`; a turn that ends in its
        own process deletes it. A later call replaces it. Raises `UserError` outside a turn or for
        data JSON cannot hold (`think_nb.turns.stash`)."""
        from think_nb.turns import stash as checkpoint

        runtime = self.__runtime
        running = runtime.engine.current_turn
        checkpoint.stash(runtime.store, runtime.key, running.request_id if running is not None else None, data)

    def should_keep_recovering(self, ctx: recovery.ChatRecoveryContext) -> bool:
        """Asked before `on_chat_recovery` for each interrupted turn of a chain not sealed yet
        (Think's `chatRecovery.shouldKeepRecovering`; `ctx.incident_id`, `attempt`, `max_attempts`,
        `work`, `age_ms`). Return False to seal the chain (`ctx.exhausted`, `exhausted_reason
        "recovery_aborted"`: nothing continues it, `on_exhausted` is called). Default True; a raise
        is logged and counts as True."""
        return True

    def on_exhausted(self, ctx: recovery.ChatRecoveryContext) -> Any:
        """Called once when a chain is sealed while `on_chat_recovery` asked to continue it
        (Think's `chatRecovery.onExhausted`; `ctx.exhausted_reason`, `ctx.partial`, `ctx.work`, ...).
        Whatever it does, raising included (logged), the turn has ended `interrupted` (a dead
        process's) or `aborted` (stalled) in the store and the views show it as the terminal state.
        May be async (awaited in a task on the loop)."""
        return None

    def repair_interrupted_tool_part(self, part: dict[str, Any]) -> dict[str, Any]:
        """How a tool part left without a result is repaired before the next model call (Think's
        `repairInterruptedToolPart`): default `output-error` "The tool call was interrupted before a
        result was recorded.". An override returns the part settled (same `type` and `toolCallId`,
        state `output-available` / `output-error` / `output-denied`) or None for the default;
        anything else fails the turn with a `HookError` naming it."""
        return default_repair(part)

    # -- turns (Think's entry points; the TurnEngine runs them) ---------------------------
    def submit(self, message: dict[str, Any] | str, request_id: str | None = None, *, trigger: str = "programmatic",
               body: dict[str, Any] | None = None, client_tools: list[dict[str, Any]] | None = None,
               context: dict[str, Any] | None = None, output_type: type | None = None, channel: str | None = None,
               metadata: dict[str, Any] | None = None) -> asyncio.Future[TurnResult]:
        """Start a turn with one user message (UIMessage or text) in the background; returns at once.

        `trigger` (`panel`, `cell`, `programmatic`; `send` and `save_messages` record their own) is
        recorded in the turn log; `client_tools`: the
        panel's own client tool schemas `{name, description?, parameters?}` (a panel request without
        them forgets earlier ones, as Think does). `body`: the request's custom body (a JSON
        object, `before_turn`'s `ctx.body`), kept as Think's `lastBody` for the continuations
        after this turn (`continue_last_turn()`, a client tool result's, recovery's); a panel
        request without one clears it (`think_nb.turns.last_body`).
        Subject to `message_concurrency` when another turn is running or queued. Needs a running
        event loop (a notebook cell, a coroutine); raises `UserError` without one. The task's
        result is a `TurnResult`. `context` (`{name: object}`, e.g. `{"df": df}`) attaches a bounded
        description of each object as a `data-context` part the model reads after the text
        (`think_nb.data_context`: shape, dtypes, head/tail, describe() of frames; a bounded repr of
        anything else; about `data_context.TOKEN_BUDGET` tokens each); a matplotlib figure or PIL
        image is attached as itself, a `file` part (PNG data URL, at most 5 MiB) a vision model
        sees (`think_nb.messages.media`). Data frames are described (and figures rendered) in
        a worker thread (a snapshot taken now; ~0.1 s for 1,000,000 rows), awaited when the turn
        starts, so the event loop never waits for it; bad `context` raises `UserError` here.
        `output_type` (a pydantic model class): a structured turn, see `send`.
        `channel`: a configured channel (`configure_channels`; an unknown one raises `UserError`)
        whose policy the turn gets, and `metadata` (a JSON dict): the turn's server-side metadata
        (`active_turn_metadata`); both are stamped on the message as `metadata.channel` /
        `metadata.turnMetadata` (Think's `ChatOptions.channel` / `.metadata`). A panel's message
        cannot set either: those keys are removed from it.
        """
        from think_nb import channels

        message = user_message(message) if isinstance(message, str) else message
        if trigger in ("panel", "marimo"):  # untrusted: only the server names a turn's channel
            from think_nb.messages.validate import check_speaker

            check_speaker(message, f"A {trigger} request's message", ("user",))  # nor speaks as system / assistant
            message = channels.strip_reserved(message)
        (message,) = channels.for_turn(self, [message], channel, metadata, "submit")
        extra_parts = None
        if context is not None:
            from think_nb.data_context import context_parts_later

            if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
                raise UserError("context= needs a text message or a UIMessage dict with a 'parts' list.")
            message = {**message, "id": message.get("id") or new_id("msg")}
            extra_parts = {message["id"]: context_parts_later(context)}
        runtime = self.__runtime
        if trigger == "panel" or client_tools is not None:  # a panel request without them clears them
            runtime.set_client_tools(client_tools)
        if trigger == "panel" or body is not None:  # so does one without a custom body (think_nb.turns.last_body)
            body = runtime.set_last_body(body)
        return runtime.start([message], request_id or new_id("req"), trigger=trigger, user_submit=True, body=body,
                           extra_parts=extra_parts, output_type=output_type)

    async def send(self, text: str, *, context: dict[str, Any] | None = None,
                   output_type: type | None = None, channel: str | None = None,
                   metadata: dict[str, Any] | None = None) -> TurnResult:
        """Send one user message and wait for the turn: `result = await agent.send("hi")`;
        `context={"df": df}` attaches data, `channel="sms"` / `metadata={...}` set the turn's
        channel and metadata (see `submit`). `output_type=Invoice` (a pydantic model
        class) makes it a structured turn (Think's structured output): the model may use its tools,
        then answers through a hidden `think_final_answer` tool whose input is validated as an
        `Invoice`, returned as `result.output` (a turn without a valid one ends `error`;
        `think_nb.turns.structured`). Raises `UserError` at once when called from inside this
        agent's running turn (one of its tools or hooks): use `add_messages` or an unawaited
        `submit` there (Think's nested admission guard)."""
        self.__runtime.engine.refuse_nested("send")
        return await self.submit(text, trigger="send", context=context, output_type=output_type, channel=channel,
                                 metadata=metadata)

    def run(self, text: str, *, context: dict[str, Any] | None = None, output_type: type | None = None,
            channel: str | None = None, metadata: dict[str, Any] | None = None) -> TurnResult:
        """Synchronous `send` for scripts and the terminal (no running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # a script: no loop runs here (run the turn outside the except, so its errors chain cleanly)
        else:
            raise UserError("agent.run() cannot be used inside a running event loop (a notebook cell); "
                            "use `await agent.send(...)`, `agent.submit(...)` or `%%think`.")
        self.__runtime.engine.refuse_nested("run")  # a sync tool of this agent's turn (in its worker thread)
        result: TurnResult = script_loop().run_until_complete(self.send(text, context=context, output_type=output_type,
                                                                        channel=channel, metadata=metadata))
        return result

    async def save_messages(self, messages: Messages, *, signal: AbortSignal | None = None,
                            output_type: type | None = None) -> TurnResult:
        """Append messages (or `fn(current_messages) -> messages`, evaluated when the turn starts)
        and run a turn (Think's `saveMessages`); `output_type`: a structured turn (see `send`).

        Returns:
            `TurnResult`: `completed`; `error` (partial persisted); `aborted` (`signal` aborted or
            `abort_request`; partial persisted); `skipped` (invalidated by `clear_messages`, or
            nothing to send).

        Raises:
            UserError: bad messages (before anything is stored; a message with role `system`
                too: instructions from outside go in the system prompt, not the transcript,
                `think_nb.messages.validate.check_speaker`), or called from inside this
                agent's running turn (a tool or hook of it), where waiting for a new turn would
                wait forever: use `add_messages` there (Think's nested admission guard).
        """
        self.__runtime.engine.refuse_nested("save_messages")
        return await self.__runtime.start(messages, new_id("req"), trigger="save_messages", signal=signal,
                                          output_type=output_type)

    async def add_messages(self, messages: Messages, *, parent_id: str | EllipsisType | None = ...,
                           broadcast: bool = True) -> None:
        """Add messages to the transcript without a turn (Think's `addMessages`); safe from inside
        one of this agent's tools while its turn runs (the messages are stored at once; the running
        turn's model calls do not see them, the next turn's do).

        Args:
            messages: UIMessages, or `fn(current_messages) -> messages` (sync or async). Validated
                as `save_messages`' are: untrusted input, no tool parts; a message equal to a stored
                one of the same id is left out (idempotent), a different one with a stored id is refused.
            parent_id: where the first message goes: omitted, under the current leaf; None, at the
                root; a stored message id, under it (a new branch). The messages chain linearly and
                the last one becomes the leaf.
            broadcast: tell the views (panels) at once; never while a turn streams (its next update
                carries them, as in Think).

        Raises:
            UserError: a bad message, or a `parent_id` that is not stored ("does not exist");
                nothing is stored then. Empty input is a no-op.
        """
        await self.__runtime.engine.add_messages(messages, parent_id, broadcast)

    async def run_turn(self, input: Any = None, *, mode: str = "wait", continuation: bool = False,
                       body: dict[str, Any] | None = None, signal: AbortSignal | None = None,
                       submission_id: str | None = None, idempotency_key: str | None = None, metadata: Any = None,
                       callback: Any = None, output_type: type | None = None,
                       channel: str | None = None) -> TurnResult | dict[str, Any] | None:
        """One entry point for a turn, by `mode` (Think's `runTurn`; `think_nb.turns.run_turn`).

        `input`: text (one user message; "" is none), a UIMessage, a list of them, or (not with
        "submit") `fn(current_messages) -> messages`.

        - "wait" (default): `save_messages(input)`, or with `continuation=True` (and no input)
          `continue_last_turn(body)`; returns the `TurnResult` (`message` is the reply). Empty
          input returns `TurnResult("", "skipped")` without a turn.
        - "submit": `submit_messages(input, submission_id=, idempotency_key=, metadata=)`, a
          durable turn that runs after the current one; returns its inspection dict. The way to
          start a turn from inside one of this agent's tools.
        - "stream": `chat(input, callback)`; returns None (static empty input: `on_start`,
          `on_done`, no turn).

        `output_type` (a pydantic model class; "wait" with input only): a structured turn, see `send`.
        `channel`: the turn's configured channel, stamped on its user messages (see `submit`).
        `metadata`: with "submit" the submission's metadata (Think's `RunTurnSubmit.metadata`);
        with "wait" / "stream" the turn's server-side metadata, stamped as `metadata.turnMetadata`
        (`active_turn_metadata`; Think's `ChatOptions.metadata`). A continuation runs on the channel
        and metadata of the last user message, so it takes neither.

        Raises:
            UserError: a bad combination (an unknown mode; wait without input or continuation, or
                with both; continuation outside "wait"; "submit"/"stream" without input; "stream"
                without callback; "submit" with a function), or "wait"/"stream" called from inside
                this agent's running turn (see `save_messages`); an unknown channel; channel or
                metadata with a continuation.
        """
        from think_nb.turns import run_turn

        return await run_turn.run_turn(self, input, mode=mode, continuation=continuation, body=body, signal=signal,
                                       submission_id=submission_id, idempotency_key=idempotency_key,
                                       metadata=metadata, callback=callback, output_type=output_type,
                                       channel=channel)

    async def continue_last_turn(self, body: dict[str, Any] | None = None, *, signal: AbortSignal | None = None,
                                 request_id: str | None = None) -> TurnResult:
        """Run one more model call after the latest assistant message (Think's `continueLastTurn`),
        persisted as a new assistant message marked `metadata.continuation = True`; `skipped`
        (request id "") when the last message is not from the assistant. `body` defaults to the
        last request's custom body (Think's `lastBody`, see `submit`). `request_id` lets a caller
        (the panel's Continue) cancel it from the start. Raises `UserError` from inside this agent's
        running turn (see `save_messages`)."""
        self.__runtime.engine.refuse_nested("continue_last_turn")
        return await self.__runtime.start([], request_id or new_id("req"), trigger="continuation", continuation=True,
                                 body=body, signal=signal)

    async def regenerate(self, request_id: str | None = None, *, signal: AbortSignal | None = None) -> TurnResult:
        """Answer the last user message again; the new reply is a sibling branch (the old one is kept,
        see `get_branches`). `request_id` lets a caller (the panel) cancel it from the start. Raises
        `UserError` from inside this agent's running turn (see `save_messages`)."""
        self.__runtime.engine.refuse_nested("regenerate")
        return await self.__runtime.start([], request_id or new_id("req"), trigger="regenerate", regenerate=True,
                                 signal=signal)

    def step(self, message: str | dict[str, Any]) -> Stepper:
        """Start a turn in step mode: it pauses before each hook; see `think_nb.turns.stepper`.

        Returns a `Stepper`: `stepper.next()` (or `await stepper.next()`) runs to the next pause and
        returns a `HookEvent`; `stepper.run()` finishes; `stepper.cancel()` aborts.
        """
        from think_nb.turns.stepper import Stepper

        return Stepper(self.__runtime.engine, message)

    def fork(self, turn: int | str, at: str = "before_turn", *, model: Any = None, tools: str = "live") -> ForkStepper:
        """Fork a stored turn at one of its hook sites (time travel; think_nb's own, not Think's:
        LangGraph's `update_state` + `invoke(None, checkpoint)` at any hook; `think_nb.turns.fork`).

        Args:
            turn: a request id, or an index into `agent.turns()` (`-1`: the latest).
            at: the hook site: `"before_turn"`, `"before_step:<n>"`, `"before_tool_call:<call id>"`,
                `"after_tool_call:<call id>"`, `"on_step_finish:<n>"`, `"on_chat_response"`
                (`%think history AGENT` lists a turn's sites).
            model: what runs after the fork point: None (the agent's model), a model spec or a
                `ScriptedModel`, or `"recorded"` (the record's own model outputs, step after step).
            tools: `"live"` (run the calls after the fork point) or `"recorded"` (a call whose name
                and arguments match a recorded call gets its recorded result; `stepper.reused`).

        Returns a `ForkStepper` paused at `at` (`stepper.paused`, a `HookEvent`: edit its `ctx` as
        in step mode, then `stepper.run()` or `stepper.next()`). Everything before the fork point is
        reproduced from the turn's record (no model call, no tool run); the reply is a new sibling
        branch of the original (`metadata.fork`), which is never changed. Raises `UserError` (one
        line naming why) for a turn that cannot be reproduced or an unknown site."""
        from think_nb.turns import fork

        return fork.start(self.__runtime, turn, at, model, tools)

    def compare(self, a: Any, b: Any) -> Comparison:
        """Compare two replies side by side (think_nb's own, not Think's; `think_nb.compare`): `a`
        and `b` are message ids, request ids or `TurnResult`s / fork steppers. Returns a `Comparison`:
        `.frame` is a DataFrame (rows: text, each tool call's name / arguments / result, usage,
        cost_usd, duration_ms, model, fork; columns `aspect`, `a`, `b`, `same`), and it shows as
        an HTML view with a word diff in the notebook. Raises `UserError` for an unknown reply."""
        from think_nb import compare

        return compare.compare(self.__runtime, a, b)

    def abort_request(self, request_id: str, reason: str | None = None) -> None:
        """Cancel one turn by request id; its partial message is kept (status `aborted`). No-op for
        unknown or finished ids."""
        self.__runtime.engine.abort_request(request_id, reason)

    def abort_all_requests(self) -> None:
        """Cancel every running or queued turn of this agent."""
        self.__runtime.engine.abort_all()

    @property
    def is_running(self) -> bool:
        """True while a turn is running or queued."""
        return self.__runtime.engine.is_running

    # -- channels and notices (Think's activeChannel / activeTurnMetadata / deliverNotice) --------
    @property
    def active_channel(self) -> Any:
        """The running turn's channel as a `think_nb.channels.ChannelContext` (`channel_id`,
        `kind`, `capabilities`), read from its `before_turn`, tool hooks and tools; None outside a
        running turn (`on_chat_response` runs after it) or for a turn with no channel (Think's
        `activeChannel`)."""
        turn = self.__runtime.engine.current_turn
        return turn.channel if turn is not None else None

    @property
    def active_turn_metadata(self) -> dict[str, Any] | None:
        """A copy of the per-turn metadata (`send(..., metadata=...)`) stamped on the latest user
        message as `metadata.turnMetadata`, read from the stored branch, so a continued or
        recovered turn reads the same; None when it carries none (Think's `activeTurnMetadata`)."""
        from think_nb.channels import turn_metadata_of

        return turn_metadata_of(self.__runtime.messages)

    async def deliver_notice(self, text: str | dict[str, str], *, channel: str | None = None,
                             inform_model: bool = False, kind: str = "notice") -> dict[str, Any]:
        """Append an assistant notice to the transcript without a turn (Think's `deliverNotice`);
        the panels show it. `text`: a string or `{"markdown": ...}`; `channel`: a configured
        channel (default: the running turn's, else "web"); `inform_model`: the stored text is
        "[Delivered to the user out of band] <text>" (what later turns' model reads); `kind`:
        final | interim | notice | command, kept as `metadata.deliveryKind`. Safe from a tool or
        hook of a running turn. Returns the stored message.

        Raises `UserError` (nothing stored) for empty text, an unknown kind or channel, or while a
        tool call of the last message waits for the user (answer it first). See `think_nb.notices`."""
        from think_nb import notices

        runtime = self.__runtime
        return await notices.deliver(self, runtime.engine, text, channel=channel, inform_model=inform_model, kind=kind)

    def has_pending_interaction(self) -> bool:
        """True when a tool call waits for the user: an `approval-requested` part, or a client
        tool call without a result, stored or still streaming (Think's `hasPendingInteraction`).
        It still counts after a kernel restart: the client tools are known from `get_tools()`
        and the panel's stored schemas. A server tool's call left without a result does not."""
        return self.__runtime.engine.has_pending_interaction()

    async def wait_until_stable(self, timeout: float | None = None) -> bool:
        """Wait until no turn is running or queued and nothing waits for the user (Think's
        `waitUntilStable`). `timeout` in seconds (None: for ever); returns False on timeout."""
        return await self.__runtime.engine.wait_until_stable(timeout)

    # -- approvals and client tools (Think's addToolOutput / approval responses) ------------
    def pending_approvals(self) -> list[dict[str, Any]]:
        """Calls waiting for approval, oldest first: `{tool_call_id, tool_name, input, message_id,
        approval_id, waiting_on}`; `waiting_on` is `{tool, input}` of the gated inner call an
        `execute` is paused at (None for a direct call). They are stored, so they survive a
        kernel restart."""
        return self.__runtime.engine.pending_approvals()

    def approve(self, tool_call_id: str, *, code: str | None = None, input: dict[str, Any] | None = None,
                auto_continue: bool = True) -> asyncio.Task[TurnResult] | None:
        """Approve a pending call: it runs in a continuation turn (returned; None when other calls of
        that message still wait, or `auto_continue=False`). In a script (no running event loop, as
        for `run()`), the continuation runs before this returns, and None is returned. The
        continuation of a structured turn (`output_type=`) is structured too: its `output` answers.

        The approval is used once: it is marked used in SQLite when the call starts, and a call
        whose approval was used never runs again (a part set back to `approval-responded`, a call
        the kernel died running); it is settled `output-error` instead
        (`think_nb.turns.repair.USED_TEXT`), as an interrupted ungated call is. (Think's recovery
        would run it again.)

        `code=`: approve a `run_code` call with this code instead of the model's (the same as
        `input={"code": code}`); `input=`: any tool's edited input (a dict of its arguments).
        The edit is checked against the tool's schema first; the model is told that the user
        edited it and what ran; the approvals ledger keeps the model's input too. (Think's
        approval has no edit; this is ours.)

        Raises `UserError` if nothing waits, or for an edited input the tool refuses (nothing is
        recorded then: the call still waits)."""
        if code is not None:
            if input is not None:
                raise UserError("Pass code= or input=, not both; nothing was changed.")
            if not isinstance(code, str):
                raise UserError(f"code={type(code).__name__}: pass the code as a string; nothing was changed.")
            input = {"code": code}
        return self.__runtime.engine.decide(tool_call_id, True, None, auto_continue, input)

    def deny(self, tool_call_id: str, reason: str | None = None, *,
             auto_continue: bool = True) -> asyncio.Task[TurnResult] | None:
        """Deny a pending call: it becomes `output-denied` (with `reason`) and the model is told in a
        continuation turn. Raises `UserError` if nothing waits."""
        return self.__runtime.engine.decide(tool_call_id, False, reason, auto_continue)

    def add_tool_output(self, tool_call_id: str, output: Any = None, *, error_text: str | None = None,
                        state: str | None = None, auto_continue: bool = True) -> asyncio.Task[TurnResult] | None:
        """Record a client tool's result (`output`, or `error_text` / `state="output-error"`).

        Returns the continuation turn's task when this result completed the batch, else None.
        Raises `UserError` when no call with that id waits for a result.
        """
        return self.__runtime.engine.add_tool_output(tool_call_id, output, error_text, state, auto_continue)

    # -- durable pauses (Think's pendingApprovals / approveExecution / rejectExecution) -----------
    def pending_executions(self) -> list[dict[str, Any]]:
        """The `durable-pause` action calls parked for a decision, oldest first (Think's
        `pendingApprovals`: `{execution_id, source: "action", action, tool_call_id, request_id,
        input, descriptor, created_at (epoch s)}`; `descriptor` is Think's approval descriptor).
        Stored in the agent's SQLite file: they survive a restart."""
        return self.__runtime.actions.pending()

    async def approve_execution(self, execution_id: str) -> Any:
        """Run a parked call once (Think's `approveExecution`) and return its output; the output
        replaces the paused one in the transcript, then a continuation turn lets the model read it
        (`await agent.wait_until_stable()` waits for it). Only the first of several approvals (or
        a rejection) of one id wins: a later one returns `{"status": "error", "executionId",
        "error": "... no longer pending ..."}`, never runs the action. Works after a restart."""
        return await self.__runtime.actions.approve(_execution_id(execution_id))

    async def reject_execution(self, execution_id: str, reason: str | None = None) -> Any:
        """Drop a parked call without running it (Think's `rejectExecution`): its output becomes
        `{"status": "rejected", "executionId", "action", "reason"}` (default reason "Rejected by
        user") in the transcript and a continuation turn lets the model adapt; returned too."""
        return await self.__runtime.actions.reject(_execution_id(execution_id), reason)

    def undo(self, tool_call_id: str) -> Any:
        """Undo what a `run_code` call changed in the kernel's namespace: names it rebound or deleted
        are bound again to what they held, names it bound are deleted, each only while it still
        holds what the run left (see `think_nb.kernel.undo`). Objects it changed in place are
        reported ("changed in place: df — cannot be undone"), never claimed undone. The call's
        stored output says `undone` (the panel's card shows it after a reload).

        Returns an `UndoReport` (`str()` says what was restored and what could not be).
        Raises `UserError` for a call that is not a `run_code` of this conversation, was undone
        already, or whose kept values are gone (the kernel restarted, or one of older runs).
        (Not Think's.)"""
        return self.__runtime.undo_kernel_run(tool_call_id)

    # -- observing turns ---------------------------------------------------------------------
    def trace(self, request_id: str | None = None) -> pd.DataFrame:
        """The hook trace of a turn (default: the latest, also while it runs or is paused in step
        mode) as a pandas DataFrame: one row per hook call and per group of consecutive same-type
        chunks, with columns `t_ms` (offset from the turn's start), `kind` (hook | chunks | wait:
        "loading litellm…"), `hook` (hook name, chunk type or what was waited for), `step`, `tool`,
        `summary`, `duration_ms`. Empty when no turn was traced."""
        import pandas as pd

        runtime = self.__runtime
        live = runtime.engine.live_tracer(request_id)
        found = (live.request_id, live.rows_out(), live.chunks) if live is not None else \
            runtime.store.traces.load(request_id)
        columns = ["t_ms", "kind", "hook", "step", "tool", "summary", "duration_ms"]
        frame = pd.DataFrame(found[1] if found else [], columns=columns)
        frame["step"] = frame["step"].astype("Int64")  # nullable: hooks outside a step have none
        frame.attrs["request_id"] = found[0] if found else None
        from think_nb.frontends.views import nulls_as_none

        return nulls_as_none(frame)  # a hook row's missing tool is None, not NaN

    def recording(self, request_id: str | None = None) -> Recording | None:
        """The recorded chunks of a turn (default: the latest) as a `Recording`; None if none."""
        from think_nb.turns.replay import Recording
        from think_nb.turns.trace import expand

        found = self.__runtime.store.traces.load(request_id)
        return Recording(found[0], expand(found[2])) if found else None

    async def replay(self, request_id: str | None = None, *, speed: float = 1.0,
                     recording: Recording | None = None) -> list[dict[str, Any]]:
        """Play a recorded turn into this agent's views (panels, terminal) at `speed`× the recorded
        pace, text never faster than 50 characters a second × `speed` (0 = as fast as possible;
        `think_nb.turns.replay.pacing`); the transcript is not changed. Returns the chunks played.
        Raises `UserError` when there is no recording."""
        from think_nb.turns.replay import play

        if not isinstance(speed, (int, float)) or speed < 0:
            raise UserError(f"replay(speed={speed!r}): use a number >= 0 (1 = recorded pace, 0 = no waiting).")
        recording = recording or self.recording(request_id)
        if recording is None:
            which = f"turn {request_id!r}" if request_id else "turn"
            raise UserError(f"No recorded {which} to replay (see agent.turns()); run a turn first, or pass "
                            "recording=Recording.load(path).")
        return await play(self.__runtime.engine, recording, speed)

    def turns(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The turn log, oldest first: `{request_id, trigger, continuation, status, error,
        started_at, finished_at (epoch seconds), duration_ms, prompt_tokens, completion_tokens,
        total_tokens, usage_source}`; the usage keys are `usage_df()`'s and `metadata.usage`'s
        (None when unknown, or when the turn stored no message)."""
        from think_nb.frontends import views
        from think_nb.store import messages

        store = self.__runtime.store
        return views.turns_with_usage(store.turn_log.read(limit), messages.usage_by_request(store.db, store.agent_key))

    # -- sub-agents (Think's subAgent / chat / cancelChat) ------------------------------------
    def sub_agent(self, cls: type[T], name: str) -> T:
        """The child agent `cls(name)` of this agent, created once and stored in this agent's file
        under `"<parent key>/<Child>:<name>"` (its own messages and tools; a child's `__init__` need
        take only `name`). Raises `UserError` when `cls` is not a Think subclass or cannot be made
        as `cls(name)`."""
        if not (isinstance(cls, type) and issubclass(cls, Think)):
            raise UserError(f"sub_agent() needs a Think subclass, not {cls!r}.")
        runtime = self.__runtime
        if (cls, name) not in runtime.children:
            callable_as(cls, name)
            token = _PARENT.set(runtime)
            try:
                child = cls(name)  # the runtime takes the parent's file and a key under the parent's
            finally:
                _PARENT.reset(token)
            runtime.children[(cls, name)] = child
        child = runtime.children[(cls, name)]
        assert isinstance(child, cls)
        return child

    async def chat(self, message: str | dict[str, Any] | list[dict[str, Any]], callback: Any, *,
                   signal: AbortSignal | None = None, tools: Any = None, channel: str | None = None,
                   metadata: dict[str, Any] | None = None, client_tools: list[dict[str, Any]] | None = None,
                   on_client_tool_call: Any = None) -> TurnResult:
        """Run one full turn and stream it to `callback` (Think's `chat`; see `think_nb.subagents`):
        `on_start({"request_id"})`, `on_event(json_chunk)` per chunk, then `on_done()`,
        `on_error(message)`, or `on_interrupted()` (with no argument, or the message if it takes
        one) when the stall watchdog ended the turn and `on_chat_recovery` scheduled a
        continuation, which owns the answer. `tools` is ignored with a warning (a child's tools
        are its own). `channel` / `metadata`: the turn's channel and metadata (Think's
        `ChatOptions.channel` / `.metadata`; see `submit`).

        `client_tools` (`[{name, description?, parameters?}]`, JSON schemas) with
        `on_client_tool_call(call)` (sync or async; `call` is `{"tool_name", "input",
        "tool_call_id"}`; it returns the output): tools for this turn only, never stored, whose
        calls the function answers inside this `chat()`; a raise is that call's `output-error`;
        no approval gate (Think's RPC client tools, `think_nb.tools.rpc_client`). Without the
        function a call is left waiting (`input-available`) when the turn ends.

        Raises `UserError` from inside this agent's own running turn (see `save_messages`;
        another agent's `chat`, a sub-agent's, is fine: `delegate`), for an unknown channel, and
        for bad `client_tools` or one named as a tool of the agent that needs approval (nothing is
        stored then)."""
        from think_nb import channels, subagents

        self.__runtime.engine.refuse_nested("chat")
        if channel is not None or metadata is not None:
            batch = [user_message(message)] if isinstance(message, str) else [message] if isinstance(message, dict) \
                else message
            message = channels.for_turn(self, batch, channel, metadata, "chat")
        return await subagents.chat(self.__runtime.engine, message, callback, signal=signal, tools=tools,
                                    client_tools=client_tools, on_client_tool_call=on_client_tool_call)

    def cancel_chat(self, request_id: str, reason: str | None = None) -> None:
        """Cancel a `chat()` turn by its request id (Think's `cancelChat`)."""
        self.abort_request(request_id, reason)

    async def delegate(self, child: Think, message: str, *, signal: AbortSignal | None = None) -> str:
        """Run `child.chat(message)` from inside one of this agent's tools, streaming the child's
        progress into this agent's running turn as a `data-subagent` part; returns the child's final
        text. Cancelling this agent's turn cancels the child's."""
        from think_nb import subagents

        return await subagents.delegate(self.__runtime.engine, child, message, signal=signal)

    def has_sub_agent(self, cls_or_name: type | str, name: str | None = None) -> bool:
        """True when this agent's file holds the sub-agent `cls_or_name` (a Think subclass or its
        class name) named `name`, made by `sub_agent` and not deleted; with `name=None`, any
        sub-agent of that class (Think's `hasSubAgent`, read from the file: a new parent object
        after a restart sees the children of the old one). Raises `UserError` for another type."""
        from think_nb import children

        return children.has(self.__runtime, cls_or_name, name)

    def list_sub_agents(self, cls: type | str | None = None) -> list[dict[str, Any]]:
        """This agent's sub-agents, oldest first, optionally of one class (a Think subclass or its
        name): `{class, name, key, created_at (epoch s), messages (stored, every session)}` (Think's
        `listSubAgents`; read from the file, so it works on a new parent object after a restart)."""
        from think_nb import children

        return children.listed(self.__runtime, cls)

    def abort_sub_agent(self, cls: type | str, name: str, reason: str | None = None) -> bool:
        """Abort the running and queued turns of sub-agent `cls` (a Think subclass or its name)
        named `name` and of its own sub-agents, keeping their storage (Think's `abortSubAgent`);
        the child stays usable. A tool of this agent that `delegate`s to it gets an `output-error`
        naming `reason`, and this agent's turn goes on. Returns True when a turn was aborted
        (nothing runs in this process for a child made elsewhere)."""
        from think_nb import children

        return children.abort(self.__runtime, cls, name, reason)

    async def delete_sub_agent(self, cls: type | str, name: str) -> bool:
        """Delete sub-agent `cls` (a Think subclass or its name) named `name` (Think's
        `deleteSubAgent`): its running turns are aborted first (and its sub-agents'), its MCP
        connections and scheduled tasks stopped, then every row stored for it is removed from this
        agent's file (messages of every session, sessions, turn log, stream, state, workspace,
        submissions, schedules, its own sub-agents) with this agent's agent-tool runs of it.
        Idempotent: False when there was nothing to delete. A child object made before must not
        be used afterwards (`sub_agent` makes a new, empty one)."""
        from think_nb import children

        return await children.delete(self.__runtime, cls, name)

    def parent_agent(self, cls: type | None = None) -> Think:
        """The agent that made this one with `sub_agent` (Think's `parentAgent(Cls)`); with `cls`,
        checked to be one. Raises `UserError` for a top-level agent or another class."""
        parent = self.parent
        if parent is None:
            raise UserError(f"{type(self).__name__}({self.name!r}) is not a sub-agent (it was not made with "
                            "parent.sub_agent(...)), so it has no parent agent.")
        if cls is not None and not isinstance(parent, cls):
            raise UserError(f"parent_agent({getattr(cls, '__name__', cls)!r}): the parent of {self.name!r} is a "
                            f"{type(parent).__name__}; pass that class, or leave it out.")
        return parent

    def agent_tool_runs(self, status: str | None = None) -> list[dict[str, Any]]:
        """The sub-agent runs this agent's tools started with `delegate`, oldest first (Think's
        agent-tool run registry, `cf_agent_tool_child_runs`): `{run_id, child_key, child_class,
        child_name, parent_request_id, parent_tool_call_id, request_id (the child's turn), status
        (running | completed | error | aborted | interrupted), summary, output, error, started_at,
        finished_at (epoch s)}`. Stored; re-attached after a restart (`think_nb.agent_tools`)."""
        from think_nb import children

        return children.runs(self.__runtime, status)

    # -- session (memory) -------------------------------------------------------------
    # Thin delegation to think_nb.session (blocks, tools, compaction, search, skills, sessions)
    # and think_nb.frontends.views (DataFrames).
    def configure_session(self, session: Any) -> Any:
        """Configure this agent's memory and return the builder (Think's `configureSession`),
        called once, on first use; may be async. Default: no blocks (the prompt is
        `get_system_prompt()`). See `think_nb.session.builder.Session` for the builder methods::

            def configure_session(self, session):
                return session.with_context("memory", description="Facts learned.", max_tokens=2000)
        """
        return session

    def get_skills(self) -> list[Any]:
        """Skill sources (Think's `getSkills`): `SkillDirectory(path)` or `Skill(...)` objects.
        Their catalogue becomes the `skills` context block; the model uses `activate_skill`."""
        return []

    @property
    def session(self) -> Session:
        """This agent's `Session` (memory), configured by `configure_session` on first access."""
        return self.__runtime.session

    def context_blocks(self) -> pd.DataFrame:
        """The context blocks as a DataFrame: label, description, kind, writable, tokens,
        max_tokens, percent_used, content (`think_nb.frontends.views.context_blocks`)."""
        from think_nb.frontends import views

        return views.context_blocks(self.__runtime)

    def messages_df(self) -> pd.DataFrame:
        """The current branch as a DataFrame (`think_nb.frontends.views.messages`)."""
        from think_nb.frontends import views

        return views.messages(self.__runtime)

    def tool_calls_df(self) -> pd.DataFrame:
        """Every tool call on the current branch as a DataFrame (`think_nb.frontends.views.tool_calls`)."""
        from think_nb.frontends import views

        return views.tool_calls(self.__runtime)

    def usage_df(self) -> pd.DataFrame:
        """Token usage and cost per turn as a DataFrame (`think_nb.frontends.views.usage`)."""
        from think_nb.frontends import views

        return views.usage(self.__runtime)

    def search(self, query: str, limit: int = 20, all_sessions: bool = False) -> pd.DataFrame:
        """Full-text search of the transcript (FTS5) as a DataFrame, best match first."""
        from think_nb.frontends import views

        return views.search(self.__runtime, query, limit, all_sessions)

    async def compact(self) -> dict[str, Any] | None:
        """Compact the current session now (`Session.compact`); returns the overlay or None."""
        return await (await self.__runtime.session_ready()).compact()

    def sessions(self) -> pd.DataFrame:
        """This agent's sessions as a DataFrame (`think_nb.frontends.views.sessions`)."""
        from think_nb.frontends import views

        return views.sessions(self.__runtime)

    @property
    def session_id(self) -> str:
        """The active session's id ("" = the default session)."""
        return self.__runtime.store.session_id

    def create_session(self, name: str | None = None, *, switch: bool = True) -> str:
        """Create an empty session (and switch to it unless `switch=False`); returns its id."""
        from think_nb.session import sessions

        session_id = sessions.create(self.__runtime.store, name)
        if switch:
            self.switch_session(session_id)
        else:
            self.__runtime.sessions_changed()
        return session_id

    def switch_session(self, ref: str) -> str:
        """Make session `ref` (id or name; "" or "default" = the default) active: messages, panels and
        next turns use it. Refused (`UserError`) while a turn runs. Returns its id."""
        return self.__runtime.switch_session(ref)

    def rename_session(self, ref: str, name: str) -> None:
        """Rename session `ref` (id or name)."""
        from think_nb.session import sessions

        sessions.rename(self.__runtime.store, ref, name)
        self.__runtime.sessions_changed()

    def fork_session(self, at_message_id: str | None = None, name: str | None = None, *,
                     switch: bool = False) -> str:
        """Copy the current branch up to `at_message_id` (default: all of it) into a new session
        with new ids (Think's `SessionManager.fork`); returns its id."""
        from think_nb.session import sessions

        session_id = sessions.fork(self.__runtime.store, at_message_id, name)
        if switch:
            self.switch_session(session_id)
        else:
            self.__runtime.sessions_changed()
        return session_id

    def delete_session(self, ref: str) -> None:
        """Delete session `ref` and its messages (the default session cannot be deleted; deleting
        the active one switches to the default first)."""
        from think_nb.session import sessions

        store = self.__runtime.store
        session_id = sessions.resolve(store, ref)
        if session_id and store.session_id == session_id:
            self.switch_session("")
        sessions.delete(store, session_id)
        self.__runtime.sessions_changed()

    def list_sessions(self) -> list[dict[str, Any]]:
        """Every session, oldest first: `{id, name, active, messages, parent_session_id,
        forked_from_message_id, created_at, updated_at}` (`sessions()` is the DataFrame)."""
        return self.__runtime.list_sessions()

    # -- submissions (Think's submitMessages; think_nb.submissions) -------------------------
    async def submit_messages(self, messages: list[dict[str, Any]], *, submission_id: str | None = None,
                              idempotency_key: str | None = None, metadata: Any = None,
                              channel: str | None = None) -> dict[str, Any]:
        """Durably accept `messages` (UIMessages) for a turn that runs later, in order (Think's
        `submitMessages`). Returns the inspection plus `accepted` (False for a repeat of the same
        `submission_id` / `idempotency_key`), after `on_submission_status` has seen it `pending`.
        `channel`: a configured channel, stamped on the user messages (`metadata.channel`) so the
        drained turn gets its policy. Raises `UserError` for an id reused with other messages or an
        unknown channel."""
        from think_nb import channels

        if isinstance(messages, list | tuple):
            messages = channels.for_turn(self, list(messages), channel, None, "submit_messages")
        return await self.__runtime.submissions.submit(messages, submission_id, idempotency_key, metadata)

    def inspect_submission(self, submission_id: str) -> dict[str, Any] | None:
        """`{submission_id, idempotency_key, request_id, status, error, metadata, created_at,
        started_at, completed_at}`, or None when unknown. Status: pending | running | completed |
        aborted | skipped | error."""
        return self.__runtime.submissions.inspect(submission_id)

    def list_submissions(self, status: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Submissions, oldest first, optionally of one status."""
        from think_nb.submissions import inspection

        return [inspection(r) for r in self.__runtime.submissions.rows.select(status, limit)]

    def cancel_submission(self, submission_id: str) -> dict[str, Any] | None:
        """Cancel a pending (never applied) or running (its turn is aborted) submission."""
        return self.__runtime.submissions.cancel(submission_id)

    def delete_submissions(self, *, status: str | None = None, completed_before: float | None = None,
                           limit: int | None = None) -> int:
        """Delete finished submissions (never pending or running ones); `completed_before`: epoch
        seconds. Returns how many were deleted."""
        return self.__runtime.submissions.rows.delete(status=status, completed_before=completed_before, limit=limit)

    def delete_submission(self, submission_id: str) -> bool:
        """Delete one finished submission; False when it is unknown or still pending/running."""
        return self.__runtime.submissions.rows.delete(ids=[submission_id]) == 1

    @property
    def submissions_task(self) -> asyncio.Task[TurnResult] | None:
        """The task draining pending submissions (None when none has run)."""
        return self.__runtime.submissions.task

    # -- batch runs (think_nb.batch; not Think's: Ray Data's batch inference with full turns) ----------
    async def map(self, df: pd.DataFrame, prompt: Any, *, concurrency: int = 8, run_id: str | None = None,
                  context: Any = None, output_type: type | None = None, approvals: str = "deny",
                  max_cost: float | None = None, max_tokens: int | None = None, rpm: float | None = None,
                  tpm: float | None = None, evaluate: list[Any] | None = None,
                  progress: bool = True, engine: str = "local", num_cpus: float = 1) -> pd.DataFrame:
        """Run one full turn per row of `df` (`think_nb.batch`) and return the results table on
        `df`'s index: `reply`, the `output_type`'s fields (the reply validated: a row that does not
        validate is an `error` row), `status` (completed | error | aborted | not_run), `error`,
        `tool_calls` (names), `input_tokens`, `output_tokens`, `cost_usd` (US dollars; <NA> when
        unknown), `duration_s` (seconds), `conversation_id`; `results.attrs["run_id"]`.

        `prompt`: a column name, a template over the columns (`"Classify: {text}"`) or `fn(row) ->
        str`; `context`: column names, `{name: object}` or `fn(row) -> {name: object}`, attached
        as data context (`send(context=)`). `concurrency` rows at once (each in a session of one of
        `concurrency` lane sub-agents). `run_id`: the same id again skips settled rows and runs the
        rest (a killed kernel's run resumes; no row runs twice). `approvals`: "deny" refuses a gated
        tool (the model is told), "ask" leaves it for the panel / `approve` while other rows go on.
        `max_cost` (US dollars) / `max_tokens`: no new row starts once reached (rows not run say
        why). `rpm` / `tpm`: rows started / tokens used per rolling minute. `evaluate`: `[fn(row,
        result) -> score]`, a column each and `results.attrs["summary"]`. `progress`: a tqdm bar.
        Interrupting the cell (Jupyter's Stop) stops the run: settled rows are kept, rows in flight
        aborted, the cell prints one line saying so and `map` returns the results so far (rows not
        run: `not_run`) instead of raising; any other cancellation of the call propagates.
        Raises `UserError` for bad arguments (nothing runs then)."""
        from think_nb import batch

        return await batch.map_rows(self, df, prompt, concurrency=concurrency, run_id=run_id, context=context,
                                    output_type=output_type, approvals=approvals, max_cost=max_cost,
                                    max_tokens=max_tokens, rpm=rpm, tpm=tpm, evaluate=evaluate, progress=progress,
                                    engine=engine, num_cpus=num_cpus)

    def run_map(self, df: pd.DataFrame, prompt: Any, **options: Any) -> pd.DataFrame:
        """Synchronous `map` for scripts and the terminal (no running event loop); same options."""
        from think_nb import batch

        return batch.run_map(self, df, prompt, **options)

    def runs(self) -> pd.DataFrame:
        """This agent's batch runs, oldest first: run_id, status (running | completed | stopped |
        cancelled | damaged: its stored spec is not JSON; its rows are listed as usual and
        `map(..., run_id=...)` stores a new one), rows, completed, error, aborted, pending,
        running, cost_usd (<NA> when a row's is unknown), created_at."""
        from think_nb import batch

        return batch.runs(self)

    def cancel_run(self, run_id: str) -> dict[str, int]:
        """Cancel batch run `run_id`: its pending rows become `aborted` (never run), a call of `map`
        running it in this process stops (rows in flight aborted, settled ones kept). Returns
        `{"aborted": n, "stopped": 0 | 1}`; `UserError` for an unknown run."""
        from think_nb import batch

        return batch.cancel_run(self, run_id)

    def compare_runs(self, a: str, b: str) -> pd.DataFrame:
        """Two batch runs side by side, one line per row (its index label): reply, the
        `output_type`'s fields, status, cost_usd of each (`_a`, `_b`) and `same` (reply and fields
        equal). `UserError` for an unknown run."""
        from think_nb import batch

        return batch.compare_runs(self, a, b)

    # -- MCP servers (Think's addMcpServer / removeMcpServer) -----------------------------------
    async def add_mcp_server(self, name: str, url_or_command: str, *, args: list[str] | None = None,
                             env: dict[str, str] | None = None, headers: dict[str, str] | None = None,
                             needs_approval: Any = None, timeout: float = 60.0,
                             connect_timeout: float = 10.0) -> dict[str, Any]:
        """Connect an MCP server and merge its tools (named `<name>_<tool>`) into every turn
        (Think's `addMcpServer`). `url_or_command`: `http(s)://...` for streamable HTTP, else a
        command line started as a stdio server (`args` appended). `env` (stdio) / `headers`
        (HTTP): secret values as `${VAR}` references, resolved from the environment (never
        stored). `needs_approval`: True, a list of the server's tool names, or
        `fn(server, tool, input) -> bool`; not given (None), a server added again under its name keeps
        the gates it had (a new server has none); pass False to drop them. `timeout`: seconds per call. Waits up to
        `connect_timeout` s for the connection (no longer than it takes), then returns `{name,
        transport, target, state, tools, last_error, calls}` (a failed server keeps retrying with
        backoff; one still connecting goes on in the background, and a warning names
        `connect_timeout`; the handshake itself may take `THINK_NB_MCP_HANDSHAKE_TIMEOUT` s, default 30). Stored, and
        reconnected when the agent is created again. The same name and configuration again (a
        re-run cell) keeps the live connection, as the Agents SDK's `addMcpServer` is idempotent;
        another configuration under a used name replaces that server (a warning is logged).
        Raises `UserError` for bad arguments."""
        return await self.__runtime.mcp.add(name, url_or_command, args=args, env=env, headers=headers,
                                   needs_approval=needs_approval, timeout=timeout, connect_timeout=connect_timeout)

    async def remove_mcp_server(self, name: str) -> bool:
        """Disconnect and forget an MCP server (Think's `removeMcpServer`); False when unknown."""
        return await self.__runtime.mcp.remove(name)

    def mcp_servers(self) -> pd.DataFrame:
        """The MCP servers as a pandas DataFrame: name, transport, target, state (connecting |
        connected | failed | closed), tools, last_error, calls, log (a stdio server's stderr file)."""
        import pandas as pd

        from think_nb.frontends.views import nulls_as_none

        columns = ["name", "transport", "target", "state", "tools", "last_error", "calls", "log"]
        return nulls_as_none(pd.DataFrame(self.__runtime.mcp.table(), columns=columns))

    # -- extensions (Think's extensionManager; think_nb.extensions) -----------------------------
    async def load_extension(self, manifest: dict[str, Any], source: str) -> dict[str, Any]:
        """Load an extension at run time and store it, so it is loaded again when the agent is
        created (Think's `extensionManager.load`). `manifest`: see `get_extensions`. Returns
        `{name, version, description, tools, context_labels, permissions, hooks, origin, state,
        error}`; a source that fails gives `state == "error"` and its `error` (nothing stored).
        Raises `UserError` for a bad manifest or a name already loaded (unload it first)."""
        return await self.__runtime.extensions.load(manifest, source)

    async def unload_extension(self, name: str) -> bool:
        """Remove an extension's tools, hooks and context blocks, and forget it (Think's
        `extensionManager.unload`); False when unknown."""
        return await self.__runtime.extensions.unload(name)

    def extensions(self) -> pd.DataFrame:
        """The extensions as a pandas DataFrame: name, version, origin (static | loaded), state
        (loading | loaded | error), tools, hooks, context_labels, permissions, error, load_ms
        (milliseconds to load), calls, hook_errors."""
        import pandas as pd

        from think_nb.frontends.views import nulls_as_none

        return nulls_as_none(pd.DataFrame(self.__runtime.extensions.table(),
                                          columns=["name", "version", "origin", "state", "tools", "hooks",
                                                   "context_labels", "permissions", "error", "load_ms", "calls",
                                                   "hook_errors"]))

    async def shutdown(self) -> None:
        """Close MCP connections, the extensions' sandbox, the kernel's browser (the browser tools'; the
        next browser tool call starts it again) and stop scheduled tasks in this process (the
        configuration stays stored; creating the agent again restores them)."""
        await self.__runtime.shutdown()

    # -- scheduled tasks (Think's getScheduledTasks / schedule / scheduleEvery) ------------------
    def get_scheduled_tasks(self) -> dict[str, Any]:
        """Recurring work this class declares, reconciled with the stored tasks whenever the agent
        is created (Think's `getScheduledTasks`): `{task_id: ScheduledTask(schedule=..., prompt=...
        | handler=..., timezone=None, metadata=None)}` (dicts accepted). `schedule`: see
        `think_nb.schedules.spec` ("every 5 minutes", "every weekday at 08:00 in Europe/Paris", a
        cron expression). A prompt becomes an idempotent submission per occurrence; a handler is
        called with a `ScheduledTaskContext`. `retry=` as for `schedule`. Raises `UserError` at
        creation for a bad task."""
        return {}

    def schedule(self, when: Any, task: Any, *, id: str | None = None, metadata: Any = None,
                 retry: dict[str, Any] | bool | None = None) -> str:
        """Run `task` at `when` (Think's `schedule`): a datetime (once), seconds or a timedelta
        (once, after that delay), or a recurring form ("every 30 seconds", "every day at 09:00",
        a cron expression). `task`: a prompt (str; sent as a user message through
        `submit_messages`) or a callable `task(ctx)` (sync or async; `ScheduledTaskContext`).
        Persisted in SQLite and re-armed when the agent is created again (a lambda cannot be
        restored: use a method of the agent or a module-level function). A missed occurrence runs
        once, no backfill. `retry` (Think's `RetryOptions`): `{"max_attempts": 3, "base_delay_ms":
        100, "max_delay_ms": 3000}` (any of them; True for these): a run that raises runs again,
        the same occurrence, after a jittered backoff, each attempt stored on the task's row
        (`attempt`, `retry_at`; `think_nb.schedules.retry`); without it a run is attempted once.
        Returns the task id (`id` or a new one; an existing id is replaced).
        Raises `UserError` for an unknown `when`, task or retry option."""
        return self.__runtime.scheduler.schedule(when, task, id, metadata, retry=retry)

    def schedule_every(self, seconds: float, task: Any, *, id: str | None = None, metadata: Any = None,
                       retry: dict[str, Any] | bool | None = None) -> str:
        """Run `task` every `seconds` (Think's `scheduleEvery`); see `schedule`. Returns the id."""
        return self.__runtime.scheduler.schedule(seconds, task, id, metadata, every=True, retry=retry)

    def cancel_schedule(self, task_id: str) -> bool:
        """Delete a scheduled task (declared ones come back when the agent is created again);
        False when the id is unknown."""
        return self.__runtime.scheduler.cancel(task_id)

    def get_schedule(self, task_id: str) -> dict[str, Any] | None:
        """One task's row: `{id, source, kind, spec, timezone, task_repr, next_run_at, last_run_at
        (epoch s), last_status, last_error, runs, retry, attempt (of the latest occurrence),
        retry_at (its pending retry, epoch s), ...}`, or None."""
        return self.__runtime.store.schedules.get(task_id)

    def get_schedules(self) -> pd.DataFrame:
        """The scheduled tasks as a pandas DataFrame, soonest first: id, kind, schedule, timezone,
        task, next_run, last_run (local timestamps), last_status, last_error, runs, source."""
        from think_nb.schedules.table import schedules_frame

        frame: pd.DataFrame = schedules_frame(self.__runtime.store.schedules.all())
        return frame

    @property
    def schedules_task(self) -> asyncio.Task[TurnResult] | None:
        """The task running scheduled tasks (None when nothing is armed)."""
        return self.__runtime.scheduler.task

    # -- views ----------------------------------------------------------------------
    def panel(self) -> ChatPanel:
        """A new chat panel view of this agent (an anywidget `ChatPanel`); display it in a cell."""
        from think_nb.panel.widget import ChatPanel

        return ChatPanel(self)

    def marimo_chat(self, **options: Any) -> Any:
        """marimo's native chat element (`mo.ui.chat`) bound to this agent, for marimo users who prefer
        it to `mo.ui.anywidget(agent.panel())`: replies, reasoning and tool calls stream; approvals use
        marimo's Approve/Deny; Stop aborts the turn. Client tools are not run there (use the panel),
        and the chat shows only what was said through it (the agent's transcript is authoritative).
        See `think_nb.frontends.marimo_chat`. `options` go to `mo.ui.chat`; `UserError` without marimo."""
        from think_nb.frontends.marimo_chat import marimo_chat

        return marimo_chat(self, **options)
