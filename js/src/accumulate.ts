/**
 * The chunk → part accumulator: builds the in-flight assistant message of one turn from
 * its UIMessageChunks, with the same rules as the Python accumulator (AI SDK semantics).
 *
 * Pure: `applyChunks(turn, chunks)` returns a new LiveTurn and never mutates its input
 * (changed parts are replaced by new objects, so renderers may cache by identity).
 * Tool parts are idempotent per toolCallId and never move back to an earlier state.
 */
import {
  type OtherPart,
  type ReasoningPart,
  type TextPart,
  type ToolPart,
  type ToolState,
  type UIMessage,
  type UIMessageChunk,
  type UIPart,
  isToolPart,
} from "./ui-message";

/** One turn being streamed into the panel. */
export interface LiveTurn {
  requestId: string;
  /** The chunks extend the last assistant message (a continuation turn). */
  continuation: boolean;
  message: UIMessage;
  /** toolCallId → input text streamed so far (shown while the tool is input-streaming). */
  rawInput: Record<string, string>;
  /** text / reasoning id → index of its part in `message.parts`. */
  openParts: Record<string, number>;
  /** Results for tool calls of earlier messages (an approved tool run by a continuation). */
  crossTool: Record<string, Partial<ToolPart> & { state: ToolState }>;
  /** Set by an `error` chunk; shown inline under the message. */
  errorText?: string;
  done: boolean;
}

export function newTurn(requestId: string, continuation: boolean): LiveTurn {
  const message: UIMessage = { id: `live-${requestId}`, role: "assistant", parts: [] };
  return { requestId, continuation, message, rawInput: {}, openParts: {}, crossTool: {}, done: false };
}

/** `turn` with `chunks` applied, in order. Unknown chunk types are ignored. */
export function applyChunks(turn: LiveTurn, chunks: readonly UIMessageChunk[]): LiveTurn {
  const draft: LiveTurn = {
    ...turn,
    message: { ...turn.message, parts: turn.message.parts.slice() },
    rawInput: { ...turn.rawInput },
    openParts: { ...turn.openParts },
    crossTool: { ...turn.crossTool },
  };
  for (const chunk of chunks) applyChunk(draft, chunk);
  return draft;
}

export const RANK: Record<ToolState, number> = {
  "input-streaming": 0,
  "input-available": 1,
  "approval-requested": 2,
  "approval-responded": 3,
  "output-available": 4,
  "output-error": 4,
  "output-denied": 4,
};

type Draft = LiveTurn;
const str = (x: unknown): string => (typeof x === "string" ? x : "");

function mergeMetadata(d: Draft, meta: unknown): void {
  if (meta && typeof meta === "object") {
    d.message.metadata = { ...(d.message.metadata ?? {}), ...(meta as Record<string, unknown>) };
  }
}

function openStreamingPart(d: Draft, kind: "text" | "reasoning", c: UIMessageChunk): void {
  const part: UIPart = { type: kind, text: "", state: "streaming" };
  if (c.providerMetadata !== undefined) part.providerMetadata = c.providerMetadata;
  d.openParts[`${kind}:${str(c.id)}`] = d.message.parts.push(part) - 1;
}

function updateStreamingPart(d: Draft, kind: "text" | "reasoning", c: UIMessageChunk, end: boolean): void {
  const key = `${kind}:${str(c.id)}`;
  if (!(key in d.openParts)) openStreamingPart(d, kind, c); // a delta without a start
  const i = d.openParts[key];
  const part = d.message.parts[i] as TextPart | ReasoningPart;
  d.message.parts[i] = end ? { ...part, state: "done" } : { ...part, text: part.text + str(c.delta) };
}

function toolIndex(d: Draft, toolCallId: string): number {
  return d.message.parts.findIndex((p) => isToolPart(p) && p.toolCallId === toolCallId);
}

function ensureTool(d: Draft, c: UIMessageChunk): number {
  const id = str(c.toolCallId);
  const found = toolIndex(d, id);
  if (found >= 0) return found;
  const part: ToolPart = { type: `tool-${str(c.toolName)}`, toolCallId: id, state: "input-streaming", input: undefined };
  return d.message.parts.push(part) - 1;
}

