/**
 * Panel state: what one chat panel shows, as a pure reducer over kernel frames.
 *
 * No DOM, no model: `reduce(state, frame)` for frames from the kernel, plus small
 * setters for synced traits (`setTranscript`, `setStatus`, `setError`) and for the
 * user's own actions (`submitted`, `responded`). Every function returns a new state and
 * leaves its input alone. `visibleMessages(state)` is what render.ts draws.
 *
 * The kernel's transcript is authoritative: the view holds the newest part of it by message id (the
 * `messages` trait when it opens, `transcript_patch` frames after; transcript.ts); in-flight turns
 * (`live`) and just-sent user messages (`optimistic`) are shown on top of it until it catches up. The
 * status comes from the kernel (shared by every view of the agent); the only local
 * status is `submitted`, from the click until the kernel answers.
 *
 * Resume: while this view's `stream_resume_request` is unanswered, or a turn's replay
 * has not arrived, live frames are dropped — the replay holds them (no duplicates).
 */
import { type LiveTurn, RANK, applyChunks, newTurn } from "./accumulate";
import { FRAME, type Frame, type McpServer, type SessionState, type TranscriptPage, type TranscriptPatch, type UseChatResponse } from "./protocol";
import { applyPatch, prependPage } from "./transcript";
import type { UsageTotals } from "./usage";
import { STATUSES, type Status } from "./spec";
import { RUN_CODE, type ToolPart, type UIMessage, type UIPart, isToolPart, toolName } from "./ui-message";

export type { Status };

export interface PanelState {
  /** The newest messages of the kernel's branch, oldest first (older ones are fetched on request). */
  transcript: UIMessage[];
  /** The kernel's revision of `transcript` (each `transcript_patch` applies to one and makes the next). */
  rev: number;
  /** Older messages precede `transcript[0]` in the kernel. */
  more: boolean;
  /** A patch did not apply to `rev` (a frame was missed): the view asked for the window again and
   * ignores patches until it arrives. */
  resyncing: boolean;
  /** The view asked for the messages before `transcript[0]` and waits for them. */
  loadingOlder: boolean;
  /** The kernel's usage totals over its whole branch (the header's, while older messages are not held). */
  usage: UsageTotals | null;
  live: LiveTurn[];
  optimistic: UIMessage[];
  /** The kernel's status (shared by every view). */
  status: Status;
  error: string;
  /** The request this panel sent last, until its final frame arrives. */
  pendingRequestId: string | null;
  /** Sent, and the kernel has not answered yet (shown as `submitted`). */
  localSubmitted: boolean;
  /** This view's resume probe id (also its client id), and whether it is unanswered. */
  probeId: string;
  probePending: boolean;
  /** Turns whose replay this view acked and waits for. */
  awaitingReplay: string[];
  /** toolCallIds the user approved or denied here (their buttons are disabled) and whose stored part
   * still asks; a mark is dropped once the kernel's copy of the part leaves `approval-requested`, so a
   * call that asks again (an `execute` call reaching a second gated inner call) can be answered again. */
  responded: Record<string, boolean>;
  /** toolCallIds whose Undo this view sent (`tool_undo`), until the kernel's transcript changes. */
  undoing: Record<string, boolean>;
  /** The agent's memory (context tab), or null when the kernel sent none. */
  memory: SessionState | null;
  /** The agent's MCP servers (context tab; `mcp_servers` frames), [] when none. */
  mcp: McpServer[];
  /** A turn the kernel accepted and has not streamed yet (`stream_pending`), or null. */
  pendingTurn: string | null;
  /** The kernel is recovering turns a dead kernel left unfinished (`chat_recovering`). */
  recovering: boolean;
  /** Why this view has no kernel any more ("" while connected): see `disconnected`. */
  kernelGone: string;
  /** Ids of messages this view sent that the kernel never confirmed stored before it went away. */
  unsent: string[];
  /** Messages this view sent that the agent refused (`use_chat_response.refused`): message id → why,
   * and the stored message it was typed after (null: the first). They stay there, marked not sent with
   * the reason (said there only, once), while the conversation goes on below them. */
  refused: Record<string, Refusal>;
  /** User messages of turns the kernel accepted and has not started (any entry point: a `%%think`
   * cell, another view), in run order (`annotations.queued`); stored when their turn starts. */
  queued: UIMessage[];
  /** The request each of this view's sent messages went with (message id → request id). */
  requestOf: Record<string, string>;
  /** The user message whose turn was stopped before its model sent anything (Think stores no empty
   * reply): a "stopped" note shows under it while it is the last message, or null. */
  stoppedAfter: string | null;
}

