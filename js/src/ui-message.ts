/**
 * UIMessage, its parts, and UIMessageChunk: the AI SDK shapes the panel renders.
 *
 * Plain JSON, exactly as the AI SDK (and think_nb's Python side) defines them. Only the
 * fields the panel reads are typed; anything else rides along untouched.
 */

export type Role = "system" | "user" | "assistant";

export interface UIMessage {
  id: string;
  role: Role;
  parts: UIPart[];
  metadata?: Record<string, unknown>;
}

export type ToolState =
  | "input-streaming"
  | "input-available"
  | "approval-requested"
  | "approval-responded"
  | "output-available"
  | "output-error"
  | "output-denied";

export interface TextPart {
  type: "text";
  text: string;
  state?: "streaming" | "done";
  providerMetadata?: unknown;
}

export interface ReasoningPart {
  type: "reasoning";
  text: string;
  state?: "streaming" | "done";
  providerMetadata?: unknown;
}

/** A `tool-<name>` part (static tool) or a `dynamic-tool` part (which has `toolName`). */
export interface ToolPart {
  type: `tool-${string}` | "dynamic-tool";
  toolCallId: string;
  toolName?: string;
  state: ToolState;
  input?: unknown;
  output?: unknown;
  errorText?: string;
  approval?: { id: string; approved?: boolean; reason?: string; descriptor?: unknown; input?: unknown };
  /** The output so far; a later output replaces it. */
  preliminary?: boolean;
  title?: string;
  providerExecuted?: boolean;
  callProviderMetadata?: unknown;
}

export interface OtherPart {
  type: string;
  [key: string]: unknown;
}

export type UIPart = TextPart | ReasoningPart | ToolPart | OtherPart;

/** One streamed unit. `type` says which; the other fields depend on it (AI SDK table). */
export interface UIMessageChunk {
  type: string;
  [key: string]: unknown;
}

export const TERMINAL_TOOL_STATES: ReadonlySet<string> = new Set([
  "output-available",
  "output-error",
  "output-denied",
]);

export function isToolPart(part: UIPart): part is ToolPart {
  return part.type === "dynamic-tool" || part.type.startsWith("tool-");
}

/** The tool's name: from `toolName` (dynamic tools) or the `tool-<name>` type. */
export function toolName(part: ToolPart): string {
  return part.toolName ?? part.type.slice("tool-".length);
}

/** think_nb's kernel tool that runs code in the notebook's kernel (think_nb/kernel; its card: kernel-run.ts). */
export const RUN_CODE = "run_code";
