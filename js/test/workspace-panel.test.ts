// @vitest-environment happy-dom
/**
 * Tool activity that takes time, and the `execute` tool: a streaming tool's partial output shows
 * while it runs (with its elapsed time), `execute`'s code is shown highlighted, and a gated call
 * inside the code says where the code is paused in the approval card.
 */
import type { AnyModel, Initialize, Render } from "@anywidget/types";
import { afterEach, describe, expect, it } from "vitest";
import { toolLabel } from "../src/parts";
import { FRAME } from "../src/protocol";
import type { ToolPart } from "../src/ui-message";
import widget from "../src/widget";
import { FakeModel } from "./fake-model";

type Traits = Record<string, unknown> & { uid: string };
const cleanups: (() => unknown)[] = [];
afterEach(() => {
  cleanups.splice(0).forEach((f) => f());
  document.body.replaceChildren();
});

async function mount(traits: Record<string, unknown> = {}) {
  const model = new FakeModel<Traits>({
    uid: Math.random().toString(16).slice(2), agent_name: "default", db_path: "/tmp/.think/nb.sqlite", status: "ready",
    error: "", messages: [], client_tools: [], client_tool_runner: "", annotations: {},
    agent_info: { class: "Coder", model: "m", offline: true }, ...traits,
  });
  const anyModel = model as unknown as AnyModel<Traits>;
  const signal = new AbortController().signal;
  const init = (await (widget.initialize as unknown as Initialize<Traits>)({ model: anyModel, signal, experimental: {} as never })) as () => void;
  const el = document.createElement("div");
  document.body.append(el);
  const view = (await (widget.render as unknown as Render<Traits>)({ model: anyModel, el, signal, host: {} as never, experimental: {} as never })) as () => void;
  cleanups.push(view, init);
  const probeId = (model.sent[0] as { probeId: string }).probeId;
  model.fromKernel({ type: FRAME.STREAM_RESUME_NONE, probeId });
  const $ = <E extends Element = HTMLElement>(sel: string) => el.querySelector<E>(sel);
  return { model, $ };
}

const user = { id: "u1", role: "user", parts: [{ type: "text", text: "Go" }] };
const CODE = "total = 0\nfor i in range(3):\n    total = add(total, i)  # three calls\nprint('sum', total)";

describe("partial output of a streaming tool", () => {
  it("is labelled running with its time while the turn streams, and partial after", () => {
    const part = { type: "tool-countdown", toolCallId: "c", state: "output-available", input: {}, output: { remaining: 2 }, preliminary: true } as ToolPart;
    expect(toolLabel(part, { live: true, elapsedMs: 1500 })).toEqual({ outcome: "running", text: "running… 1.5 s — partial output" });
    expect(toolLabel(part, { live: false })).toEqual({ outcome: "no-result", text: "partial output only" });
  });

  it("shows the latest partial output in the card, then the final one", async () => {
    const { model, $ } = await mount({ messages: [user] });
    model.fromKernel({
      type: FRAME.USE_CHAT_RESPONSE, id: "r1", done: false,
      chunks: [{ type: "start", messageId: "a1" }, { type: "tool-input-available", toolCallId: "c1", toolName: "countdown", input: { n: 2 } },
        { type: "tool-output-available", toolCallId: "c1", output: { remaining: 2 }, preliminary: true }],
    });
    expect($(".think-tool")?.dataset.outcome).toBe("running");
    expect($(".think-tool .think-tool-badge")?.textContent).toMatch(/^running… \d+\.\d s — partial output$/);
    expect($(".think-tool-output .think-tool-label")?.textContent).toBe("partial output");
    expect($(".think-tool-output pre")?.textContent).toContain('"remaining": 2');
    model.fromKernel({
      type: FRAME.USE_CHAT_RESPONSE, id: "r1", done: false,
      chunks: [{ type: "tool-output-available", toolCallId: "c1", output: { done: true } }],
    });
    expect($(".think-tool")?.dataset.outcome).toBe("done");
    expect($(".think-tool-output .think-tool-label")?.textContent).toBe("output");
    expect($(".think-tool-output pre")?.textContent).toContain('"done": true');
  });
});

describe("the execute tool's card", () => {
  it("shows the code highlighted and, when paused for approval, the call it waits at", async () => {
    const parts = [{
      type: "tool-execute", toolCallId: "c1", state: "approval-requested", input: { code: CODE },
      approval: { id: "a1", descriptor: { kind: "execute", code: CODE, call: { tool: "delete_file", input: { path: "/x" } }, stdout: "sum 3\n" } },
    }];
    const { $ } = await mount({ status: "awaiting-approval", messages: [user, { id: "a1", role: "assistant", parts }] });
    const code = $(".think-tool-input pre.think-code code.hljs")!;
    expect(code.textContent).toBe(CODE);
    expect(code.querySelector(".hljs-keyword")?.textContent).toBe("for");
    expect(code.querySelector(".hljs-comment")?.textContent).toBe("# three calls");
    expect(code.querySelector("script")).toBeNull();
    expect($(".think-approval-call")?.textContent).toBe('The code is paused at delete_file({"path":"/x"})');
    expect($(".think-approval .think-tool-output pre")?.textContent).toBe("sum 3\n");
    expect($("button.think-approve")).not.toBeNull();
  });

  it("escapes markup in the code", async () => {
    const parts = [{ type: "tool-execute", toolCallId: "c1", state: "output-available", input: { code: "'<img src=x onerror=alert(1)>'" }, output: 1 }];
    const { $ } = await mount({ messages: [user, { id: "a1", role: "assistant", parts }] });
    expect($(".think-code img")).toBeNull();
    expect($(".think-code")?.textContent).toBe("'<img src=x onerror=alert(1)>'");
  });
});