/** Why the agent refused a message of this view, and where it stays (`PanelState.refused`). */
export interface Refusal {
  why: string;
  after: string | null;
}

/** What the status line shows: a kernel status, or `disconnected` (this view's kernel is gone). */
export type Shown = Status | "disconnected";

/** One message as drawn: live ones carry the streamed tool input and inline error. */
export interface ViewMessage {
  message: UIMessage;
  live: boolean;
  rawInput?: Record<string, string>;
  errorText?: string;
  /** Sent from this view, never confirmed stored: the kernel went away first (`disconnected`), or
   * the agent refused it (`refused` says why). */
  unsent?: boolean;
  /** Why the agent refused this message (`PanelState.refused`). */
  refused?: string;
  /** Accepted by the kernel, waiting for the turn ahead of it: stored when its own turn starts. */
  queued?: boolean;
  /** The last message, and the turn it asked for was stopped before anything streamed (`stoppedAfter`). */
  stopped?: boolean;
}

/** Under a reply recovery stored as interrupted (`metadata.interrupted`); the kernel's replayed
 * error frame says the same (think_nb/panel/widget.py INTERRUPTED_TEXT). */
export const INTERRUPTED_NOTE = "The turn was interrupted before it finished; its partial reply was kept.";

export function initialState(init: Partial<PanelState> = {}): PanelState {
  return {
    transcript: [],
    rev: 0,
    more: false,
    resyncing: false,
    loadingOlder: false,
    usage: null,
    live: [],
    optimistic: [],
    status: "ready",
    error: "",
    pendingRequestId: null,
    localSubmitted: false,
    probeId: "",
    probePending: false,
    awaitingReplay: [],
    responded: {},
    undoing: {},
    memory: null,
    mcp: [],
    pendingTurn: null,
    recovering: false,
    kernelGone: "",
    unsent: [],
    refused: {},
    queued: [],
    requestOf: {},
    stoppedAfter: null,
    ...init,
  };
}

const ids = (messages: readonly UIMessage[]): Set<string> => new Set(messages.map((m) => m.id));
const mine = (state: PanelState, probeId: string | undefined): boolean => (probeId ?? "") === state.probeId;

/** Apply one kernel frame. Panel → kernel frames and unknown ones leave the state as is. */
export function reduce(state: PanelState, frame: Frame): PanelState {
  switch (frame.type) {
    case FRAME.USE_CHAT_RESPONSE:
      if (!frame.replay && (state.probePending || state.awaitingReplay.includes(frame.id))) return state;
      return applyResponse(state, frame);
    case FRAME.STREAM_RESUMING:
      if (!mine(state, frame.probeId)) return state;
      return { ...state, probePending: false, awaitingReplay: [...state.awaitingReplay, frame.id] };
    case FRAME.STREAM_RESUME_NONE:
      return mine(state, frame.probeId) ? { ...state, probePending: false, awaitingReplay: [] } : state;
    case FRAME.STREAM_PENDING:
      // nothing streamed yet: live frames from the turn's first chunk on are the whole turn
      if (!mine(state, frame.probeId)) return state;
      return { ...state, probePending: false, awaitingReplay: [], pendingTurn: frame.id ?? state.pendingTurn };
    case FRAME.CHAT_RECOVERING:
      return { ...state, recovering: frame.recovering };
    case FRAME.MESSAGE_UPDATED: {
      const { message } = frame;
      return { ...state, transcript: state.transcript.map((m) => (m.id === message.id ? message : m)),
        responded: answeredOnly(state.responded, [message]), undoing: notIn(state.undoing, [message]) };
    }
    case FRAME.TRANSCRIPT_PATCH:
      return applyTranscriptPatch(state, frame);
    case FRAME.TRANSCRIPT_PAGE:
      return applyTranscriptPage(state, frame);
    case FRAME.SESSION: {
      const { type: _type, ...memory } = frame;
      return { ...state, memory };
    }
    case FRAME.MCP_SERVERS:
      return { ...state, mcp: frame.servers };
    case FRAME.CHAT_CLEAR:
      return {
        ...state,
        transcript: [],
        more: false,
        live: [],
        optimistic: [],
        refused: {},
        error: "",
        pendingRequestId: null,
        localSubmitted: false,
        responded: {},
        undoing: {},
        pendingTurn: null,
        queued: [],
        stoppedAfter: null,
      };
    default:
      return state;
  }
}

