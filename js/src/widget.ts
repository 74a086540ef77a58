/**
 * The anywidget entry point (AFM) of think_nb's ChatPanel.
 *
 * `initialize({model})` runs once per model, before any custom message is dispatched,
 * so it owns everything that must not miss a frame: the `msg:custom` listener, the
 * trait listeners, and the resume handshake. Its state lives in a Map keyed by the
 * model's `uid` trait, because initialize and render receive different model wrappers
 * (platform-facts §2). `render({model, el})` draws one view of that state; several
 * views of one model share it, and one model runs its client tool calls once (see
 * client-tools.ts for which view of which page runs them).
 */
import type { AnyModel, Initialize, Render } from "@anywidget/types";
import { type ClientToolSpec, pendingCalls, runCall } from "./client-tools";
import {
  FRAME,
  TRIGGER,
  chatClear,
  chatRequestCancel,
  continueRequest,
  parseFrame,
  type SessionState,
  sessionSwitch,
  streamResumeAck,
  streamResumeRequest,
  switchBranch,
  toolApproval,
  toolUndo,
  transcriptRequest,
  useChatRequest,
} from "./protocol";
import { cannotInterrupt, interruptKernel } from "./interrupt";
import { type Annotations, createPanel } from "./render";
import {
  type PanelState,
  activeRequestId,
  disconnected,
  initialState,
  kernelCodeRunning,
  loadingOlder,
  reduce,
  responded,
  setError,
  setMemory,
  setQueued,
  setStatus,
  setWindow,
  submitted,
  undoing,
} from "./state";
import { PAGE, WINDOW } from "./transcript";
import type { UIMessage } from "./ui-message";
import type { UsageTotals } from "./usage";

/** The ChatPanel's synced traits (names: protocol_spec.json `traits`, checked by test/spec.test.ts). */
export interface Traits {
  uid: string;
  agent_name: string;
  db_path: string;
  paused_at: string;
  status: string;
  status_detail: string;
  error: string;
  messages: UIMessage[];
  client_tools: ClientToolSpec[];
  client_tool_runner: string;
  session_state: SessionState | Record<string, never>;
  annotations: Annotations;
  agent_info: { class?: string; model?: string; offline?: boolean };
  /** The Jupyter kernel's id ("" outside one): the panel POSTs /api/kernels/<id>/interrupt to stop run_code. */
  kernel_id: string;
  /** `{rev, more}` of the `messages` window: its revision, and whether older messages precede it. */
  transcript: { rev?: number; more?: boolean; usage?: UsageTotals };
}
type Model = AnyModel<Traits>;

/** Listen to changes of trait `name` (typed: only a trait of `Traits`); returns the unsubscribe. */
function onChange(model: Model, name: keyof Traits, callback: () => void): () => void {
  model.on(`change:${name}`, callback);
  return () => model.off(`change:${name}`, callback);
}

/** One panel model's state, the views that draw it, and the client tool calls it ran. */
class Store {
  state: PanelState;
  readonly listeners = new Set<() => void>();
  readonly ran = new Set<string>();
  /** Send a frame to the kernel; false when it cannot (the kernel is gone). Set by `attach`. */
  post: (frame: unknown) => boolean = () => false;
  constructor(model: Model, probeId: string) {
    const base = setWindow(initialState({
      error: model.get("error") ?? "",
      probeId,
      probePending: true,
    }), model.get("messages") ?? [], model.get("transcript"));
    const state = setMemory(setStatus(base, model.get("status") ?? "ready"), model.get("session_state"));
    this.state = setQueued(state, model.get("annotations")?.queued);
  }
  set(next: PanelState): void {
    if (next === this.state) return;
    this.state = next;
    for (const listener of this.listeners) listener();
  }
}

const STORES = new Map<string, Store>();

/** What a panel whose kernel restarted (or stopped) says, in the place of its status. */
export const KERNEL_RESTARTED = "The kernel restarted — run the cell again. This panel is no longer connected to it.";
export const KERNEL_GONE = "The kernel is gone (restarted or shut down) — run the cell again. This panel could not send.";

