/**
 * Frames: the messages between the kernel and the chat panel (anywidget custom messages).
 *
 * Mirrors think_nb/panel/protocol.py; both are checked against tests/fixtures/frames/*.json.
 * The frame types themselves are spelled once, in think_nb/panel/protocol_spec.json (see
 * spec.ts); everything in the front end uses `FRAME`.
 * The transcript: the `messages` trait holds its newest window when a view opens (`transcript`: its
 * `{rev, more}`); every change is a `transcript_patch` keyed by message id, and a view asks for older
 * messages or the window again with `transcript_request` (think_nb/panel/transcript.py; transcript.ts).
 */
import { FRAME } from "./spec";
import type { UIMessage, UIMessageChunk } from "./ui-message";
import type { UsageTotals } from "./usage";

export { FRAME };

export const TRIGGER = { SUBMIT: "submit-message", REGENERATE: "regenerate-message" } as const;
export type Trigger = (typeof TRIGGER)[keyof typeof TRIGGER];
export const TOOL_RESULT_STATE = { AVAILABLE: "output-available", ERROR: "output-error" } as const;

/** A tool the panel implements itself, offered to the model with one request. */
export interface ClientToolSchema {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}
/** Panel → kernel: run a turn; the new user message is `messages[messages.length - 1]`. */
export interface UseChatRequest {
  type: typeof FRAME.USE_CHAT_REQUEST;
  id: string;
  messages: UIMessage[];
  trigger: Trigger;
  clientTools?: ClientToolSchema[];
  /** The sending view; it becomes the view that runs client tools. */
  clientId?: string;
  /** The request's custom body (Think's custom body fields; kept for later continuations). */
  body?: Record<string, unknown>;
}
/** Panel → kernel: the user approved or denied a tool call. */
export interface ToolApproval {
  type: typeof FRAME.TOOL_APPROVAL;
  toolCallId: string;
  approved: boolean;
  reason?: string;
  /** Approved with this edited tool input (e.g. `{code}` for run_code); the kernel checks it against the tool's schema. */
  input?: Record<string, unknown>;
}
/** Panel → kernel: undo what a run_code call changed in the kernel's namespace (`agent.undo`). */
export interface ToolUndo {
  type: typeof FRAME.TOOL_UNDO;
  toolCallId: string;
}
/** Panel → kernel: a client tool's result (`output`) or failure (`errorText`). */
export interface ToolResult {
  type: typeof FRAME.TOOL_RESULT;
  toolCallId: string;
  toolName: string;
  output?: unknown;
  state?: (typeof TOOL_RESULT_STATE)[keyof typeof TOOL_RESULT_STATE];
  errorText?: string;
}
/** Panel → kernel: the view `probeId` is ready for turn `id`'s replay. */
export interface StreamResumeAck {
  type: typeof FRAME.STREAM_RESUME_ACK;
  id: string;
  probeId?: string;
}
/** Kernel → panel: a stored message changed (tool result or approval applied). */
export interface MessageUpdated {
  type: typeof FRAME.MESSAGE_UPDATED;
  message: UIMessage;
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
  probeId?: string;
  /** The transcript revision the view opened on: the kernel sends the newest window first if it moved since. */
  transcriptRev?: number;
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
  /** The agent refused the request before any turn began (its one `error` chunk says why): its
   * message was not stored, and no reply follows. */
  refused?: boolean;
}
/** Kernel → panel: turn `id` is streaming; its replay follows. */
export interface StreamResuming {
  type: typeof FRAME.STREAM_RESUMING;
  id: string;
  probeId?: string;
}
/** Kernel → panel: nothing to resume. */
export interface StreamResumeNone {
  type: typeof FRAME.STREAM_RESUME_NONE;
  probeId?: string;
}