/** Move a tool part forward to `state` with `fields`; never backwards, never past terminal. */
function advanceTool(d: Draft, i: number, state: ToolState, fields: Partial<ToolPart>): void {
  if (i < 0) return;
  const part = d.message.parts[i] as ToolPart;
  if (RANK[state] <= RANK[part.state]) return;
  d.message.parts[i] = { ...part, ...fields, state };
}

/** A settled result for a tool call this turn does not hold: kept for the earlier message. */
function crossMessage(d: Draft, c: UIMessageChunk): boolean {
  const id = str(c.toolCallId);
  if (toolIndex(d, id) >= 0) return false;
  if (c.type === "tool-output-available") d.crossTool[id] = { state: "output-available", output: c.output };
  else if (c.type === "tool-output-error") d.crossTool[id] = { state: "output-error", errorText: str(c.errorText) };
  else if (c.type === "tool-output-denied") d.crossTool[id] = { state: "output-denied" };
  else return false;
  return true;
}

function applyToolChunk(d: Draft, c: UIMessageChunk): void {
  const id = str(c.toolCallId);
  if (crossMessage(d, c)) return;
  switch (c.type) {
    case "tool-input-start":
      ensureTool(d, c);
      return;
    case "tool-input-delta": {
      const i = toolIndex(d, id);
      if (i >= 0 && (d.message.parts[i] as ToolPart).state === "input-streaming") {
        d.rawInput[id] = (d.rawInput[id] ?? "") + str(c.inputTextDelta);
      }
      return;
    }
    case "tool-input-available":
      return advanceTool(d, ensureTool(d, c), "input-available", { input: c.input });
    case "tool-input-error":
      return advanceTool(d, ensureTool(d, c), "output-error", { input: c.input, errorText: str(c.errorText) });
    case "tool-approval-request":
      return advanceTool(d, toolIndex(d, id), "approval-requested", { approval: { id: str(c.approvalId) } });
    case "tool-output-available":
      return advanceTool(d, toolIndex(d, id), "output-available", { output: c.output });
    case "tool-output-error":
      return advanceTool(d, toolIndex(d, id), "output-error", { errorText: str(c.errorText) });
    case "tool-output-denied":
      return advanceTool(d, toolIndex(d, id), "output-denied", {});
  }
}

function applyDataChunk(d: Draft, c: UIMessageChunk): void {
  if (c.transient === true) return;
  const part: UIPart = c.id === undefined ? { type: c.type, data: c.data } : { type: c.type, id: c.id, data: c.data };
  const i = c.id === undefined ? -1 : d.message.parts.findIndex((p) => p.type === c.type && (p as OtherPart).id === c.id);
  if (i >= 0) d.message.parts[i] = part;
  else d.message.parts.push(part);
}

function applyChunk(d: Draft, c: UIMessageChunk): void {
  switch (c.type) {
    case "start":
      if (typeof c.messageId === "string" && c.messageId) d.message.id = c.messageId;
      return mergeMetadata(d, c.messageMetadata);
    case "start-step":
      d.message.parts.push({ type: "step-start" });
      return;
    case "text-start":
    case "reasoning-start":
      return openStreamingPart(d, c.type === "text-start" ? "text" : "reasoning", c);
    case "text-delta":
    case "text-end":
      return updateStreamingPart(d, "text", c, c.type === "text-end");
    case "reasoning-delta":
    case "reasoning-end":
      return updateStreamingPart(d, "reasoning", c, c.type === "reasoning-end");
    case "finish":
    case "message-metadata":
      return mergeMetadata(d, c.messageMetadata);
    case "error":
      d.errorText = str(c.errorText) || "The turn failed.";
      return;
    case "source-url":
    case "source-document":
    case "file":
      d.message.parts.push({ ...c });
      return;
  }
  if (c.type.startsWith("tool-")) applyToolChunk(d, c);
  else if (c.type.startsWith("data-")) applyDataChunk(d, c);
  // finish-step, abort and unknown chunk types add nothing
}
