/**
 * The chunk accumulator: builds the in-flight assistant message of one turn from its
 * UIMessageChunks. The rules are the AI SDK's (`processUIMessageStream`) with Think's
 * tolerance for replayed and resumed streams, exactly as the Python accumulator
 * (think_nb/messages/accumulator.py, whose docstring lists them); both are checked against
 * the golden chunk fixtures in tests/fixtures/chunks/.
 *
 * Pure: `applyChunks(turn, chunks)` returns a new LiveTurn and never mutates its input
 * (changed parts are replaced by new objects, so renderers may cache by identity). Parts
 * never hold `undefined` values: a field the chunk lacks is left out, as in JSON.
 * Besides the message, a LiveTurn keeps what the panel shows aside: the tool input text
 * streamed so far, results for tool calls of earlier messages, and the turn's error.
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
  TERMINAL_TOOL_STATES,
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
  /** `text:<id>` / `reasoning:<id>` → index of its open part in `message.parts`. */
  openParts: Record<string, number>;
  /** Results for tool calls of earlier messages (an approved tool run by a continuation). */
  crossTool: Record<string, Partial<ToolPart> & { state: ToolState }>;
  /** Set by an `error` chunk; shown inline under the message. */
  errorText?: string;
  /** Set by an `abort` chunk: the turn was stopped (Stop, a cancel, a stall). */
  aborted?: boolean;
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
  calls += 1;
  for (const chunk of chunks) applyChunk(draft, chunk);
  return draft;
}

/** Tool part states in order: a part only ever moves to a higher rank. */
export const RANK: Record<ToolState, number> = {
  "input-streaming": 0,
  "input-available": 1,
  "approval-requested": 2,
  "approval-responded": 3,
  "output-available": 4,
  "output-error": 4,
  "output-denied": 4,
};

/** The chunk fields each source/file part copies (fields the chunk lacks are left out). */
const SOURCE_FIELDS: Record<string, readonly string[]> = {
  "source-url": ["sourceId", "url", "title", "providerMetadata"],
  "source-document": ["sourceId", "mediaType", "title", "filename", "providerMetadata"],
  file: ["mediaType", "url", "providerMetadata"],
};

type Draft = LiveTurn;
type Obj = Record<string, unknown>;
const str = (x: unknown): string => (typeof x === "string" ? x : "");
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);

/** The fields of `c` that are set (not missing, not null). */
function present(c: Obj, fields: readonly string[]): Obj {
  const out: Obj = {};
  for (const f of fields) if (c[f] != null) out[f] = c[f];
  return out;
}

/** `base` updated with `overrides`, merging nested objects (the AI SDK's `mergeObjects`). */
export function mergeMetadata(base: Obj, overrides: Obj): Obj {
  const merged: Obj = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    const old = merged[key];
    merged[key] = isObj(old) && isObj(value) ? mergeMetadata(old, value) : value;
  }
  return merged;
}

function mergeMessageMetadata(d: Draft, c: UIMessageChunk): void {
  if (isObj(c.messageMetadata)) d.message.metadata = mergeMetadata(d.message.metadata ?? {}, c.messageMetadata);
}

// -- text and reasoning --------------------------------------------------------------

type StreamKind = "text" | "reasoning";

/**
 * How a streamed text/reasoning part object grew: `stream` is shared by every part object one
 * `*-start` ... `*-end` run goes through, `added` is what the last `applyChunks` call appended to
 * the `base` characters the stream's text had before it. A renderer that rendered that text can
 * take the new text as `added` alone, without reading the whole text (for a long reply that read
 * is a copy of all of it per frame: V8 flattens the concatenated string). `stream`'s texts only grow.
 */
export interface Growth {
  stream: object;
  base: number;
  added: string;
}

/** A stream and the length of its newest text: a part that is not its newest starts a new stream
 * when it grows (a state reduced twice branches; the texts of one stream stay prefixes of each other). */
interface Stream {
  length: number;
}

const GROWTH = new WeakMap<object, Growth & { stream: Stream; call: number }>();
/** Counts `applyChunks` calls: the deltas of one call for one part add up to one `added`. */
let calls = 0;

/** How `part` grew (see Growth), or undefined for a part not streamed by this module. */
export function growthOf(part: object): Growth | undefined {
  return GROWTH.get(part);
}