/** Kernel → panel: turn `id` is accepted but not streaming yet (queued, debouncing); its chunks arrive live. */
export interface StreamPending {
  type: typeof FRAME.STREAM_PENDING;
  id?: string;
  probeId?: string;
}
/** Kernel → panel: recovery of turns a dead kernel left unfinished started (`recovering`) or ended. */
export interface ChatRecovering {
  type: typeof FRAME.CHAT_RECOVERING;
  recovering: boolean;
  id?: string;
}

/** One context block, as `ContextBlock.as_dict()` gives it. */
export interface SessionBlock {
  label: string;
  description?: string;
  kind?: string;
  writable?: boolean;
  tokens?: number;
  max_tokens?: number | null;
  percent_used?: number | null;
  content?: string;
}
/** One session of the agent (`id` "" = the default session). */
export interface SessionInfo {
  id: string;
  name?: string;
  active?: boolean;
}
/** The context tab's state: `Session.status()` plus the agent's sessions. */
export interface SessionState {
  phase?: string;
  tokenEstimate?: number;
  tokenThreshold?: number | null;
  /** The active session's id. */
  session: string;
  blocks: SessionBlock[];
  sessions?: SessionInfo[];
  compacted?: { tokensBefore: number; tokensAfter: number };
  error?: string;
}
/** Kernel → panel: the agent's memory changed (Think's `cf_agent_session`). */
export interface SessionFrame extends SessionState {
  type: typeof FRAME.SESSION;
}
/** Panel → kernel: make session `session` (id or name; "" = default) the active one. */
export interface SessionSwitch {
  type: typeof FRAME.SESSION_SWITCH;
  session: string;
}

/** One MCP server of the agent (`McpServers.describe`): `tool_names` are the names the model sees. */
export interface McpServer {
  name: string;
  transport?: string;
  /** connecting | connected | failed | closed */
  state: string;
  tools?: number;
  tool_names?: string[];
  last_error?: string | null;
}
/** Kernel → panel: the agent's MCP servers (Think's `cf_agent_mcp_servers`), on attach and on every change. */
export interface McpServersFrame {
  type: typeof FRAME.MCP_SERVERS;
  servers: McpServer[];
}

/** Panel → kernel: continue the last assistant message (`continue_last_turn`) as request `id`. */
export interface ContinueRequest {
  type: typeof FRAME.CONTINUE_REQUEST;
  id: string;
}
/** Panel → kernel: make the branch through `messageId` current (a regenerated reply's versions). */
export interface SwitchBranch {
  type: typeof FRAME.SWITCH_BRANCH;
  messageId: string;
}

/** Panel → kernel: view `probeId` wants the newest window again (it missed a patch), or, with `before`
 * (a message id), up to `limit` older messages before it. */
export interface TranscriptRequest {
  type: typeof FRAME.TRANSCRIPT_REQUEST;
  probeId: string;
  before?: string;
  limit?: number;
}
/** Kernel → panel: the transcript went from revision `base` to `rev`. A view on `base` keeps its
 * messages up to and including `after` (none when null, or older than its oldest),
 * appends `messages` and replaces by id the `updated` ones it holds; `more`: older messages precede
 * (with `after` null). With `probeId` it answers that view's request: only it applies it, whatever its rev. */
export interface TranscriptPatch {
  type: typeof FRAME.TRANSCRIPT_PATCH;
  rev: number;
  base: number;
  after: string | null;
  messages: UIMessage[];
  updated: UIMessage[];
  more?: boolean;
  probeId?: string;
  /** The header's totals over the whole branch, when they changed (usage.ts `UsageTotals`). */
  usage?: UsageTotals;
}
/** Kernel → panel: the messages just before `before` (oldest first) at revision `rev`, for view `probeId`. */
export interface TranscriptPage {
  type: typeof FRAME.TRANSCRIPT_PAGE;
  rev: number;
  before: string;
  messages: UIMessage[];
  more: boolean;
  probeId: string;
}