function newId(): string {
  const bytes = new Uint8Array(8);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Create the model's store and wire every model event into it; returns the cleanup. */
function attach(model: Model): () => void {
  const uid = model.get("uid");
  const probeId = `view-${newId()}`;
  const store = new Store(model, probeId);
  STORES.set(uid, store);
  const lost = (notice: string): void => store.set(disconnected(store.state, notice));
  // Sends through `store.post`: nothing once the kernel is gone, and a send that throws (JupyterLab's
  // comm is disposed when its kernel restarts or shuts down: "Cannot send") makes the view disconnected.
  store.post = (frame: unknown): boolean => {
    if (store.state.kernelGone) return false;
    try {
      model.send(frame);
      return true;
    } catch (err) {
      console.warn("think_nb: the panel's kernel is gone:", err);
      lost(KERNEL_GONE);
      return false;
    }
  };
  const runClientTools = (): void => {
    if (model.get("client_tool_runner") !== probeId) return;
    const specs = model.get("client_tools") ?? [];
    for (const part of pendingCalls(store.state.transcript, specs, store.ran)) {
      store.ran.add(part.toolCallId);
      const spec = specs.find((s) => `tool-${s.name}` === part.type || s.name === part.toolName) as ClientToolSpec;
      void runCall(part, spec).then((result) => store.post(result));
    }
  };
  const onFrame = (msg: unknown): void => {
    const frame = parseFrame(msg);
    if (!frame) return;
    const resyncing = store.state.resyncing;
    store.set(reduce(store.state, frame));
    if (!resyncing && store.state.resyncing) store.post(transcriptRequest(probeId)); // a patch was missed
    if (frame.type === FRAME.TRANSCRIPT_PATCH || frame.type === FRAME.TRANSCRIPT_PAGE) {
      echoTraits();
      runClientTools();
    }
    if (frame.type === FRAME.STREAM_RESUMING && frame.probeId === probeId) store.post(streamResumeAck(frame.id, probeId));
  };
  let echoing = false;
  const onMessages = (): void => { // the window as the kernel holds it now (the widget's state was read again)
    if (echoing) return;
    store.set(setWindow(store.state, model.get("messages") ?? [], model.get("transcript")));
    runClientTools();
  };
  // The kernel never syncs `messages` after a view opens (patches carry the changes): the model's own copy
  // follows what the view holds, so a notebook saved with its widget state shows the conversation as it is.
  const echoTraits = (): void => {
    const { transcript, rev, more, usage } = store.state;
    const newest = transcript.slice(-WINDOW);
    echoing = true;
    try {
      model.set("messages", newest);
      model.set("transcript", { rev, more: more || newest.length < transcript.length, ...(usage ? { usage } : {}) });
    } finally {
      echoing = false;
    }
  };

  const onStatus = (): void => store.set(setStatus(store.state, model.get("status") ?? "ready"));
  const onError = (): void => store.set(setError(store.state, model.get("error") ?? ""));
  const onAnnotations = (): void => store.set(setQueued(store.state, model.get("annotations")?.queued));
  // The kernel restarted: the widget manager marks every model's comm dead (`comm_live = false`, its
  // `comm_live_update` event, on the session's `restarting` status: a Kernel ▸ Restart or the server
  // restarting a killed kernel). The comm closed from the kernel side (`comm:close`): the same.
  const onCommLive = (): void => lost(KERNEL_RESTARTED);
  model.on("msg:custom", onFrame);
  model.on("comm_live_update", onCommLive);
  model.on("comm:close", onCommLive);
  const unsubscribe = [
    onChange(model, "messages", onMessages),
    onChange(model, "transcript", onMessages),
    onChange(model, "status", onStatus),
    onChange(model, "error", onError),
    onChange(model, "annotations", onAnnotations),
    onChange(model, "client_tool_runner", runClientTools),
    onChange(model, "client_tools", runClientTools),
  ];
  const opened = model.get("transcript");
  store.post(streamResumeRequest(probeId, typeof opened?.rev === "number" ? opened.rev : undefined));
  return () => {
    for (const off of unsubscribe) off();
    model.off("msg:custom", onFrame);
    model.off("comm_live_update", onCommLive);
    model.off("comm:close", onCommLive);
    if (STORES.get(uid) === store) STORES.delete(uid);
  };
}

const initialize: Initialize<Traits> = ({ model }) => attach(model);

const render: Render<Traits> = ({ model, el }) => {
  const detach = STORES.has(model.get("uid")) ? undefined : attach(model); // safety net
  const store = STORES.get(model.get("uid")) as Store;
  const clientId = store.state.probeId;
  const view = createPanel(el, {
    send(text, files = []) {
      const requestId = newId();
      const parts: UIMessage["parts"] = [...(text ? [{ type: "text", text }] : []), ...files];
      const message: UIMessage = { id: `msg-${newId()}`, role: "user", parts };
      if (store.state.kernelGone) return;
      notice = "";
      store.set(submitted(store.state, requestId, message));
      store.post(useChatRequest(requestId, [message], { clientId })); // a failed send marks it unsent
    },
    regenerate() {
      const lastUser = [...store.state.transcript].reverse().find((m) => m.role === "user");
      if (!lastUser) return;
      const requestId = newId();
      if (store.state.kernelGone) return;
      store.set(submitted(store.state, requestId));
      store.post(useChatRequest(requestId, [lastUser], { trigger: TRIGGER.REGENERATE, clientId }));
    },
    approve(toolCallId, input) {
      if (store.post(toolApproval(toolCallId, true, undefined, input))) store.set(responded(store.state, toolCallId));
    },
    undo(toolCallId) {
      if (store.post(toolUndo(toolCallId))) store.set(undoing(store.state, toolCallId));
    },
    deny(toolCallId, reason) {
      if (store.post(toolApproval(toolCallId, false, reason || undefined))) store.set(responded(store.state, toolCallId));
    },
    stop() {
      // the turn the status line names (the one running, not one queued behind it), else this
      // view's request, else the newest the kernel runs (a %%think cell, agent.send)
      const annotations = model.get("annotations");
      const requestId = annotations?.current ?? activeRequestId(store.state) ?? (annotations?.active ?? []).at(-1);
      if (requestId) store.post(chatRequestCancel(requestId)); // read by the kernel once the code ends
      if (!kernelCodeRunning(store.state)) return;
      // the agent's code runs on the kernel's thread: only a kernel interrupt reaches it
      const kernelId = model.get("kernel_id") ?? "";
      const why = cannotInterrupt(kernelId, el.ownerDocument);
      setNotice(why ?? "interrupting the kernel…");
      if (why) return;
      void interruptKernel(kernelId, el.ownerDocument).then((res) => setNotice(res.ok ? "" : res.reason ?? ""));
    },
    clear() {
      store.post(chatClear());
    },
    continueTurn() {
      const requestId = newId();
      if (store.state.kernelGone) return;
      store.set(submitted(store.state, requestId));
      store.post(continueRequest(requestId));
    },
    switchBranch(messageId) {
      store.post(switchBranch(messageId));
    },
    switchSession(id) {
      store.post(sessionSwitch(id));
    },
    loadOlder() {
      const { transcript, more, loadingOlder: asked, resyncing } = store.state;
      if (!more || asked || resyncing || !transcript.length) return;
      if (store.post(transcriptRequest(clientId, transcript[0].id, PAGE))) store.set(loadingOlder(store.state));
    },
  });
  let notice = "";
  function setNotice(text: string): void {
    notice = text;
    draw();
  }
  function draw(): void {
    const info = model.get("agent_info") ?? {};
    view.update(store.state, {
      agentName: model.get("agent_name") ?? "",
      dbPath: model.get("db_path") ?? "",
      pausedAt: model.get("paused_at") ?? "",
      statusDetail: model.get("status_detail") ?? "",
      agentClass: info.class,
      model: info.model,
      offline: info.offline,
      annotations: model.get("annotations") ?? {},
      notice,
    });
  }
  store.listeners.add(draw);
  const unsubscribe = (["agent_name", "db_path", "paused_at", "status_detail", "annotations", "agent_info", "kernel_id"] as const).map((name) =>
    onChange(model, name, draw),
  );
  draw();
  return () => {
    store.listeners.delete(draw);
    for (const off of unsubscribe) off();
    view.destroy();
    detach?.();
  };
};

export default { initialize, render };
