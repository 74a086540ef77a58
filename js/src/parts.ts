/**
 * DOM for one UIMessage and its parts: markdown text, reasoning, tool cards, sources.
 *
 * Stable classes and data attributes are part of the contract with the browser tests:
 * `.think-message[data-role][data-message-id]`, `.think-text`, and
 * `.think-tool[data-tool-name][data-state]` holding `.think-tool-input` and
 * `.think-tool-output` or `.think-tool-error`.
 */
import { renderMarkdown } from "./markdown";
import type { ViewMessage } from "./state";
import { type ToolPart, type UIPart, isToolPart, toolName } from "./ui-message";

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

function toolCard(part: ToolPart, rawInput: string | undefined): HTMLElement {
  const name = toolName(part);
  const card = h("details", "think-tool");
  card.open = true;
  card.dataset.toolName = name;
  card.dataset.state = part.state;
  card.dataset.key = `tool:${part.toolCallId}`;
  const summary = h("summary");
  summary.append(h("span", "think-tool-name", name), h("span", "think-tool-badge", part.state));
  card.append(summary);
  const input = part.state === "input-streaming" ? rawInput ?? "" : pretty(part.input);
  card.append(section("think-tool-input", "input", input));
  if (part.state === "output-available") card.append(section("think-tool-output", "output", pretty(part.output)));
  if (part.state === "output-error") card.append(section("think-tool-error", "error", part.errorText ?? "error"));
  if (part.state === "output-denied") card.append(section("think-tool-error", "denied", "The call was denied."));
  return card;
}

function textPart(part: { text: string; state?: string }): HTMLElement {
  const div = h("div", "think-text");
  div.innerHTML = renderMarkdown(part.text);
  if (part.state) div.dataset.state = part.state;
  return div;
}

function reasoningPart(part: { text: string; state?: string }, index: number): HTMLElement {
  const det = h("details", "think-reasoning");
  det.open = part.state === "streaming";
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

function partElement(part: UIPart, index: number, view: ViewMessage): HTMLElement | null {
  if (isToolPart(part)) return toolCard(part, view.rawInput?.[part.toolCallId]);
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
    default:
      return null; // step-start, data-*, unknown parts: nothing to show yet
  }
}

/** The element for one message; `previous` (its last rendering) lends its open/closed details. */
export function messageElement(view: ViewMessage, previous?: HTMLElement): HTMLElement {
  const { message } = view;
  const el = h("div", "think-message");
  el.dataset.role = message.role;
  el.dataset.messageId = message.id;
  if (view.live) el.dataset.live = "true";
  message.parts.forEach((part, i) => {
    const child = partElement(part, i, view);
    if (child) el.append(child);
  });
  // a failed turn's error is stored on its message (metadata.error), so reloaded views show it too
  const stored = message.metadata?.error;
  const errorText = view.errorText ?? (typeof stored === "string" ? stored : undefined);
  if (errorText) el.append(h("div", "think-message-error", errorText));
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
