/**
 * The panel's DOM: header (agent name, status, SQLite path, Clear), error banner,
 * message list, and composer (textarea, Send, Stop).
 *
 * `createPanel(el, actions)` builds it once; `update(state, meta)` redraws from a
 * PanelState, reusing the element of every message whose object did not change (the
 * reducer replaces only what changed), and keeps the list scrolled to the bottom while
 * the user is there. User input goes out through `actions`; this module sends nothing.
 */
import { messageElement } from "./parts";
import { type PanelState, type ViewMessage, isBusy, visibleMessages } from "./state";
import { CSS } from "./styles";

export interface PanelActions {
  send(text: string): void;
  stop(): void;
  clear(): void;
}

export interface PanelMeta {
  agentName: string;
  dbPath: string;
}

export interface PanelView {
  update(state: PanelState, meta: PanelMeta): void;
  destroy(): void;
}

interface Cached {
  view: ViewMessage;
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
  const dbPath = h("code", "think-db-path");
  const clear = h("button", "think-clear", "Clear");
  header.append(name, status, dbPath, clear);
  const banner = h("div", "think-error");
  banner.setAttribute("role", "alert");
  const list = h("div", "think-messages");
  const composer = h("div", "think-composer");
  const input = h("textarea", "think-input");
  input.rows = 2;
  const send = h("button", "think-send", "Send");
  const stop = h("button", "think-stop", "Stop");
  composer.append(input, send, stop);
  root.append(style, header, banner, list, composer);
  el.append(root);

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

  function drawMessages(views: ViewMessage[]): void {
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    const next = new Map<string, Cached>();
    const els = views.map((view) => {
      const old = cache.get(view.message.id);
      const el = old && same(old.view, view) ? old.el : messageElement(view, old?.el);
      next.set(view.message.id, { view, el });
      return el;
    });
    cache = next;
    list.replaceChildren(...els);
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  return {
    update(state, meta) {
      busy = isBusy(state);
      root.dataset.status = state.status;
      name.textContent = meta.agentName || "agent";
      status.textContent = state.status;
      dbPath.textContent = meta.dbPath;
      dbPath.title = meta.dbPath;
      input.placeholder = `Message ${meta.agentName || "the agent"} (Enter to send, Shift+Enter for a new line)`;
      banner.textContent = state.error;
      banner.hidden = !state.error;
      send.disabled = busy;
      stop.hidden = !busy;
      drawMessages(visibleMessages(state));
    },
    destroy() {
      root.remove();
    },
  };
}
