/**
 * DOM for one UIMessage and its parts: markdown text (code blocks with a copy button),
 * reasoning (collapsed), tool cards (collapsible; Approve / Deny while approval is
 * requested), sub-agent cards, sources, and a usage footer.
 *
 * Stable classes and data attributes are part of the contract with the browser tests:
 * `.think-message[data-role][data-message-id]`, `.think-text`, `.think-code-copy`,
 * `.think-tool[data-tool-name][data-state]` holding `.think-tool-input` and
 * `.think-tool-output` or `.think-tool-error`, `.think-approval` with
 * `button.think-approve` / `button.think-deny` / `input.think-deny-reason`,
 * `.think-subagent[data-status]`, `.think-usage[data-source]` (reported | estimated | unknown),
 * `button.think-regenerate`.
 */
import { enhanceCodeBlocks, renderMarkdown } from "./markdown";
import type { ViewMessage } from "./state";
import { type ToolPart, type UIPart, isToolPart, toolName } from "./ui-message";
import { formatTurnUsage, turnUsage } from "./usage";

function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

function pretty(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

function section(cls: string, label: string, body: string): HTMLElement {
  const div = h("div", cls);
  div.append(h("div", "think-tool-label", label), h("pre", undefined, body));
  return div;
}

/** What a message's controls need from the panel. */
export interface MessageContext {
  approve(toolCallId: string): void;
  deny(toolCallId: string, reason: string): void;
  regenerate(): void;
  /** toolCallIds answered in this view (buttons disabled). */
  responded: Record<string, boolean>;
  /** Show Regenerate under this message (the last assistant message, panel idle). */
  canRegenerate: boolean;
}

function approvalBox(part: ToolPart, ctx: MessageContext): HTMLElement {
  const box = h("div", "think-approval");
  const name = toolName(part);
  box.append(h("span", "think-approval-label", `Run ${name}?`));
  const reason = h("input", "think-deny-reason");
  reason.placeholder = "reason (optional)";
  const approve = h("button", "think-approve", "Approve");
  const deny = h("button", "think-deny", "Deny");
  const answered = ctx.responded[part.toolCallId] === true;
  for (const el of [approve, deny, reason]) el.disabled = answered;
  approve.addEventListener("click", () => ctx.approve(part.toolCallId));
  deny.addEventListener("click", () => ctx.deny(part.toolCallId, reason.value.trim()));
  box.append(approve, deny, reason);
  return box;
}

function toolCard(part: ToolPart, rawInput: string | undefined, ctx: MessageContext): HTMLElement {
  const name = toolName(part);
  const card = h("details", "think-tool");
  const waiting = part.state === "approval-requested" || part.state === "input-streaming";
  card.open = waiting || part.state === "output-error" || part.state === "output-denied";
  card.dataset.toolName = name;
  card.dataset.state = part.state;
  card.dataset.key = `tool:${part.toolCallId}:${part.state}`; // a new state opens or closes it afresh
  const summary = h("summary");
  summary.append(h("span", "think-tool-name", name), h("span", "think-tool-badge", part.state));
  card.append(summary);
  const input = part.state === "input-streaming" ? rawInput ?? "" : pretty(part.input);
  card.append(section("think-tool-input", "input", input));
  if (part.state === "approval-requested") card.append(approvalBox(part, ctx));
  if (part.state === "output-available") card.append(section("think-tool-output", "output", pretty(part.output)));
  if (part.state === "output-error") card.append(section("think-tool-error", "error", part.errorText ?? "error"));
  if (part.state === "output-denied") {
    const why = part.approval?.reason ? `Denied: ${part.approval.reason}` : "The call was denied.";
    card.append(section("think-tool-error", "denied", why));
  }
  return card;
}

interface SubAgentData {
  agent?: string;
  request_id?: string;
  status?: string;
  text?: string;
  tools?: unknown;
}

function subAgentCard(part: { id?: unknown; data?: unknown }): HTMLElement {
  const data = (part.data && typeof part.data === "object" ? part.data : {}) as SubAgentData;
  const card = h("details", "think-subagent");
  card.dataset.key = `subagent:${String(part.id ?? "")}`;
  card.dataset.status = String(data.status ?? "");
  const summary = h("summary");
  summary.append(h("span", "think-subagent-name", `↳ ${data.agent ?? "sub-agent"}`), h("span", "think-tool-badge", data.status ?? ""));
  card.append(summary);
  if (data.text) card.append(textPart({ text: String(data.text) }));
  if (Array.isArray(data.tools) && data.tools.length) card.append(section("think-tool-input", "tools", pretty(data.tools)));
  return card;
}

/** `model · 26 tokens · $0.000100`; "≈" marks litellm's estimates, "n/a" what nobody reported (usage.ts). */
function usageFooter(meta: Record<string, unknown> | undefined): HTMLElement | null {
  const usage = turnUsage(meta);
  if (!usage) return null;
  const text = formatTurnUsage(usage);
  const el = h("div", "think-usage", [typeof meta?.model === "string" ? meta.model : "", text.tokens, text.cost].filter(Boolean).join(" · "));
  el.dataset.source = usage.source;
  el.title = text.title;
  return el;
}

function textPart(part: { text: string; state?: string }): HTMLElement {
  const div = h("div", "think-text");
  div.innerHTML = renderMarkdown(part.text);
  enhanceCodeBlocks(div);
  if (part.state) div.dataset.state = part.state;
  return div;
}

function reasoningPart(part: { text: string; state?: string }, index: number): HTMLElement {
  const det = h("details", "think-reasoning");
  det.open = false; // reasoning is shown collapsed
  det.dataset.key = `reasoning:${index}`;
  det.append(h("summary", undefined, "Reasoning"), textPart(part));
  return det;
}

function link(cls: string, url: unknown, label: unknown): HTMLElement | null {
  if (typeof url !== "string" || !/^https?:/i.test(url)) return null;
  const a = h("a", cls, typeof label === "string" && label ? label : url);
  a.href = url;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

function partElement(part: UIPart, index: number, view: ViewMessage, ctx: MessageContext): HTMLElement | null {
  if (isToolPart(part)) return toolCard(part, view.rawInput?.[part.toolCallId], ctx);
  const p = part as Record<string, unknown>;
  switch (part.type) {
    case "text":
      return textPart(part as { text: string; state?: string });
    case "reasoning":
      return reasoningPart(part as { text: string; state?: string }, index);
    case "source-url":
      return link("think-source", p.url, p.title);
    case "file":
      return link("think-file", p.url, p.filename ?? p.mediaType);
    case "data-subagent":
      return subAgentCard(p);
    default:
      return null; // step-start, other data-*, unknown parts: nothing to show
  }
}

/** The element for one message; `previous` (its last rendering) lends its open/closed details. */
export function messageElement(view: ViewMessage, ctx: MessageContext, previous?: HTMLElement): HTMLElement {
  const { message } = view;
  const el = h("div", "think-message");
  el.dataset.role = message.role;
  el.dataset.messageId = message.id;
  if (view.live) el.dataset.live = "true";
  message.parts.forEach((part, i) => {
    const child = partElement(part, i, view, ctx);
    if (child) el.append(child);
  });
  // a failed turn's error is stored on its message (metadata.error), so reloaded views show it too
  const stored = message.metadata?.error;
  const errorText = view.errorText ?? (typeof stored === "string" ? stored : undefined);
  if (errorText) el.append(h("div", "think-message-error", errorText));
  const usage = view.live ? null : usageFooter(message.metadata);
  if (usage) el.append(usage);
  if (ctx.canRegenerate) {
    const again = h("button", "think-regenerate", "Regenerate");
    again.addEventListener("click", () => ctx.regenerate());
    el.append(again);
  }
  if (previous) keepOpenState(previous, el);
  return el;
}

function keepOpenState(previous: HTMLElement, el: HTMLElement): void {
  const open = new Map<string, boolean>();
  previous.querySelectorAll<HTMLDetailsElement>("details[data-key]").forEach((d) => open.set(d.dataset.key ?? "", d.open));
  el.querySelectorAll<HTMLDetailsElement>("details[data-key]").forEach((d) => {
    const was = open.get(d.dataset.key ?? "");
    if (was !== undefined) d.open = was;
  });
}
