/**
 * Frames: the messages between the kernel and the chat panel (anywidget custom messages).
 *
 * Mirrors think_nb/protocol.py; both are checked against tests/fixtures/frames/*.json.
 * This module is the only place in the front end where a frame type is spelled out.
 * The transcript is not a frame: it is the synced `messages` trait.
 */
import type { UIMessage, UIMessageChunk } from "./ui-message";

export const FRAME = {
  USE_CHAT_REQUEST: "use_chat_request",
  CHAT_REQUEST_CANCEL: "chat_request_cancel",
  CHAT_CLEAR: "chat_clear",
  STREAM_RESUME_REQUEST: "stream_resume_request",
  USE_CHAT_RESPONSE: "use_chat_response",
  STREAM_RESUMING: "stream_resuming",
  STREAM_RESUME_NONE: "stream_resume_none",
} as const;

export const TRIGGER = { SUBMIT: "submit-message", REGENERATE: "regenerate-message" } as const;
export type Trigger = (typeof TRIGGER)[keyof typeof TRIGGER];

/** Panel → kernel: run a turn; the new user message is `messages[messages.length - 1]`. */
export interface UseChatRequest {
  type: typeof FRAME.USE_CHAT_REQUEST;
  id: string;
  messages: UIMessage[];
  trigger: Trigger;
}
/** Panel → kernel: abort turn `id`. */
export interface ChatRequestCancel {
  type: typeof FRAME.CHAT_REQUEST_CANCEL;
  id: string;
}
/** Both ways: clear the history (panel) / it was cleared (kernel). */
export interface ChatClear {
  type: typeof FRAME.CHAT_CLEAR;
}
/** Panel → kernel: the resume handshake, sent once per panel model when it starts. */
export interface StreamResumeRequest {
  type: typeof FRAME.STREAM_RESUME_REQUEST;
}
/** Kernel → panel: a batch of chunks of turn `id`; `replay` = the whole turn so far. */
export interface UseChatResponse {
  type: typeof FRAME.USE_CHAT_RESPONSE;
  id: string;
  chunks: UIMessageChunk[];
  done: boolean;
  error?: boolean;
  continuation?: boolean;
  replay?: boolean;
}
/** Kernel → panel: turn `id` is streaming; its replay follows. */
export interface StreamResuming {
  type: typeof FRAME.STREAM_RESUMING;
  id: string;
}
/** Kernel → panel: nothing to resume. */
export interface StreamResumeNone {
  type: typeof FRAME.STREAM_RESUME_NONE;
}

export type PanelFrame = UseChatRequest | ChatRequestCancel | ChatClear | StreamResumeRequest;
export type KernelFrame = UseChatResponse | StreamResuming | StreamResumeNone | ChatClear;
export type Frame = PanelFrame | KernelFrame;

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);
const isId = (x: unknown): boolean => typeof x === "string" && x !== "";

function messageError(m: unknown): string | null {
  if (!isObj(m)) return "a message is not an object";
  if (!isId(m.id)) return "a message has no string 'id'";
  if (m.role !== "system" && m.role !== "user" && m.role !== "assistant") {
    return `a message has role ${JSON.stringify(m.role)}`;
  }
  if (!Array.isArray(m.parts) || !m.parts.every(isObj)) return "a message has no 'parts' list";
  return null;
}

function needId(raw: Obj): string | null {
  return isId(raw.id) ? null : "missing string 'id'";
}

function checkRequest(raw: Obj): string | null {
  const { messages, trigger } = raw;
  if (!Array.isArray(messages) || messages.length === 0) return "'messages' must be a non-empty list";
  if (trigger !== TRIGGER.SUBMIT && trigger !== TRIGGER.REGENERATE) return "bad 'trigger'";
  return needId(raw) ?? messages.map(messageError).find((e) => e !== null) ?? null;
}

function checkResponse(raw: Obj): string | null {
  if (!Array.isArray(raw.chunks)) return "'chunks' must be a list";
  if (typeof raw.done !== "boolean") return "'done' must be a boolean";
  for (const flag of ["error", "continuation", "replay"]) {
    if (flag in raw && typeof raw[flag] !== "boolean") return `'${flag}' must be a boolean`;
  }
  if (!raw.chunks.every((c) => isObj(c) && isId(c.type))) return "a chunk has no string 'type'";
  return needId(raw);
}

const none = (): null => null;
const CHECKS: Record<string, (raw: Obj) => string | null> = {
  [FRAME.USE_CHAT_REQUEST]: checkRequest,
  [FRAME.CHAT_REQUEST_CANCEL]: needId,
  [FRAME.CHAT_CLEAR]: none,
  [FRAME.STREAM_RESUME_REQUEST]: none,
  [FRAME.USE_CHAT_RESPONSE]: checkResponse,
  [FRAME.STREAM_RESUMING]: needId,
  [FRAME.STREAM_RESUME_NONE]: none,
};

/** Why `raw` is not a valid frame, or null if it is one. Extra keys are allowed. */
export function frameError(raw: unknown): string | null {
  if (!isObj(raw)) return "frame is not an object";
  const kind = raw.type;
  if (typeof kind !== "string" || !Object.hasOwn(CHECKS, kind)) {
    return `unknown frame type ${JSON.stringify(kind)}`;
  }
  return CHECKS[kind](raw);
}

/** `raw` typed as a Frame, or null (with a console warning) if malformed or unknown. */
export function parseFrame(raw: unknown): Frame | null {
  const reason = frameError(raw);
  if (reason === null) return raw as Frame;
  console.warn(`think_nb: ignored malformed frame (${reason})`, raw);
  return null;
}

// --- builders (panel → kernel) ------------------------------------------------------

export function useChatRequest(id: string, messages: UIMessage[]): UseChatRequest {
  return { type: FRAME.USE_CHAT_REQUEST, id, messages, trigger: TRIGGER.SUBMIT };
}
export function chatRequestCancel(id: string): ChatRequestCancel {
  return { type: FRAME.CHAT_REQUEST_CANCEL, id };
}
export function chatClear(): ChatClear {
  return { type: FRAME.CHAT_CLEAR };
}
export function streamResumeRequest(): StreamResumeRequest {
  return { type: FRAME.STREAM_RESUME_REQUEST };
}
