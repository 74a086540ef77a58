// @vitest-environment happy-dom
/**
 * An action's approval card (issue 30): the `tool-approval-request` of an `approval-gated` action
 * carries Think's approval descriptor, kept on the part's `approval.descriptor`; the card shows its
 * risk and summary beside Approve / Deny. A tool's card without a descriptor shows neither.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FRAME } from "../src/protocol";
import { mount as mountPanel, unmountAll } from "./mount";

afterEach(unmountAll);

const mount = (traits: Record<string, unknown> = {}) =>
  mountPanel({ agent_info: { class: "Shop", model: "m", offline: true }, ...traits });

const user = { id: "u1", role: "user", parts: [{ type: "text", text: "Refund order 7" }] };
const descriptor = {
  requestId: "r1", toolCallId: "c1", action: "refund", summary: "Refund order 7 to the card it was paid with",
  input: { order_id: "7" }, permissions: ["orders:refund"], risk: "high", kind: "approval-gated",
};

describe("an action's approval card", () => {
  it("shows the descriptor's risk and summary when the request streams in", async () => {
    const { model, $ } = await mount({ messages: [user] });
    model.fromKernel({
      type: FRAME.USE_CHAT_RESPONSE, id: "r1", done: false,
      chunks: [{ type: "start", messageId: "a1" }, { type: "tool-input-available", toolCallId: "c1", toolName: "refund", input: { order_id: "7" } },
        { type: "tool-approval-request", approvalId: "ap1", toolCallId: "c1", approvalDescriptor: descriptor }],
    });
    expect($(".think-approval .think-approval-label")?.textContent).toBe("Run refund?");
    const risk = $(".think-approval .think-approval-risk");
    expect(risk?.textContent).toBe("high risk");
    expect(risk?.dataset.risk).toBe("high");
    expect($(".think-approval .think-approval-summary")?.textContent).toBe("Refund order 7 to the card it was paid with");
    expect($("button.think-approve")).not.toBeNull();
  });

  it("shows them from a stored part too, and nothing for a plain gated tool or an unknown risk", async () => {
    const stored = { type: "tool-refund", toolCallId: "c1", state: "approval-requested", input: { order_id: "7" }, approval: { id: "ap1", descriptor: { ...descriptor, risk: "extreme" } } };
    const plain = { type: "tool-delete_file", toolCallId: "c2", state: "approval-requested", input: { path: "/x" }, approval: { id: "ap2" } };
    const { $$ } = await mount({ status: "awaiting-approval", messages: [user, { id: "a1", role: "assistant", parts: [stored, plain] }] });
    const cards = $$(".think-approval");
    expect(cards.length).toBe(2);
    expect(cards[0].querySelector(".think-approval-summary")?.textContent).toBe(descriptor.summary);
    expect(cards[0].querySelector(".think-approval-risk")).toBeNull();
    expect(cards[1].querySelector(".think-approval-summary")).toBeNull();
    expect(cards[1].querySelector(".think-approval-risk")).toBeNull();
  });
});