/** Why the agent refused request `frame` (its error chunk), said under this view's message of it; a
 * refusal of a request that sent no message from here (another view's, a regenerate) goes to the banner.
 * No reply is drawn for it: nothing began. */
function applyRefusal(state: PanelState, frame: UseChatResponse): PanelState {
  const said = frame.chunks.find((c) => c.type === "error") as { errorText?: unknown } | undefined;
  const why = (typeof said?.errorText === "string" && said.errorText) || "The agent refused this message.";
  const known = ids(state.transcript);
  const mine = state.optimistic.filter((m) => state.requestOf[m.id] === frame.id && !known.has(m.id)).map((m) => m.id);
  const ours = state.pendingRequestId === frame.id;
  const after = state.transcript.at(-1)?.id ?? null; // where it was drawn: after what was stored
  return {
    ...state,
    live: state.live.filter((t) => t.requestId !== frame.id),
    refused: mine.length ? { ...state.refused, ...Object.fromEntries(mine.map((id) => [id, { why, after }])) } : state.refused,
    error: mine.length ? state.error : why,
    pendingRequestId: ours ? null : state.pendingRequestId,
    localSubmitted: ours ? false : state.localSubmitted,
    pendingTurn: state.pendingTurn === frame.id ? null : state.pendingTurn,
  };
}

/** The banner's error is said under a refused message already (`refused`): it is not said twice. */
export function errorSaidUnder(state: PanelState): boolean {
  return state.error !== "" && Object.values(state.refused).some((r) => r.why === state.error);
}

function applyResponse(state: PanelState, frame: UseChatResponse): PanelState {
  if (frame.refused === true && frame.done) return applyRefusal(state, frame);
  const others = state.live.filter((t) => t.requestId !== frame.id);
  const previous = frame.replay ? undefined : state.live.find((t) => t.requestId === frame.id);
  let turn = previous ?? (frame.chunks.length ? newTurn(frame.id, frame.continuation === true) : undefined);
  if (turn && frame.chunks.length) turn = applyChunks(turn, frame.chunks);
  if (turn && frame.done) turn = { ...turn, done: true };

  const empty = turn !== undefined && turn.message.parts.length === 0 && turn.errorText === undefined;
  // a replayed interruption with nothing streamed: the stored reply says it (metadata.interrupted)
  const interruptedReplay = frame.replay === true && turn !== undefined && turn.message.parts.length === 0 &&
    turn.errorText === INTERRUPTED_NOTE;
  const keep = turn && !interruptedReplay && !(turn.done && (empty || ids(state.transcript).has(turn.message.id)));
  const live = keep && turn ? replaceTurn(state.live, others, turn) : others;
  const errorText = turn?.errorText;
  const stoppedEmpty = turn !== undefined && turn.done && empty && turn.aborted === true;
  return {
    ...state,
    live,
    stoppedAfter: stoppedEmpty ? lastUserMessageId(state) : state.stoppedAfter,
    error: errorText ?? state.error,
    pendingRequestId: frame.done && state.pendingRequestId === frame.id ? null : state.pendingRequestId,
    localSubmitted: state.pendingRequestId === frame.id ? false : state.localSubmitted,
    awaitingReplay: frame.replay ? state.awaitingReplay.filter((id) => id !== frame.id) : state.awaitingReplay,
    pendingTurn: state.pendingTurn === frame.id ? null : state.pendingTurn,
  };
}

/** The id of the newest user message this view shows (stored, queued or just sent), or null. */
function lastUserMessageId(state: PanelState): string | null {
  const users = visibleMessages(state).filter((v) => v.message.role === "user");
  return users.at(-1)?.message.id ?? null;
}

/** `turn` in place of the old turn with its id, or appended (keeps display order stable). */
function replaceTurn(all: LiveTurn[], others: LiveTurn[], turn: LiveTurn): LiveTurn[] {
  const i = all.findIndex((t) => t.requestId === turn.requestId);
  if (i < 0) return [...others, turn];
  const next = all.slice();
  next[i] = turn;
  return next;
}

/** The kernel's transcript changed: it replaces finished turns and echoed user messages. */
export function setTranscript(state: PanelState, transcript: UIMessage[]): PanelState {
  if (transcript === state.transcript) return state;
  const known = ids(transcript);
  return {
    ...state,
    transcript,
    responded: answeredOnly(state.responded, transcript),
    undoing: notIn(state.undoing, transcript),
    live: state.live.filter((t) => !t.done),
    optimistic: state.optimistic.filter((m) => !known.has(m.id)),
    requestOf: Object.fromEntries(Object.entries(state.requestOf).filter(([id]) => !known.has(id))),
  };
}