export type PanelFrame =
  | TranscriptRequest
  | ContinueRequest
  | SwitchBranch
  | ToolUndo
  | UseChatRequest
  | ChatRequestCancel
  | ChatClear
  | ToolApproval
  | ToolResult
  | StreamResumeRequest
  | StreamResumeAck
  | SessionSwitch;
export type KernelFrame =
  | UseChatResponse
  | MessageUpdated
  | StreamResuming
  | StreamResumeNone
  | StreamPending
  | ChatRecovering
  | ChatClear
  | SessionFrame
  | McpServersFrame
  | TranscriptPatch
  | TranscriptPage;
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

function optionalStr(raw: Obj, key: string): string | null {
  return !(key in raw) || typeof raw[key] === "string" ? null : `'${key}' must be a string`;
}

function clientToolsError(tools: unknown): string | null {
  if (!Array.isArray(tools)) return "'clientTools' must be a list";
  for (const t of tools) {
    if (!isObj(t) || !isId(t.name)) return "a client tool has no string 'name'";
    if ("parameters" in t && !isObj(t.parameters)) return "a client tool's 'parameters' is not an object";
  }
  return null;
}

function checkRequest(raw: Obj): string | null {
  const { messages, trigger } = raw;
  if (!Array.isArray(messages) || messages.length === 0) return "'messages' must be a non-empty list";
  if (trigger !== TRIGGER.SUBMIT && trigger !== TRIGGER.REGENERATE) return "bad 'trigger'";
  if ("clientTools" in raw) {
    const err = clientToolsError(raw.clientTools);
    if (err) return err;
  }
  if ("body" in raw && !isObj(raw.body)) return "'body' must be an object (the request's custom body)";
  return needId(raw) ?? optionalStr(raw, "clientId") ?? messages.map(messageError).find((e) => e !== null) ?? null;
}

const needCallId = (raw: Obj): string | null => (isId(raw.toolCallId) ? null : "missing string 'toolCallId'");

function checkApproval(raw: Obj): string | null {
  if (typeof raw.approved !== "boolean") return "'approved' must be a boolean";
  if ("input" in raw && !isObj(raw.input)) return "'input' must be an object (the edited tool input)";
  if ("input" in raw && !raw.approved) return "'input' is for an approval, not a denial";
  return needCallId(raw) ?? optionalStr(raw, "reason");
}

function checkToolResult(raw: Obj): string | null {
  if (!isId(raw.toolName)) return "missing string 'toolName'";
  const state = raw.state ?? TOOL_RESULT_STATE.AVAILABLE;
  if (state !== TOOL_RESULT_STATE.AVAILABLE && state !== TOOL_RESULT_STATE.ERROR) return "bad 'state'";
  return needCallId(raw) ?? optionalStr(raw, "errorText");
}

const probe = (raw: Obj): string | null => optionalStr(raw, "probeId");
const idAndProbe = (raw: Obj): string | null => needId(raw) ?? probe(raw);

function checkResponse(raw: Obj): string | null {
  if (!Array.isArray(raw.chunks)) return "'chunks' must be a list";
  if (typeof raw.done !== "boolean") return "'done' must be a boolean";
  for (const flag of ["error", "continuation", "replay", "refused"]) {
    if (flag in raw && typeof raw[flag] !== "boolean") return `'${flag}' must be a boolean`;
  }
  if (!raw.chunks.every((c) => isObj(c) && isId(c.type))) return "a chunk has no string 'type'";
  return needId(raw);
}

function blockError(b: unknown): string | null {
  if (!isObj(b) || !isId(b.label)) return "a block has no string 'label'";
  if ("content" in b && typeof b.content !== "string") return "a block's 'content' is not a string";
  for (const key of ["tokens", "max_tokens"]) {
    const v = b[key];
    if (v !== undefined && v !== null && !Number.isInteger(v)) return `a block's '${key}' is not an integer`;
  }
  return null;
}

