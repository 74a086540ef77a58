/**
 * Data the kernel described for the model, shown as collapsible tables:
 *
 * - a `data-context` part of a user message (`agent.send(text, context={"df": df})`, `%%think
 *   Calc --with df`): `{name, kind, summary, markdown, tokens, truncated}` →
 *   `details.think-data[data-name]` whose summary line is "name · summary · N tokens" and whose
 *   body is the description (markdown tables: dtypes, head/tail, describe());
 * - a tool's `table` output (`{type: "table", kind, shape, markdown, truncated}`) → the same
 *   table inside the tool card's output section (`.think-data-table`).
 *
 * The markdown goes through `renderMarkdown` (sanitised): a data frame's cells are model-visible
 * text like any other, so they get the same trust boundary.
 */
import { renderMarkdown } from "./markdown";

export interface DataContext {
  name: string;
  kind?: string;
  summary?: string;
  markdown: string;
  tokens?: number;
  truncated?: boolean;
}

export interface TableOutput {
  type: "table";
  kind?: string;
  shape?: number[];
  markdown: string;
  truncated?: boolean;
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** The part's data when it has the shape above, else null (shown as nothing, like other data-*). */
export function dataContextOf(data: unknown): DataContext | null {
  const d = asRecord(data);
  if (!d || typeof d.name !== "string" || typeof d.markdown !== "string") return null;
  return d as unknown as DataContext;
}

/** A tool output that is a kernel-made table, else null. */
export function tableOutputOf(output: unknown): TableOutput | null {
  const o = asRecord(output);
  if (!o || o.type !== "table" || typeof o.markdown !== "string") return null;
  return o as unknown as TableOutput;
}

function table(markdown: string): HTMLElement {
  const body = document.createElement("div");
  body.className = "think-data-table";
  body.innerHTML = renderMarkdown(markdown);
  return body;
}

/** `details.think-data` for a `data-context` part (collapsed; `data-key` keeps it open across renders). */
export function dataContextElement(data: unknown, index: number): HTMLElement | null {
  const ctx = dataContextOf(data);
  if (!ctx) return null;
  const det = document.createElement("details");
  det.className = "think-data";
  det.dataset.name = ctx.name;
  det.dataset.key = `data:${index}:${ctx.name}`;
  if (ctx.truncated) det.dataset.truncated = "true";
  const summary = document.createElement("summary");
  const bits = [ctx.name, ctx.summary, typeof ctx.tokens === "number" ? `${ctx.tokens} tokens` : undefined];
  summary.textContent = bits.filter((b) => b).join(" · ");
  det.append(summary, table(ctx.markdown));
  return det;
}

/** The tool card's output section for a `table` output. */
export function tableOutputElement(output: unknown, label: string): HTMLElement | null {
  const t = tableOutputOf(output);
  if (!t) return null;
  const div = document.createElement("div");
  div.className = "think-tool-output";
  const head = document.createElement("div");
  head.className = "think-tool-label";
  head.textContent = label;
  div.append(head, table(t.markdown));
  return div;
}