/** A `transcript_patch`: applied when it follows this view's revision (or answers its own request);
 * one that does not follow it means a frame was missed: the view resyncs (widget.ts asks). */
function applyTranscriptPatch(state: PanelState, frame: TranscriptPatch): PanelState {
  if (frame.probeId !== undefined) {
    if (!mine(state, frame.probeId)) return state;
  } else if (state.resyncing) {
    return state; // the window it asked for is on its way, at a newer revision
  } else if (frame.base !== state.rev) {
    return { ...state, resyncing: true };
  }
  const next = applyPatch(state.transcript, frame, state.more);
  const own = frame.probeId !== undefined;
  const moved = { ...state, rev: frame.rev, more: next.more, resyncing: own ? false : state.resyncing,
    loadingOlder: frame.after === null ? false : state.loadingOlder, usage: frame.usage ?? state.usage };
  return setTranscript(moved, next.messages);
}

/** A `transcript_page` this view asked for: older messages before what it holds. */
function applyTranscriptPage(state: PanelState, frame: TranscriptPage): PanelState {
  if (!mine(state, frame.probeId)) return state;
  const held = frame.rev === state.rev && !state.resyncing ? prependPage(state.transcript, frame) : null;
  if (held === null) return { ...state, loadingOlder: false };
  return { ...state, transcript: held, more: frame.more, loadingOlder: false };
}

/** The view asked for the messages before the oldest it holds. */
export function loadingOlder(state: PanelState): PanelState {
  return state.loadingOlder ? state : { ...state, loadingOlder: true };
}

/** The newest window of the transcript as the `messages` and `transcript` ({rev, more}) traits hold it
 * (a view that opens, or whose page reloaded, reads them as they are in the kernel now). */
export function setWindow(state: PanelState, messages: UIMessage[],
  meta: { rev?: number; more?: boolean; usage?: UsageTotals } | undefined): PanelState {
  const moved = { ...state, rev: meta?.rev ?? state.rev, more: meta?.more === true, resyncing: false, loadingOlder: false,
    usage: meta?.usage ?? null };
  return setTranscript(moved, messages);
}

/** The kernel's queued user messages (`annotations.queued`: `[{requestId, message}]`) changed. Bad
 * entries (not a user message with an id and parts) are left out. */
export function setQueued(state: PanelState, queued: unknown): PanelState {
  const list = Array.isArray(queued) ? queued : [];
  const messages = list
    .map((q) => (q && typeof q === "object" ? (q as { message?: unknown }).message : undefined))
    .filter((m): m is UIMessage => !!m && typeof m === "object" && (m as UIMessage).role === "user" &&
      typeof (m as UIMessage).id === "string" && Array.isArray((m as UIMessage).parts));
  const same = messages.length === state.queued.length && messages.every((m, i) => m.id === state.queued[i].id);
  return same ? state : { ...state, queued: messages };
}

/** The kernel's status trait changed; it answers this view's pending request too. */
export function setStatus(state: PanelState, status: string): PanelState {
  const valid = (STATUSES as readonly string[]).includes(status); // the spec's statuses only
  if (!valid || status === state.status) return state;
  return { ...state, status: status as Status, localSubmitted: false };
}

export function setError(state: PanelState, error: string): PanelState {
  if (error === state.error) return state;
  return { ...state, error, undoing: error ? {} : state.undoing }; // a refused undo arrives as an error
}

/** The user sent `message` as request `requestId` (shown at once, before the kernel echoes it). */
export function submitted(state: PanelState, requestId: string, message?: UIMessage): PanelState {
  const optimistic = message ? [...state.optimistic, message] : state.optimistic;
  const requestOf = message ? { ...state.requestOf, [message.id]: requestId } : state.requestOf;
  return { ...state, optimistic, requestOf, error: "", pendingRequestId: requestId, localSubmitted: true, stoppedAfter: null };
}

/** `responded` without the calls whose part in `messages` no longer waits for approval (the kernel
 * took the answer); the same object when nothing changes. */