function checkSession(raw: Obj): string | null {
  if (!Array.isArray(raw.blocks)) return "'blocks' must be a list";
  if (typeof raw.session !== "string") return "missing string 'session'";
  const sessions = raw.sessions ?? [];
  if (!Array.isArray(sessions) || !sessions.every((s) => isObj(s) && typeof s.id === "string")) {
    return "'sessions' must be a list of objects with a string 'id'";
  }
  return optionalStr(raw, "phase") ?? optionalStr(raw, "error") ?? raw.blocks.map(blockError).find((e) => e !== null) ?? null;
}

function checkMcpServers(raw: Obj): string | null {
  if (!Array.isArray(raw.servers)) return "'servers' must be a list";
  for (const s of raw.servers) {
    if (!isObj(s) || !isId(s.name) || typeof s.state !== "string") return "a server has no string 'name' and 'state'";
    const names = s.tool_names ?? [];
    if (!Array.isArray(names) || !names.every((n) => typeof n === "string")) {
      return "a server's 'tool_names' must be a list of strings";
    }
  }
  return null;
}

const isCount = (x: unknown): boolean => typeof x === "number" && Number.isInteger(x) && x >= 0;
const messagesError = (raw: Obj, key: string): string | null =>
  Array.isArray(raw[key]) ? (raw[key] as unknown[]).map(messageError).find((e) => e !== null) ?? null : `'${key}' must be a list`;

function checkTranscriptRequest(raw: Obj): string | null {
  if (!isId(raw.probeId)) return "missing string 'probeId'";
  if ("limit" in raw && !isCount(raw.limit)) return "'limit' must be a non-negative integer";
  return !("before" in raw) || isId(raw.before) ? null : "'before' must be a message id";
}

function checkTranscriptPatch(raw: Obj): string | null {
  if (!isCount(raw.rev) || !isCount(raw.base)) return "'rev' and 'base' must be non-negative integers";
  if (raw.after !== null && !isId(raw.after)) return "'after' must be a message id or null";
  if ("more" in raw && typeof raw.more !== "boolean") return "'more' must be a boolean";
  if ("usage" in raw && !isObj(raw.usage)) return "'usage' must be an object";
  return messagesError(raw, "messages") ?? messagesError(raw, "updated") ?? probe(raw);
}

function checkTranscriptPage(raw: Obj): string | null {
  if (!isCount(raw.rev)) return "'rev' must be a non-negative integer";
  if (!isId(raw.before) || !isId(raw.probeId)) return "missing string 'before' or 'probeId'";
  if (typeof raw.more !== "boolean") return "'more' must be a boolean";
  return messagesError(raw, "messages");
}

