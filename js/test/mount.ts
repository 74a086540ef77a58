/**
 * Mount the panel's widget (initialize + render, as anywidget does) on a `FakeModel`, for the
 * DOM-level tests. `unmountAll` (an `afterEach`) disposes every view and empties the page.
 */
import type { AnyModel, Initialize, Render } from "@anywidget/types";
import { FRAME } from "../src/protocol";
import widget from "../src/widget";
import { FakeModel } from "./fake-model";

export type Traits = Record<string, unknown> & { uid: string };

const mounted: (() => unknown)[] = [];

/** The traits a kernel-side ChatPanel starts with; a test overrides what it needs. */
export function panelTraits(traits: Record<string, unknown> = {}): Traits {
  return {
    uid: Math.random().toString(16).slice(2), agent_name: "default", db_path: "/tmp/.think/nb.sqlite", status: "ready",
    error: "", messages: [], client_tools: [], client_tool_runner: "", annotations: {}, ...traits,
  };
}

/**
 * A rendered panel on a fake model with `traits`. `answerResume`: answer the view's resume probe
 * with `stream_resume_none` (no turn running), as a kernel with nothing streaming does.
 */
export async function mount(traits: Record<string, unknown> = {}, answerResume = true) {
  const model = new FakeModel<Traits>(panelTraits(traits));
  const anyModel = model as unknown as AnyModel<Traits>;
  const signal = new AbortController().signal;
  const init = (await (widget.initialize as unknown as Initialize<Traits>)({ model: anyModel, signal, experimental: {} as never })) as () => void;
  const el = document.createElement("div");
  document.body.append(el);
  const view = (await (widget.render as unknown as Render<Traits>)({ model: anyModel, el, signal, host: {} as never, experimental: {} as never })) as () => void;
  mounted.push(view, init);
  const probeId = (model.sent[0] as { probeId: string }).probeId;
  if (answerResume) model.fromKernel({ type: FRAME.STREAM_RESUME_NONE, probeId });
  const $ = <E extends Element = HTMLElement>(sel: string) => el.querySelector<E>(sel);
  const $$ = (sel: string) => Array.from(el.querySelectorAll<HTMLElement>(sel));
  return { model, el, $, $$, probeId };
}

/** Dispose every mounted view and model (what anywidget does when an output is cleared). */
export function unmountAll(): void {
  mounted.splice(0).forEach((f) => f());
  document.body.replaceChildren();
}