function answeredOnly(responded: Record<string, boolean>, messages: readonly UIMessage[]): Record<string, boolean> {
  const taken = new Set<string>();
  for (const m of messages) {
    for (const p of m.parts) {
      if (isToolPart(p) && responded[p.toolCallId] && p.state !== "approval-requested") taken.add(p.toolCallId);
    }
  }
  if (taken.size === 0) return responded;
  return Object.fromEntries(Object.entries(responded).filter(([id]) => !taken.has(id)));
}

/** `undoing` without the calls of `messages` (the kernel sent their part again: undone, or not). */
function notIn(undoing: Record<string, boolean>, messages: readonly UIMessage[]): Record<string, boolean> {
  const ids = Object.keys(undoing);
  if (ids.length === 0) return undoing;
  const seen = new Set(messages.flatMap((m) => m.parts.filter(isToolPart).map((p) => p.toolCallId)));
  return Object.fromEntries(ids.filter((id) => !seen.has(id)).map((id) => [id, true]));
}

/** The user clicked Undo on `toolCallId`'s card in this view. */
export function undoing(state: PanelState, toolCallId: string): PanelState {
  return { ...state, undoing: { ...state.undoing, [toolCallId]: true } };
}

/**
 * A `run_code` call of the newest assistant message runs in the kernel, or is about to (its part is
 * `input-available`, or `approval-responded` and approved, or still `approval-requested` in this view
 * but answered here: the kernel starts the continuation before its update of the part arrives) while a
 * turn is busy. The kernel reads no comm message while it runs code, so Stop must then also interrupt
 * the kernel (interrupt.ts).
 */
export function kernelCodeRunning(state: PanelState): boolean {
  if (!isBusy(state)) return false;
  const last = visibleMessages(state).filter((v) => v.message.role === "assistant").at(-1);
  return !!last && last.message.parts.some((p) => isToolPart(p) && toolName(p) === RUN_CODE &&
    (p.state === "input-available" || (p.state === "approval-responded" && p.approval?.approved !== false) ||
      (p.state === "approval-requested" && state.responded[p.toolCallId] === true)));
}

/** The user approved or denied `toolCallId` in this view. */
export function responded(state: PanelState, toolCallId: string): PanelState {
  return { ...state, responded: { ...state.responded, [toolCallId]: true } };
}

/**
 * This view's kernel is gone (`notice` says why: it restarted, it was shut down). The widget's comm
 * is closed for good — the new kernel knows nothing of this panel; re-running the cell draws a new
 * one — so the view stops: nothing is busy any more, a streaming reply ends where it was and says it was cut (`cut`), and every
 * message this view sent that the transcript does not hold is marked unsent (it may not have been
 * stored; the stored conversation is what a re-run shows).
 */
export function disconnected(state: PanelState, notice: string): PanelState {
  if (state.kernelGone) return state;
  const known = ids(state.transcript);
  const unsent = state.optimistic.filter((m) => !known.has(m.id)).map((m) => m.id);
  return {
    ...state,
    kernelGone: notice,
    unsent: [...state.unsent, ...unsent],
    live: state.live.map((t) => (t.done ? t : cut(t))),
    pendingRequestId: null,
    localSubmitted: false,
    pendingTurn: null,
    probePending: false,
    queued: [],
  };
}

/** A turn still streaming when its kernel went away: ended, and said to be cut as the reloaded panel says
 * it (recovery stores the reply with `metadata.interrupted`; parts.ts picks the note, with or without content). */
function cut(turn: LiveTurn): LiveTurn {
  const message = { ...turn.message, metadata: { ...turn.message.metadata, interrupted: true } };
  return { ...turn, done: true, message, errorText: turn.errorText ?? INTERRUPTED_NOTE };
}

/** What the status line shows: `submitted` from the click until the kernel answers. */
export function displayStatus(state: PanelState): Shown {
  if (state.kernelGone) return "disconnected";
  if (state.localSubmitted && state.status !== "streaming") return "submitted";
  if (state.status === "ready" && state.recovering) return "recovering";
  if ((state.status === "ready" || state.status === "submitted") && state.pendingTurn !== null) return "pending";
  return state.status;
}

/** The request a Stop click should cancel: the newest streaming turn, else the one just sent. */
export function activeRequestId(state: PanelState): string | null {
  const streaming = state.live.filter((t) => !t.done);
  return streaming.length ? streaming[streaming.length - 1].requestId : state.pendingRequestId;
}

export function isBusy(state: PanelState): boolean {
  const status = displayStatus(state);
  return status === "submitted" || status === "streaming" || status === "pending"; // Stop cancels a queued turn too
}