const none = (): null => null;
const CHECKS: Record<string, (raw: Obj) => string | null> = {
  [FRAME.USE_CHAT_REQUEST]: checkRequest,
  [FRAME.CHAT_REQUEST_CANCEL]: needId,
  [FRAME.CHAT_CLEAR]: none,
  [FRAME.TOOL_APPROVAL]: checkApproval,
  [FRAME.TOOL_RESULT]: checkToolResult,
  [FRAME.STREAM_RESUME_REQUEST]: (raw) => probe(raw) ??
    (!("transcriptRev" in raw) || isCount(raw.transcriptRev) ? null : "'transcriptRev' must be an integer"),
  [FRAME.STREAM_RESUME_ACK]: idAndProbe,
  [FRAME.USE_CHAT_RESPONSE]: checkResponse,
  [FRAME.MESSAGE_UPDATED]: (raw) => messageError(raw.message),
  [FRAME.STREAM_RESUMING]: idAndProbe,
  [FRAME.STREAM_RESUME_NONE]: probe,
  [FRAME.STREAM_PENDING]: (raw) => optionalStr(raw, "id") ?? probe(raw),
  [FRAME.CHAT_RECOVERING]: (raw) => (typeof raw.recovering === "boolean" ? optionalStr(raw, "id") : "'recovering' must be a boolean"),
  [FRAME.SESSION]: checkSession,
  [FRAME.SESSION_SWITCH]: (raw) => (typeof raw.session === "string" ? null : "missing string 'session'"),
  [FRAME.CONTINUE_REQUEST]: needId,
  [FRAME.SWITCH_BRANCH]: (raw) => (isId(raw.messageId) ? null : "missing string 'messageId'"),
  [FRAME.MCP_SERVERS]: checkMcpServers,
  [FRAME.TOOL_UNDO]: needCallId,
  [FRAME.TRANSCRIPT_REQUEST]: checkTranscriptRequest,
  [FRAME.TRANSCRIPT_PATCH]: checkTranscriptPatch,
  [FRAME.TRANSCRIPT_PAGE]: checkTranscriptPage,
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

export function useChatRequest(
  id: string,
  messages: UIMessage[],
  extra: { trigger?: Trigger; clientId?: string; clientTools?: ClientToolSchema[] } = {},
): UseChatRequest {
  const frame: UseChatRequest = { type: FRAME.USE_CHAT_REQUEST, id, messages, trigger: extra.trigger ?? TRIGGER.SUBMIT };
  if (extra.clientId) frame.clientId = extra.clientId;
  if (extra.clientTools?.length) frame.clientTools = extra.clientTools;
  return frame;
}
export function toolApproval(
  toolCallId: string,
  approved: boolean,
  reason?: string,
  input?: Record<string, unknown>,
): ToolApproval {
  const frame: ToolApproval = { type: FRAME.TOOL_APPROVAL, toolCallId, approved };
  if (reason) frame.reason = reason;
  if (approved && input) frame.input = input;
  return frame;
}
export function toolUndo(toolCallId: string): ToolUndo {
  return { type: FRAME.TOOL_UNDO, toolCallId };
}
export function toolResult(toolCallId: string, toolName: string, outcome: { output: unknown } | { errorText: string }): ToolResult {
  if ("errorText" in outcome) {
    return { type: FRAME.TOOL_RESULT, toolCallId, toolName, state: TOOL_RESULT_STATE.ERROR, errorText: outcome.errorText };
  }
  return { type: FRAME.TOOL_RESULT, toolCallId, toolName, output: outcome.output, state: TOOL_RESULT_STATE.AVAILABLE };
}
export function streamResumeAck(id: string, probeId?: string): StreamResumeAck {
  return probeId ? { type: FRAME.STREAM_RESUME_ACK, id, probeId } : { type: FRAME.STREAM_RESUME_ACK, id };
}
export function chatRequestCancel(id: string): ChatRequestCancel {
  return { type: FRAME.CHAT_REQUEST_CANCEL, id };
}
export function chatClear(): ChatClear {
  return { type: FRAME.CHAT_CLEAR };
}
export function streamResumeRequest(probeId?: string, transcriptRev?: number): StreamResumeRequest {
  const frame: StreamResumeRequest = probeId ? { type: FRAME.STREAM_RESUME_REQUEST, probeId } : { type: FRAME.STREAM_RESUME_REQUEST };
  if (transcriptRev !== undefined) frame.transcriptRev = transcriptRev;
  return frame;
}
export function sessionSwitch(session: string): SessionSwitch {
  return { type: FRAME.SESSION_SWITCH, session };
}
export function continueRequest(id: string): ContinueRequest {
  return { type: FRAME.CONTINUE_REQUEST, id };
}
export function switchBranch(messageId: string): SwitchBranch {
  return { type: FRAME.SWITCH_BRANCH, messageId };
}
export function transcriptRequest(probeId: string, before?: string, limit?: number): TranscriptRequest {
  const frame: TranscriptRequest = { type: FRAME.TRANSCRIPT_REQUEST, probeId };
  if (before) frame.before = before;
  if (limit) frame.limit = limit;
  return frame;
}
