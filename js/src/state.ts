/**
 * Panel state: what one chat panel shows, as a pure reducer over kernel frames.
 *
 * No DOM, no model: `reduce(state, frame)` for frames from the kernel, plus small
 * setters for synced traits (`setTranscript`, `setStatus`, `setError`) and for the
 * user's own actions (`submitted`). Every function returns a new state and leaves its
 * input alone. `visibleMessages(state)` is what render.ts draws.
 *
 * The transcript trait is authoritative; in-flight turns (`live`) and just-sent user
 * messages (`optimistic`) are shown on top of it until the transcript catches up.
 */
import { type LiveTurn, applyChunks, newTurn } from "./accumulate";
import { FRAME, type Frame, type UseChatResponse } from "./protocol";
import type { UIMessage } from "./ui-message";

export const STATUSES = ["ready", "submitted", "streaming", "error"] as const;
export type Status = (typeof STATUSES)[number];

export interface PanelState {
  transcript: UIMessage[];
  live: LiveTurn[];
  optimistic: UIMessage[];
  status: Status;
  error: string;
  /** The request this panel sent last, until its final frame arrives. */
  pendingRequestId: string | null;
}

/** One message as drawn: live ones carry the streamed tool input and inline error. */
export interface ViewMessage {
  message: UIMessage;
  live: boolean;
  rawInput?: Record<string, string>;
  errorText?: string;
}

export function initialState(init: Partial<PanelState> = {}): PanelState {
  return { transcript: [], live: [], optimistic: [], status: "ready", error: "", pendingRequestId: null, ...init };
}

const ids = (messages: readonly UIMessage[]): Set<string> => new Set(messages.map((m) => m.id));

/** Apply one kernel frame. Panel → kernel frames and unknown ones leave the state as is. */
export function reduce(state: PanelState, frame: Frame): PanelState {
  switch (frame.type) {
    case FRAME.USE_CHAT_RESPONSE:
      return applyResponse(state, frame);
    case FRAME.STREAM_RESUMING:
      return { ...state, status: "streaming" };
    case FRAME.CHAT_CLEAR:
      return { ...state, live: [], optimistic: [], status: "ready", error: "", pendingRequestId: null };
    default:
      return state;
  }
}

function applyResponse(state: PanelState, frame: UseChatResponse): PanelState {
  const others = state.live.filter((t) => t.requestId !== frame.id);
  const previous = frame.replay ? undefined : state.live.find((t) => t.requestId === frame.id);
  let turn = previous ?? (frame.chunks.length ? newTurn(frame.id, frame.continuation === true) : undefined);
  if (turn && frame.chunks.length) turn = applyChunks(turn, frame.chunks);
  if (turn && frame.done) turn = { ...turn, done: true };

  const empty = turn !== undefined && turn.message.parts.length === 0 && turn.errorText === undefined;
  const keep = turn && !(turn.done && (empty || ids(state.transcript).has(turn.message.id)));
  const live = keep && turn ? replaceTurn(state.live, others, turn) : others;
  const errorText = turn?.errorText;
  const failed = frame.error === true || errorText !== undefined;
  const streamingElsewhere = live.some((t) => !t.done);
  const status: Status = failed ? "error" : frame.done ? (streamingElsewhere ? "streaming" : "ready") : "streaming";
  return {
    ...state,
    live,
    status,
    error: failed ? errorText ?? (state.error || "The turn failed.") : state.error,
    pendingRequestId: frame.done && state.pendingRequestId === frame.id ? null : state.pendingRequestId,
  };
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
    live: state.live.filter((t) => !t.done),
    optimistic: state.optimistic.filter((m) => !known.has(m.id)),
  };
}

export function setStatus(state: PanelState, status: string): PanelState {
  const valid = (STATUSES as readonly string[]).includes(status);
  return valid && status !== state.status ? { ...state, status: status as Status } : state;
}

export function setError(state: PanelState, error: string): PanelState {
  return error === state.error ? state : { ...state, error };
}

/** The user sent `message` as request `requestId` (shown at once, before the kernel echoes it). */
export function submitted(state: PanelState, requestId: string, message: UIMessage): PanelState {
  return { ...state, optimistic: [...state.optimistic, message], status: "submitted", error: "", pendingRequestId: requestId };
}

/** The request a Stop click should cancel: the newest streaming turn, else the one just sent. */
export function activeRequestId(state: PanelState): string | null {
  const streaming = state.live.filter((t) => !t.done);
  return streaming.length ? streaming[streaming.length - 1].requestId : state.pendingRequestId;
}

export function isBusy(state: PanelState): boolean {
  return state.status === "submitted" || state.status === "streaming";
}

/** Transcript, then unechoed user messages, then live turns (continuations extend the last assistant message). */
export function visibleMessages(state: PanelState): ViewMessage[] {
  const known = ids(state.transcript);
  const out: ViewMessage[] = state.transcript.map((message) => ({ message, live: false }));
  for (const message of state.optimistic) if (!known.has(message.id)) out.push({ message, live: false });
  for (const turn of state.live) {
    const view: ViewMessage = { message: turn.message, live: !turn.done, rawInput: turn.rawInput, errorText: turn.errorText };
    const at = out.findIndex((v) => v.message.id === turn.message.id);
    const last = out[out.length - 1];
    if (at >= 0) out[at] = view;
    else if (turn.continuation && last?.message.role === "assistant") {
      out[out.length - 1] = { ...view, message: { ...last.message, parts: [...last.message.parts, ...turn.message.parts] } };
    } else out.push(view);
  }
  return out;
}