function openStreamingPart(d: Draft, kind: StreamKind, c: UIMessageChunk): number {
  const part: UIPart = { type: kind, text: "", state: "streaming", ...present(c, ["providerMetadata"]) };
  GROWTH.set(part, { stream: { length: 0 }, base: 0, added: "", call: calls });
  const i = d.message.parts.push(part) - 1;
  d.openParts[`${kind}:${str(c.id)}`] = i;
  return i;
}

function appendDelta(d: Draft, kind: StreamKind, c: UIMessageChunk): void {
  const key = `${kind}:${str(c.id)}`;
  const i = key in d.openParts ? d.openParts[key] : openStreamingPart(d, kind, c); // no start: a resumed stream
  const part = d.message.parts[i] as TextPart | ReasoningPart;
  const delta = str(c.delta);
  d.message.parts[i] = { ...part, text: part.text + delta, ...present(c, ["providerMetadata"]) };
  const was = GROWTH.get(part);
  const length = part.text.length + delta.length;
  if (was && was.call === calls) {
    GROWTH.set(d.message.parts[i], { ...was, added: was.added + delta });
    was.stream.length = length;
  } else {
    const stream = was && was.stream.length === part.text.length ? was.stream : { length: 0 };
    stream.length = length;
    GROWTH.set(d.message.parts[i], { stream, base: part.text.length, added: delta, call: calls });
  }
}

function endStreamingPart(d: Draft, kind: StreamKind, c: UIMessageChunk): void {
  const key = `${kind}:${str(c.id)}`;
  if (!(key in d.openParts)) return;
  const i = d.openParts[key];
  delete d.openParts[key];
  const part = d.message.parts[i];
  d.message.parts[i] = { ...part, state: "done", ...present(c, ["providerMetadata"]) } as UIPart;
  const was = GROWTH.get(part);
  if (!was) return;
  const length = (part as TextPart).text.length;
  const stream = was.call === calls || was.stream.length === length ? was.stream : { length };
  GROWTH.set(d.message.parts[i], was.call === calls ? was : { stream, base: length, added: "", call: calls });
}

// -- sources, files and data ------------------------------------------------------------

function appendSource(d: Draft, c: UIMessageChunk): void {
  d.message.parts.push({ type: c.type, ...present(c, SOURCE_FIELDS[c.type]) });
}

function applyDataChunk(d: Draft, c: UIMessageChunk): void {
  if (c.transient === true) return;
  const part: UIPart = { type: c.type, ...present(c, ["id"]), ...("data" in c ? { data: c.data } : {}) };
  const i = c.id == null ? -1 : d.message.parts.findIndex((p) => p.type === c.type && (p as OtherPart).id === c.id);
  if (i >= 0) d.message.parts[i] = part;
  else d.message.parts.push(part);
}

// -- tools ----------------------------------------------------------------------------

function toolIndex(d: Draft, toolCallId: string): number {
  return d.message.parts.findIndex((p) => isToolPart(p) && p.toolCallId === toolCallId);
}

/** What a `tool-input-*` chunk adds to its part besides state and input. */
function callExtras(c: UIMessageChunk): Obj {
  const extras = present(c, ["title", "providerExecuted"]);
  if (c.providerMetadata != null) extras.callProviderMetadata = c.providerMetadata;
  return extras;
}

/** The chunk's tool part, created (`input-streaming`) when the call is new. */
function ensureTool(d: Draft, c: UIMessageChunk): number {
  const id = str(c.toolCallId);
  const found = toolIndex(d, id);
  if (found >= 0) return found;
  const name = str(c.toolName) || "unknown";
  const kind = c.dynamic === true ? { type: "dynamic-tool" as const, toolName: name } : { type: `tool-${name}` as const };
  const part: ToolPart = { ...kind, toolCallId: id, state: "input-streaming", ...callExtras(c) };
  return d.message.parts.push(part) - 1;
}

/**
 * Move a tool part forward to `state` with `fields`; a move that is not forward is ignored
 * (a replayed chunk never regresses a part), except that any later output replaces a
 * preliminary one (its `output` and `preliminary` go with it).
 */