/** Results that live continuation turns carry for tool calls of earlier messages. */
function crossToolResults(state: PanelState): Map<string, Partial<ToolPart>> {
  const out = new Map<string, Partial<ToolPart>>();
  for (const turn of state.live) for (const [id, patch] of Object.entries(turn.crossTool)) out.set(id, patch);
  return out;
}

function patchTools(message: UIMessage, patches: Map<string, Partial<ToolPart>>): UIMessage {
  let changed = false;
  const parts = message.parts.map((part): UIPart => {
    if (!isToolPart(part)) return part;
    const patch = patches.get(part.toolCallId);
    if (!patch?.state || RANK[patch.state] <= RANK[part.state]) return part;
    changed = true;
    return { ...part, ...patch } as ToolPart;
  });
  return changed ? { ...message, parts } : message;
}

/** Transcript, then live turns, then the user messages not stored yet: the kernel's queued ones in
 * run order (marked `queued`), then this view's unechoed ones (a message is stored when its turn
 * starts, so one not stored yet runs after whatever streams; only a reply to this view's own
 * request that streams before its message's echo comes after it). A continuation turn without its own
 * message id extends the last assistant message (Think's client); results it carries for earlier
 * tool calls are shown in those messages at once. */
export function visibleMessages(state: PanelState): ViewMessage[] {
  const known = ids(state.transcript);
  const patches = crossToolResults(state);
  const out: ViewMessage[] = state.transcript.map((message) => ({
    message: patches.size ? patchTools(message, patches) : message,
    live: false,
  }));
  // this view's unechoed messages: before the live turn of the request that sent them (a reply arriving
  // before its message's echo), else after everything that streams (they wait behind it)
  const queuedIds = ids(state.queued);
  const liveRequests = new Set(state.live.map((t) => t.requestId));
  const unechoed = (before: boolean): void => {
    for (const message of state.optimistic) {
      if (known.has(message.id) || queuedIds.has(message.id) || message.id in state.refused) continue;
      if (liveRequests.has(state.requestOf[message.id] ?? "") !== before) continue;
      out.push({ message, live: false, unsent: state.unsent.includes(message.id) || undefined });
    }
  };
  placeRefused(state, out, known);
  unechoed(true);
  for (const turn of state.live) {
    const view: ViewMessage = { message: turn.message, live: !turn.done, rawInput: turn.rawInput, errorText: turn.errorText };
    const at = out.findIndex((v) => v.message.id === turn.message.id);
    const last = out[out.length - 1];
    const ownId = !turn.message.id.startsWith("live-");
    if (at >= 0) out[at] = view;
    else if (turn.continuation && !ownId && last?.message.role === "assistant") {
      out[out.length - 1] = { ...view, message: { ...last.message, parts: [...last.message.parts, ...turn.message.parts] } };
    } else out.push(view);
  }
  const shown = ids(out.map((v) => v.message));
  for (const message of state.queued) {
    if (!shown.has(message.id)) out.push({ message, live: false, queued: true });
    shown.add(message.id);
  }
  unechoed(false);
  const last = out.at(-1);
  if (state.stoppedAfter !== null && last && last.message.id === state.stoppedAfter) out[out.length - 1] = { ...last, stopped: true };
  return out;
}

/** This view's refused messages, each after the stored message it was typed after (after the ones
 * refused there before it), else after the stored ones: `out` holds the transcript only. */
function placeRefused(state: PanelState, out: ViewMessage[], known: Set<string>): void {
  for (const message of state.optimistic) {
    const refusal = state.refused[message.id];
    if (refusal === undefined || known.has(message.id)) continue;
    const anchor = refusal.after === null ? 0 : out.findIndex((v) => v.message.id === refusal.after) + 1;
    let at = refusal.after !== null && anchor === 0 ? out.length : anchor;
    while (at < out.length && out[at].refused !== undefined) at++;
    out.splice(at, 0, { message, live: false, unsent: true, refused: refusal.why });
  }
}

/** Tool name (as the model sees it) → the MCP server it came from, for the tool cards. */
export function mcpToolServers(servers: readonly McpServer[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const server of servers) for (const tool of server.tool_names ?? []) out[tool] = server.name;
  return out;
}

/** The `session_state` trait (the last `session` frame, or {} for none) as the memory. */
export function setMemory(state: PanelState, trait: unknown): PanelState {
  if (!trait || typeof trait !== "object" || !Array.isArray((trait as SessionState).blocks)) return state;
  const { type: _type, ...memory } = trait as SessionState & { type?: string };
  return { ...state, memory };
}
