// @vitest-environment happy-dom
/**
 * Tool activity that takes time, and the `execute` tool: a streaming tool's partial output shows
 * while it runs (with its elapsed time), `execute`'s code is shown highlighted, and a gated call
 * inside the code says where the code is paused in the approval card.
 */
import { afterEach, describe, expect, it } from "vitest";
import { toolLabel } from "../src/parts";
import { FRAME } from "../src/protocol";
import type { ToolPart } from "../src/ui-message";
import { mount as mountPanel, unmountAll } from "./mount";

afterEach(unmountAll);

const mount = (traits: Record<string, unknown> = {}) =>
  mountPanel({ agent_info: { class: "Coder", model: "m", offline: true }, ...traits });

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