function advanceTool(d: Draft, i: number, state: ToolState, fields: Obj): void {
  if (i < 0) return;
  const part = d.message.parts[i] as ToolPart;
  if (TERMINAL_TOOL_STATES.has(state) && part.state === "output-available" && part.preliminary === true) {
    const { preliminary: _preliminary, output: _output, ...rest } = part;
    d.message.parts[i] = { ...rest, ...fields, state } as ToolPart;
  } else if (RANK[state] > (RANK[part.state] ?? 0)) {
    d.message.parts[i] = { ...part, ...fields, state } as ToolPart;
  }
}

/** A settled result for a tool call this turn does not hold: kept for the earlier message. */
function crossMessage(d: Draft, c: UIMessageChunk): boolean {
  const id = str(c.toolCallId);
  if (toolIndex(d, id) >= 0) return false;
  if (c.type === "tool-output-available") d.crossTool[id] = { state: "output-available", output: c.output ?? null };
  else if (c.type === "tool-output-error") d.crossTool[id] = { state: "output-error", errorText: str(c.errorText) };
  else if (c.type === "tool-output-denied") d.crossTool[id] = { state: "output-denied" };
  else return false;
  return true;
}

function approval(c: UIMessageChunk): Obj {
  return { id: str(c.approvalId), ...(c.approvalDescriptor != null ? { descriptor: c.approvalDescriptor } : {}) };
}

function output(c: UIMessageChunk): Obj {
  return { output: c.output ?? null, ...present(c, ["providerExecuted"]), ...(c.preliminary === true ? { preliminary: true } : {}) };
}

function streamInput(d: Draft, c: UIMessageChunk): void {
  const id = str(c.toolCallId);
  const i = toolIndex(d, id);
  if (i >= 0 && (d.message.parts[i] as ToolPart).state === "input-streaming") {
    d.rawInput[id] = (d.rawInput[id] ?? "") + str(c.inputTextDelta);
  }
}

/** The input fields a `tool-input-available` / `tool-input-error` chunk sets. */
function input(c: UIMessageChunk): Obj {
  return { input: c.input ?? null, ...callExtras(c) };
}

function applyToolChunk(d: Draft, c: UIMessageChunk): void {
  if (crossMessage(d, c)) return;
  const known = toolIndex(d, str(c.toolCallId));
  switch (c.type) {
    case "tool-input-start":
      ensureTool(d, c);
      return;
    case "tool-input-delta":
      return streamInput(d, c);
    case "tool-input-available":
      return advanceTool(d, ensureTool(d, c), "input-available", input(c));
    case "tool-input-error":
      return advanceTool(d, ensureTool(d, c), "output-error", { ...input(c), errorText: str(c.errorText) });
    case "tool-approval-request":
      return advanceTool(d, known, "approval-requested", { approval: approval(c) });
    case "tool-output-available":
      return advanceTool(d, known, "output-available", output(c));
    case "tool-output-error":
      return advanceTool(d, known, "output-error", { errorText: str(c.errorText), ...present(c, ["providerExecuted"]) });
    case "tool-output-denied":
      return advanceTool(d, known, "output-denied", {});
  }
}

// -- dispatch ---------------------------------------------------------------------------

function applyChunk(d: Draft, c: UIMessageChunk): void {
  switch (c.type) {
    case "start":
      if (typeof c.messageId === "string" && c.messageId) d.message.id = c.messageId;
      return mergeMessageMetadata(d, c);
    case "finish":
    case "message-metadata":
      return mergeMessageMetadata(d, c);
    case "start-step":
      d.message.parts.push({ type: "step-start" });
      return;
    case "finish-step":
      d.openParts = {};
      return;
    case "text-start":
      openStreamingPart(d, "text", c);
      return;
    case "reasoning-start":
      openStreamingPart(d, "reasoning", c);
      return;
    case "text-delta":
      return appendDelta(d, "text", c);
    case "reasoning-delta":
      return appendDelta(d, "reasoning", c);
    case "text-end":
      return endStreamingPart(d, "text", c);
    case "reasoning-end":
      return endStreamingPart(d, "reasoning", c);
    case "source-url":
    case "source-document":
    case "file":
      return appendSource(d, c);
    case "error":
      d.errorText = str(c.errorText) || "The turn failed.";
      return;
    case "abort":
      d.aborted = true;
      return;
  }
  if (c.type.startsWith("tool-")) applyToolChunk(d, c);
  else if (c.type.startsWith("data-")) applyDataChunk(d, c);
  // unknown chunk types add nothing
}
