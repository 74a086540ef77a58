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
import { INTERRUPTED_NOTE, type MessageContext, type ToolDecision, type Versions, messageElement, reconcile, seconds } from "./parts";
import { type PanelState, type Shown, type ViewMessage, displayStatus, errorSaidUnder, isBusy, mcpToolServers, visibleMessages } from "./state";
import { formatTotals, usageTotals } from "./usage";
import { isToolPart } from "./ui-message";
import { CSS } from "./styles";
import { createContextTab } from "./context-tab";
import { type FilePart, attachmentTray } from "./media";

export interface PanelActions {
  /** Send a user message: its text and the attachments pasted or dropped into the composer (media.ts). */
  send(text: string, files?: FilePart[]): void;
  stop(): void;
  clear(): void;
  regenerate(): void;
  approve(toolCallId: string, input?: Record<string, unknown>): void;
  deny(toolCallId: string, reason: string): void;
  /** Put back what a `run_code` call changed (its card's Undo). */
  undo?(toolCallId: string): void;
  switchSession(id: string): void;
  continueTurn(): void;
  switchBranch(messageId: string): void;
  /** Fetch the messages before the oldest one shown (the list was scrolled to its top, or the button). */
  loadOlder?(): void;
}

/** What the kernel sends beside the transcript (the `annotations` trait, `ViewHub.annotations()`). */
export interface Annotations {
  finish?: Record<string, string>;
  tools?: Record<string, ToolDecision>;
  branches?: Record<string, Versions>;
  active?: string[];
  /** The turn the status line describes and Stop cancels (`think_nb.panel.status.current_turn`). */
  current?: string | null;
  /** User messages of turns accepted and not started yet, in run order (`state.ts` `setQueued`). */
  queued?: { requestId: string; message: unknown }[];
}

/** How a status reads in the status line, where it is not the status itself. */
export const STATUS_LABEL: Partial<Record<Shown, string>> = {
  "awaiting-approval": "awaiting approval",
  "awaiting-client-tool": "awaiting client tool",
  pending: "queued",
  recovering: "recovering an interrupted turn",
};

/** What each status means (the status line's tooltip). */
export const STATUS_HINT: Record<Shown, string> = {
  ready: "idle: send a message",
  submitted: "sent; waiting for the model's first token (a first turn may load litellm or the local model first). Stop cancels it.",
  streaming: "the reply is streaming; Stop keeps what arrived",
  "awaiting-approval": "a tool call waits for your Approve or Deny",
  "awaiting-client-tool": "a tool call waits for this browser to run it",
  paused: "a step-mode turn waits at a hook: call stepper.next() in a cell",
  error: "the last turn failed; the error is shown above",
  pending: "accepted and queued behind another turn (or waiting out the debounce window); Stop cancels it",
  recovering: "a turn a dead kernel left unfinished is being recovered",
  disconnected: "this panel's kernel restarted or stopped: run the cell again for a live panel on the stored conversation",
};

export interface PanelMeta {
  agentName: string;
  dbPath: string;
  pausedAt?: string;
  /** What the running turn waits for ("loading litellm…", "1 queued"; the `status_detail` trait). */
  statusDetail?: string;
  /** The agent's class (header "Tutor · default"). */
  agentClass?: string;
  /** The model string, and whether it runs in the kernel (the empty panel says so). */
  model?: string;
  offline?: boolean;
  annotations?: Annotations;
  /** A note under the composer (`.think-notice`): e.g. Stop could not interrupt the kernel. */
  notice?: string;
}

/** `/very/long/…/path/file.sqlite`: the middle of `text` cut to keep `max` characters. */
export function truncateMiddle(text: string, max = 40): string {
  if (text.length <= max) return text;
  const keep = max - 1;
  const tail = Math.ceil(keep * 0.6);
  return `${text.slice(0, keep - tail)}…${text.slice(text.length - tail)}`;
}

/** Width (px) of one character of `el`'s monospace font: about 0.6 em (DejaVu Sans Mono: 0.602). */
function monoCharWidth(el: HTMLElement): number {
  return (parseFloat(getComputedStyle(el).fontSize) || 11) * 0.62;
}

