/**
 * The panel's DOM: header (agent name, Chat | Context tabs, status line, token/cost totals,
 * SQLite path, Clear), error banner, then either the chat (message list and composer:
 * textarea, Send, Stop) or the context tab (context-tab.ts).
 *
 * `createPanel(el, actions)` builds it once; `update(state, meta)` redraws from a
 * PanelState, reusing the element of every message whose object did not change (the
 * reducer replaces only what changed), and keeps the list scrolled to the bottom while
 * the user is there. User input goes out through `actions`; this module sends nothing.
 */
import { type MessageContext, messageElement } from "./parts";
import { type PanelState, type Status, type ViewMessage, displayStatus, isBusy, visibleMessages } from "./state";
import { formatTotals, usageTotals } from "./usage";
import { isToolPart } from "./ui-message";
import { CSS } from "./styles";
import { createContextTab } from "./context-tab";

export interface PanelActions {
  send(text: string): void;
  stop(): void;
  clear(): void;
  regenerate(): void;
  approve(toolCallId: string): void;
  deny(toolCallId: string, reason: string): void;
  switchSession(id: string): void;
}

/** How a status reads in the status line, where it is not the status itself. */
export const STATUS_LABEL: Partial<Record<Status, string>> = {
  "awaiting-approval": "awaiting approval",
  "awaiting-client-tool": "awaiting client tool",
  pending: "queued",
  recovering: "recovering an interrupted turn",
};

export interface PanelMeta {
  agentName: string;
  dbPath: string;
  pausedAt?: string;
}

export interface PanelView {
  update(state: PanelState, meta: PanelMeta): void;
  destroy(): void;
}

interface Cached {
  view: ViewMessage;
  sig: string;
  el: HTMLElement;
}

function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

const same = (a: ViewMessage, b: ViewMessage): boolean =>
  a.message === b.message && a.rawInput === b.rawInput && a.errorText === b.errorText && a.live === b.live;

export function createPanel(el: HTMLElement, actions: PanelActions): PanelView {
  const root = h("div", "think-panel");
  const style = document.createElement("style");
  style.textContent = CSS;
  const header = h("div", "think-header");
  const name = h("span", "think-agent-name");
  const status = h("span", "think-status");
  status.setAttribute("role", "status");
  const totals = h("span", "think-totals");
  const dbPath = h("code", "think-db-path");
  const clear = h("button", "think-clear", "Clear");
  const tabs = h("div", "think-tabs");
  tabs.setAttribute("role", "tablist");
  const tabButtons = (["chat", "context"] as const).map((tab) => {
    const b = h("button", "think-tab", tab === "chat" ? "Chat" : "Context");
    b.dataset.tab = tab;
    b.setAttribute("role", "tab");
    b.addEventListener("click", () => showTab(tab));
    return b;
  });
  tabs.append(...tabButtons);
  header.append(name, tabs, status, totals, dbPath, clear);
  const banner = h("div", "think-error");
  banner.setAttribute("role", "alert");
  const list = h("div", "think-messages");
  const composer = h("div", "think-composer");
  const input = h("textarea", "think-input");
  input.rows = 2;
  const send = h("button", "think-send", "Send");
  const stop = h("button", "think-stop", "Stop");
  composer.append(input, send, stop);
  const context = createContextTab({ switchSession: (id) => actions.switchSession(id) });
  root.append(style, header, banner, list, composer, context.el);
  el.append(root);
  function showTab(tab: "chat" | "context"): void {
    root.dataset.tab = tab;
    for (const b of tabButtons) b.setAttribute("aria-selected", String(b.dataset.tab === tab));
    list.hidden = composer.hidden = tab !== "chat";
    context.el.hidden = tab !== "context";
  }
  showTab("chat");

  let cache = new Map<string, Cached>();
  let busy = false;
  const submit = (): void => {
    const text = input.value.trim();
    if (!text || busy) return;
    input.value = "";
    actions.send(text);
    list.scrollTop = list.scrollHeight;
  };
  send.addEventListener("click", submit);
  stop.addEventListener("click", () => actions.stop());
  clear.addEventListener("click", () => actions.clear());
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });

  function drawMessages(views: ViewMessage[], state: PanelState): void {
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    const next = new Map<string, Cached>();
    const lastAssistant = views.map((v) => v.message.role).lastIndexOf("assistant");
    const idle = !isBusy(state) && views.every((v) => !v.live);
    const els = views.map((view, i) => {
      const ctx: MessageContext = {
        approve: actions.approve,
        deny: actions.deny,
        regenerate: actions.regenerate,
        responded: state.responded,
        canRegenerate: idle && i === lastAssistant && i === views.length - 1,
      };
      const answered = view.message.parts.filter((p) => isToolPart(p) && state.responded[p.toolCallId]).length;
      const sig = `${ctx.canRegenerate}:${answered}`;
      const old = cache.get(view.message.id);
      const el = old && same(old.view, view) && old.sig === sig ? old.el : messageElement(view, ctx, old?.el);
      next.set(view.message.id, { view, sig, el });
      return el;
    });
    cache = next;
    list.replaceChildren(...els);
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  return {
    update(state, meta) {
      busy = isBusy(state);
      const shown = displayStatus(state);
      root.dataset.status = shown;
      name.textContent = meta.agentName || "agent";
      status.textContent = shown === "paused" && meta.pausedAt ? `paused at ${meta.pausedAt}` : STATUS_LABEL[shown] ?? shown;
      const sum = usageTotals(state.transcript);
      totals.textContent = formatTotals(sum);
      totals.title = `${sum.turns} turns with usage: ${sum.turns - sum.estimated - sum.unknown} reported, ${sum.estimated} estimated (≈), ${sum.unknown} unknown (n/a)`;
      dbPath.textContent = meta.dbPath;
      dbPath.title = meta.dbPath;
      input.placeholder = `Message ${meta.agentName || "the agent"} (Enter to send, Shift+Enter for a new line)`;
      banner.textContent = state.error;
      banner.hidden = !state.error;
      send.disabled = busy;
      stop.hidden = !busy;
      drawMessages(visibleMessages(state), state);
      context.update(state.memory);
    },
    destroy() {
      root.remove();
    },
  };
}
