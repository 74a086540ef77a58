/**
 * The anywidget entry point (AFM) of think_nb's ChatPanel.
 *
 * `initialize({model})` runs once per model, before any custom message is dispatched,
 * so it owns everything that must not miss a frame: the `msg:custom` listener, the
 * trait listeners, and the resume handshake. Its state lives in a Map keyed by the
 * model's `uid` trait, because initialize and render receive different model wrappers
 * (platform-facts §2). `render({model, el})` draws one view of that state; several
 * views of one model share it.
 */
import type { AnyModel, Initialize, Render } from "@anywidget/types";
import {
  chatClear,
  chatRequestCancel,
  parseFrame,
  streamResumeRequest,
  useChatRequest,
} from "./protocol";
import { createPanel } from "./render";
import {
  type PanelState,
  activeRequestId,
  initialState,
  reduce,
  setError,
  setStatus,
  setTranscript,
  submitted,
} from "./state";
import type { UIMessage } from "./ui-message";

interface Traits {
  uid: string;
  agent_name: string;
  db_path: string;
  status: string;
  error: string;
  messages: UIMessage[];
}
type Model = AnyModel<Traits>;

/** One panel model's state and the views that draw it. */
class Store {
  state: PanelState;
  readonly listeners = new Set<() => void>();
  constructor(model: Model) {
    const base = initialState({ transcript: model.get("messages") ?? [], error: model.get("error") ?? "" });
    this.state = setStatus(base, model.get("status") ?? "ready");
  }
  set(next: PanelState): void {
    if (next === this.state) return;
    this.state = next;
    for (const listener of this.listeners) listener();
  }
}

const STORES = new Map<string, Store>();

function newId(): string {
  const bytes = new Uint8Array(8);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Create the model's store and wire every model event into it; returns the cleanup. */
function attach(model: Model): () => void {
  const uid = model.get("uid");
  const store = new Store(model);
  STORES.set(uid, store);
  const onFrame = (msg: unknown): void => {
    const frame = parseFrame(msg);
    if (frame) store.set(reduce(store.state, frame));
  };
  const onMessages = (): void => store.set(setTranscript(store.state, model.get("messages") ?? []));
  const onStatus = (): void => store.set(setStatus(store.state, model.get("status") ?? "ready"));
  const onError = (): void => store.set(setError(store.state, model.get("error") ?? ""));
  model.on("msg:custom", onFrame);
  model.on("change:messages", onMessages);
  model.on("change:status", onStatus);
  model.on("change:error", onError);
  model.send(streamResumeRequest());
  return () => {
    model.off("msg:custom", onFrame);
    model.off("change:messages", onMessages);
    model.off("change:status", onStatus);
    model.off("change:error", onError);
    if (STORES.get(uid) === store) STORES.delete(uid);
  };
}

const initialize: Initialize<Traits> = ({ model }) => attach(model);

const render: Render<Traits> = ({ model, el }) => {
  const detach = STORES.has(model.get("uid")) ? undefined : attach(model); // safety net
  const store = STORES.get(model.get("uid")) as Store;
  const view = createPanel(el, {
    send(text) {
      const requestId = newId();
      const message: UIMessage = { id: `msg-${newId()}`, role: "user", parts: [{ type: "text", text }] };
      store.set(submitted(store.state, requestId, message));
      model.send(useChatRequest(requestId, [message]));
    },
    stop() {
      const requestId = activeRequestId(store.state);
      if (requestId) model.send(chatRequestCancel(requestId));
    },
    clear() {
      model.send(chatClear());
    },
  });
  const draw = (): void =>
    view.update(store.state, { agentName: model.get("agent_name") ?? "", dbPath: model.get("db_path") ?? "" });
  store.listeners.add(draw);
  model.on("change:agent_name", draw);
  model.on("change:db_path", draw);
  draw();
  return () => {
    store.listeners.delete(draw);
    model.off("change:agent_name", draw);
    model.off("change:db_path", draw);
    view.destroy();
    detach?.();
  };
};

export default { initialize, render };
