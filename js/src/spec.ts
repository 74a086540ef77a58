/**
 * The protocol spec: the names kernel and panel share — frame types, the panel statuses and
 * the ChatPanel's synced trait names — read from think_nb/panel/protocol_spec.json, the one place
 * they are spelled (think_nb/panel/protocol.py loads the same file; esbuild bundles it here).
 *
 * A JSON import gives the compiler `string`, not the literal types that narrow a frame union
 * or a status, so those literal types are declared below; test/spec.test.ts checks with the
 * TypeScript compiler that they equal the spec's values, and that the `Traits` of widget.ts
 * are the spec's traits.
 */
import spec from "../../think_nb/panel/protocol_spec.json";

/** Frame constant name → frame type (the literal types of `spec.frames`). */
export interface FrameTypes {
  USE_CHAT_REQUEST: "use_chat_request";
  CHAT_REQUEST_CANCEL: "chat_request_cancel";
  CHAT_CLEAR: "chat_clear";
  TOOL_APPROVAL: "tool_approval";
  TOOL_RESULT: "tool_result";
  STREAM_RESUME_REQUEST: "stream_resume_request";
  STREAM_RESUME_ACK: "stream_resume_ack";
  SESSION_SWITCH: "session_switch";
  CONTINUE_REQUEST: "continue_request";
  SWITCH_BRANCH: "switch_branch";
  TOOL_UNDO: "tool_undo";
  USE_CHAT_RESPONSE: "use_chat_response";
  MESSAGE_UPDATED: "message_updated";
  STREAM_RESUMING: "stream_resuming";
  STREAM_RESUME_NONE: "stream_resume_none";
  STREAM_PENDING: "stream_pending";
  CHAT_RECOVERING: "chat_recovering";
  SESSION: "session";
  MCP_SERVERS: "mcp_servers";
  TRANSCRIPT_REQUEST: "transcript_request";
  TRANSCRIPT_PATCH: "transcript_patch";
  TRANSCRIPT_PAGE: "transcript_page";
}

/** The frame types, by constant name. */
export const FRAME: Readonly<FrameTypes> = spec.frames as FrameTypes;

/** A status every panel of an agent shows (the literal types of `spec.statuses`). */
export type Status =
  | "ready"
  | "submitted"
  | "streaming"
  | "awaiting-approval"
  | "awaiting-client-tool"
  | "paused"
  | "error"
  | "pending"
  | "recovering";

/** The statuses, in the spec's order. */
export const STATUSES: readonly Status[] = spec.statuses as Status[];

/** The names of the ChatPanel widget's synced traits. */
export const TRAITS: readonly string[] = Object.values(spec.traits);
