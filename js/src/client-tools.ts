/**
 * Client tools: tool calls the panel runs in the browser.
 *
 * Specs come from the kernel (`client_tools` trait: `{name, description, parameters, js}`,
 * declared in Python with `client_tool(...)`). A call is run when the transcript holds its
 * part in state `input-available` and this view is the runner (`client_tool_runner` trait
 * equals this view's client id: the view that most recently attached or sent a message),
 * once per toolCallId. The `js` is the body of an async function of `input`; its return
 * value becomes `output`, a throw (or a non-JSON value) becomes `output-error`.
 */
import { type ToolResult, toolResult } from "./protocol";
import { type ToolPart, type UIMessage, isToolPart, toolName } from "./ui-message";

export interface ClientToolSpec {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  js?: string;
}

type Body = (input: unknown) => Promise<unknown>;
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (arg: string, body: string) => Body;

/** Tool calls in `messages` that wait for a client tool of `specs`, not yet in `seen`. */
export function pendingCalls(messages: readonly UIMessage[], specs: readonly ClientToolSpec[], seen: ReadonlySet<string>): ToolPart[] {
  const names = new Set(specs.filter((s) => s.js).map((s) => s.name));
  const out: ToolPart[] = [];
  for (const m of messages) {
    if (m.role !== "assistant") continue;
    for (const p of m.parts) {
      if (isToolPart(p) && p.state === "input-available" && names.has(toolName(p)) && !seen.has(p.toolCallId)) out.push(p);
    }
  }
  return out;
}

function errorText(e: unknown): string {
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}

/** Run one call; resolves to the `tool_result` frame to send (never rejects). */
export async function runCall(part: ToolPart, spec: ClientToolSpec): Promise<ToolResult> {
  const name = toolName(part);
  try {
    const fn = new AsyncFunction("input", spec.js ?? "");
    const output = await fn(part.input ?? {});
    return toolResult(part.toolCallId, name, { output: output === undefined ? null : JSON.parse(JSON.stringify(output)) });
  } catch (e) {
    return toolResult(part.toolCallId, name, { errorText: errorText(e) });
  }
}