/** The empty panel's hint: which model answers, and what that means. */
export function emptyHint(meta: PanelMeta): string {
  const who = meta.agentClass ? `${meta.agentClass} · ${meta.agentName}` : meta.agentName || "This agent";
  if (!meta.model) return `${who}: type a message below.`;
  if (meta.offline && meta.model.startsWith("think-scripted/")) {
    return `${who} runs on a test model (${meta.model}), in this kernel: its replies are the ones its script or function gives.`;
  }
  if (meta.offline) {
    return `${who} runs on ${meta.model}, in this kernel and offline: it shows how turns, tools and hooks work, ` +
      'not good answers. Override get_model() (or set agent.default_model = "openai/gpt-4o-mini") for a hosted model.';
  }
  return `${who} runs on ${meta.model}: messages are sent to that provider (its API key must be set).`;
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

/** The field being typed into inside `list` (one that carries a `data-focus-key`), with its caret. */
interface FocusedField {
  el: HTMLInputElement | HTMLTextAreaElement;
  key: string;
  start: number | null;
  end: number | null;
  scrollTop: number;
}

function focusedField(list: HTMLElement): FocusedField | null {
  const el = list.ownerDocument.activeElement;
  const field = el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement;
  if (!field || !el.dataset.focusKey || !list.contains(el)) return null;
  return { el, key: el.dataset.focusKey, start: el.selectionStart, end: el.selectionEnd, scrollTop: el.scrollTop };
}

/** A rebuilt card replaced the field the user was typing into (a deny reason, a `run_code` card's
 * code being edited, while the transcript or the annotations update): the new field takes the
 * focus, the caret and the scroll position, so no keystroke is lost. */
function refocus(list: HTMLElement, was: FocusedField | null): void {
  if (!was || was.el.isConnected) return;
  const now = Array.from(list.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>("input[data-focus-key], textarea[data-focus-key]"))
    .find((el) => el.dataset.focusKey === was.key);
  if (!now || now.disabled) return;
  now.focus();
  if (was.start !== null && was.end !== null) now.setSelectionRange(was.start, was.end);
  now.scrollTop = was.scrollTop;
}

/**
 * Keys pressed inside the panel stay inside it (issue 27 §1): JupyterLab and Notebook 7 route every
 * keydown through Lumino's command registry (Shift+Enter runs the cell, `a`/`b`/`d d` insert or
 * delete cells in command mode, Escape and the arrows move between cells). Two guards, as ipywidgets'
 * text widgets and JupyterLab's own shortcut editor do:
 * - `data-lm-suppress-shortcuts` on the root: Lumino's key matching stops walking up at an element
 *   carrying it, so no notebook binding matches a key whose target is inside the panel (this holds
 *   for a document listener in the capture phase too: Notebook 7 starts Lumino without bubbling keydown);
 * - keydown, keypress and keyup stop propagating at the root (JupyterLab listens in the bubble phase),
 *   after the panel's own handlers (on the textarea and inputs) have run.
 * The browser's own handling (typing, a new line, Tab's focus move, copy and paste) is untouched.
 * One key is let out on purpose: Accel+S saves the notebook (`isSaveKey`).
 */
export function keepKeysInside(root: HTMLElement): void {
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  root.addEventListener("keydown", (e) => forwardSave(root, e));
  for (const type of ["keydown", "keypress", "keyup"] as const) {
    root.addEventListener(type, (e) => e.stopPropagation());
  }
}

/** Accel+S (Ctrl, or Cmd on a Mac; with Shift: save as) in the panel still saves the notebook, as
 * everywhere else in JupyterLab and Notebook 7, instead of opening the browser's "Save page as": the
 * key is replayed from the panel's parent, outside the shortcut guard, where the application's
 * keymap hears it (Lumino listens on the document and matches by the key's `keyCode`). */
export function isSaveKey(e: KeyboardEvent): boolean {
  return (e.ctrlKey || e.metaKey) && !e.altKey && (e.code === "KeyS" || e.key.toLowerCase() === "s");
}

function forwardSave(root: HTMLElement, e: KeyboardEvent): void {
  if (!isSaveKey(e) || !root.parentElement) return;
  e.preventDefault();
  const { key, code, ctrlKey, metaKey, shiftKey, altKey } = e;
  // Lumino's keymap reads the legacy keyCode, which a constructed event only has when given
  const init = { key, code: code || "KeyS", keyCode: e.keyCode || 83, ctrlKey, metaKey, shiftKey, altKey };
  root.parentElement.dispatchEvent(new KeyboardEvent("keydown", { ...init, bubbles: true, cancelable: true }));
}

/** A message the kernel never confirmed stored (`ViewMessage.unsent`) says so under its text, with
 * why the agent refused it when it did (`ViewMessage.refused`; the banner does not repeat it). It stays
 * where it was typed, as a chat app leaves a message that failed to send: its place in the conversation
 * and its text (to copy) are kept, and the note says plainly that the agent never got it. */
function markUnsent(el: HTMLElement, view: ViewMessage): HTMLElement {
  if (!view.unsent) return el;
  el.dataset.unsent = "true";
  const why = view.refused !== undefined ? `not sent: ${view.refused}` : "not sent: the kernel went away before it stored this message";
  el.append(h("div", "think-unsent", why));
  return el;
}

/** A message whose turn waits behind another (`ViewMessage.queued`) says so under its text. */
function markQueued(el: HTMLElement, view: ViewMessage): HTMLElement {
  if (!view.queued) return el;
  el.dataset.queued = "true";
  el.append(h("div", "think-queued", "queued: runs when the turn before it ends"));
  return el;
}

export function createPanel(el: HTMLElement, actions: PanelActions): PanelView {
  const root = h("div", "think-panel");
  keepKeysInside(root);
  const style = document.createElement("style");
  style.textContent = CSS;
  const header = h("div", "think-header");
  const name = h("span", "think-agent-name");
  const status = h("span", "think-status");
  status.setAttribute("role", "status");
  const totals = h("span", "think-totals");
  const dbPath = h("code", "think-db-path");
  let dbFull = "";
  // The path takes the header's free width (CSS flex 1 1 0) and is cut in the middle to fit it.
  const fitDbPath = (): void => {
    const width = dbPath.clientWidth;
    const chars = width > 0 ? Math.max(5, Math.floor(width / monoCharWidth(dbPath))) : 40;
    const text = truncateMiddle(dbFull, chars);
    if (dbPath.textContent !== text) dbPath.textContent = text;
  };
  const resized = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(fitDbPath);
  resized?.observe(dbPath);
  const clear = h("button", "think-clear", "Clear");
  const confirm = h("span", "think-clear-confirm");
  confirm.setAttribute("role", "alertdialog");
  const confirmYes = h("button", "think-clear-yes", "Clear");
  const confirmNo = h("button", "think-clear-no", "Cancel");
  confirm.append(h("span", "think-clear-question", "Clear the whole conversation?"), confirmYes, confirmNo);
  confirm.hidden = true;
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
  header.append(name, tabs, status, totals, dbPath, clear, confirm);
  const gone = h("div", "think-disconnected");
  gone.setAttribute("role", "alert");
  const banner = h("div", "think-error");
  banner.setAttribute("role", "alert");
  const list = h("div", "think-messages");
  const empty = h("div", "think-empty");
  const older = h("button", "think-older", "Show older messages");
  older.addEventListener("click", () => actions.loadOlder?.());
  const composer = h("div", "think-composer");
  const input = h("textarea", "think-input");
  input.rows = 2;
  const send = h("button", "think-send", "Send");
  const stop = h("button", "think-stop", "Stop");
  // a pasted or dropped image (or PDF, text file) waits in the tray above the box until Send (media.ts)
  const attachNote = h("div", "think-attach-note");
  attachNote.setAttribute("role", "alert");
  attachNote.hidden = true;
  const showAttachNote = (note: string): void => {
    attachNote.textContent = note;
    attachNote.hidden = !note;
  };
  let offline = false; // the kernel is gone: nothing can be sent
  const tray = attachmentTray(composer, showAttachNote, () => !offline);
  composer.append(tray.el, input, send, stop);
  const notice = h("div", "think-notice");
  notice.setAttribute("role", "status");
  notice.hidden = true;
  const context = createContextTab({ switchSession: (id) => actions.switchSession(id) });
  root.append(style, header, gone, banner, list, composer, attachNote, notice, context.el);
  el.append(root);
  function showTab(tab: "chat" | "context"): void {
    root.dataset.tab = tab;
    for (const b of tabButtons) b.setAttribute("aria-selected", String(b.dataset.tab === tab));
    list.hidden = composer.hidden = tab !== "chat";
    attachNote.hidden = tab !== "chat" || !attachNote.textContent;
    notice.hidden = tab !== "chat" || !notice.textContent;
    context.el.hidden = tab !== "context";
  }
  showTab("chat");

  let cache = new Map<string, Cached>();
  let busy = false;
  // the live "running… 3.2 s" of tool cards (a badge with data-started is a call that runs)
  const ticker = setInterval(() => {
    for (const badge of list.querySelectorAll<HTMLElement>(".think-tool-badge[data-started]")) {
      badge.textContent = `running… ${seconds(Date.now() - Number(badge.dataset.started))}${badge.dataset.suffix ?? ""}`;
    }
  }, 200);
  const submit = (): void => {
    const text = input.value.trim();
    if ((!text && !tray.count) || busy || offline) return;
    input.value = "";
    showAttachNote("");
    const files = tray.take();
    if (files.length) actions.send(text, files);
    else actions.send(text);
    atBottom = true;
    list.scrollTop = list.scrollHeight;
  };
  send.addEventListener("click", submit);
  stop.addEventListener("click", () => actions.stop());
  const askClear = (ask: boolean): void => {
    confirm.hidden = !ask;
    clear.hidden = ask;
  };
  clear.addEventListener("click", () => askClear(true));
  confirmNo.addEventListener("click", () => askClear(false));
  confirmYes.addEventListener("click", () => {
    askClear(false);
    actions.clear();
  });
  input.addEventListener("beforeinput", (e) => {
    if (offline) e.preventDefault(); // the kernel is gone: nothing typed or pasted lands in the box
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });

  // Kept scrolled to the bottom while the user is there: whether they are is read on scroll events,
  // and the list is pinned once per animation frame, so a frame of a streamed reply forces no layout.
  let atBottom = true;
  let pinning = 0;
  let hasOlder = false;
  list.addEventListener("scroll", () => {
    atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    if (hasOlder && list.scrollTop < 80) actions.loadOlder?.(); // near the top: fetch the page before it
  }, { passive: true });
  const nextFrame = typeof requestAnimationFrame === "function" ? requestAnimationFrame : (cb: () => void) => setTimeout(cb, 16);
  const pinToBottom = (): void => {
    if (pinning || !atBottom) return;
    pinning = nextFrame(() => {
      pinning = 0;
      if (atBottom) list.scrollTop = list.scrollHeight;
    }) as number;
  };

  function drawMessages(views: ViewMessage[], state: PanelState, meta: PanelMeta): void {
    const focused = focusedField(list);
    const next = new Map<string, Cached>();
    const lastAssistant = views.map((v) => v.message.role).lastIndexOf("assistant");
    const approvalPending = state.status === "awaiting-approval" ||
      views.some((v) => v.message.parts.some((p) => isToolPart(p) && p.state === "approval-requested"));
    const idle = !isBusy(state) && views.every((v) => !v.live);
    const notes = meta.annotations ?? {};
    const servers = mcpToolServers(state.mcp);
    const serversSig = Object.entries(servers).map(([t, s]) => `${t}=${s}`).join(",");
    const els = views.map((view, i) => {
      const id = view.message.id;
      const last = idle && i === lastAssistant && i === views.length - 1;
      const ctx: MessageContext = {
        approve: actions.approve,
        deny: actions.deny,
        undo: offline ? undefined : actions.undo, // Undo's button is disabled without it
        undoSent: state.undoing,
        regenerate: actions.regenerate,
        responded: state.responded,
        canRegenerate: last && !approvalPending,
        decisions: notes.tools,
        finishReason: notes.finish?.[id],
        canContinue: last && !approvalPending,
        continueTurn: actions.continueTurn,
        versions: notes.branches?.[id],
        canSwitch: idle,
        switchBranch: actions.switchBranch,
        toolServers: servers,
        offline,
      };
      const answered = view.message.parts.filter((p) => isToolPart(p) && state.responded[p.toolCallId]).length;
      const decided = view.message.parts.filter((p) => isToolPart(p) && notes.tools?.[p.toolCallId]).length;
      const v = ctx.versions;
      const undoing = view.message.parts.filter((p) => isToolPart(p) && state.undoing[p.toolCallId]).length;
      const sig = `${view.unsent ? `unsent:${view.refused ?? ""}:` : ""}${view.queued ? "queued:" : ""}${view.stopped ? "stopped:" : ""}${serversSig}:${offline}:${ctx.canRegenerate}:${answered}:${undoing}:${decided}:${ctx.finishReason ?? ""}:${idle}:${v ? `${v.index}/${v.count}` : ""}`;
      const old = cache.get(view.message.id);
      const el = old && same(old.view, view) && old.sig === sig ? old.el : markQueued(markUnsent(messageElement(view, ctx, old?.el), view), view);
      next.set(view.message.id, { view, sig, el });
      return el;
    });
    cache = next;
    empty.textContent = emptyHint(meta);
    hasOlder = state.more;
    older.disabled = state.loadingOlder;
    older.textContent = state.loadingOlder ? "Loading older messages…" : "Show older messages";
    const first = els.length && !atBottom ? list.querySelector<HTMLElement>(":scope > .think-message") : null;
    const top = first && els[0] !== first ? first.offsetTop : null; // older ones may come in above it
    reconcile(list, els.length ? (state.more ? [older, ...els] : els) : [empty]); // unchanged messages stay in place (and laid out)
    if (first && top !== null && first.isConnected) list.scrollTop += first.offsetTop - top; // the reader's place stays put
    refocus(list, focused);
    pinToBottom();
  }

  return {
    update(state, meta) {
      busy = isBusy(state);
      const shown = displayStatus(state);
      root.dataset.status = shown;
      name.textContent = meta.agentClass ? `${meta.agentClass} · ${meta.agentName || "default"}` : meta.agentName || "agent";
      name.title = [meta.model ? `class ${meta.agentClass ?? "?"}, name ${meta.agentName}, model ${meta.model}` : "",
        meta.dbPath].filter(Boolean).join("\n"); // the path's own element is hidden in a narrow panel
      const label = shown === "paused" && meta.pausedAt ? `paused at ${meta.pausedAt}` : STATUS_LABEL[shown] ?? shown;
      const detail = busy || shown === "pending" ? meta.statusDetail ?? "" : "";
      status.textContent = detail ? `${label} · ${detail}` : label;
      status.dataset.detail = detail;
      status.title = detail ? `${detail}: ${STATUS_HINT[shown] ?? ""}` : STATUS_HINT[shown] ?? "";
      const sum = state.more && state.usage ? state.usage : usageTotals(state.transcript); // the kernel's, over what is not held
      totals.textContent = formatTotals(sum);
      totals.title = `input + output tokens of every turn on this branch, and their cost. ${sum.turns} turns with usage: ${sum.turns - sum.unknown} reported by the provider, ${sum.unknown} unknown (not counted)`;
      if (dbFull !== meta.dbPath) {
        dbFull = meta.dbPath;
        fitDbPath(); // reads the path's width (a layout): only when it changes, else on resize
      }
      dbPath.title = meta.dbPath;
      offline = Boolean(state.kernelGone);
      root.dataset.kernel = offline ? "gone" : "live";
      gone.textContent = state.kernelGone;
      gone.hidden = !offline;
      banner.textContent = state.error;
      // an interruption is said under the interrupted reply itself (metadata.interrupted), not twice
      // and a refusal under the refused message
      banner.hidden = !state.error || offline || state.error === INTERRUPTED_NOTE || errorSaidUnder(state);
      // Neither disabled nor read-only: a disabled box takes no focus, and Notebook 7 treats a click on a
      // read-only one as a click outside any editor; either way the keyboard went to the notebook and the
      // typed keys ran as command-mode shortcuts (inserting cells). The box keeps focus, and with it the
      // panel's key guard (`keepKeysInside`); what is typed is refused (`beforeinput`) and Enter sends nothing.
      input.setAttribute("aria-disabled", String(offline));
      input.placeholder = offline ? "The kernel restarted — run the cell again"
        : `Message ${meta.agentClass || meta.agentName || "the agent"} (Enter to send, Shift+Enter for a new line)`;
      send.disabled = busy || offline;
      clear.disabled = offline;
      stop.hidden = !busy;
      notice.textContent = meta.notice ?? "";
      notice.hidden = root.dataset.tab !== "chat" || !meta.notice;
      drawMessages(visibleMessages(state), state, meta);
      context.update(state.memory);
      context.updateMcp(state.mcp);
    },
    destroy() {
      clearInterval(ticker);
      resized?.disconnect();
      root.remove();
    },
  };
}
