// @vitest-environment happy-dom
/**
 * What a teacher reads in the panel: tool cards in words (running / done / failed / blocked /
 * substituted / waiting / approved / denied, the raw state in the tooltip), a reply cut at its
 * token limit with Continue, a stopped reply, the versions of a regenerated reply, the header and
 * the empty panel, and Stop for a turn started outside the panel.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FRAME } from "../src/protocol";
import { INTERRUPTED_NOTE, toolLabel } from "../src/parts";
import { emptyHint, truncateMiddle } from "../src/render";
import type { ToolPart } from "../src/ui-message";
import { mount as mountPanel, unmountAll } from "./mount";

afterEach(unmountAll);

const mount = (traits: Record<string, unknown> = {}) => mountPanel({
  db_path: "/home/teacher/courses/agents-101/week-3/.think/tools_and_approval.sqlite",
  agent_info: { class: "Tutor", model: "think-local/smollm2-135m-instruct", offline: true },
  ...traits,
});

const user = { id: "u1", role: "user", parts: [{ type: "text", text: "Go" }] };
const call = (id: string, state: string, extra: Record<string, unknown> = {}): ToolPart =>
  ({ type: "tool-delete_file", toolCallId: id, state, input: { path: "x" }, ...extra }) as ToolPart;

describe("tool card words", () => {
  it("say what happened, not the state name", () => {
    expect(toolLabel(call("c", "input-available"), { live: true, elapsedMs: 3210 })).toEqual({ outcome: "running", text: "running… 3.2 s" });
    expect(toolLabel(call("c", "input-available"), { live: false }).outcome).toBe("no-result");
    expect(toolLabel(call("c", "output-available", { output: 1 }))).toEqual({ outcome: "done", text: "done" });
    expect(toolLabel(call("c", "output-error", { errorText: "boom" }))).toEqual({ outcome: "failed", text: "failed" });
    expect(toolLabel(call("c", "output-available", { output: "no deletes today" }), { live: false, decision: { action: "block", reason: "no deletes today" } }))
      .toEqual({ outcome: "blocked", text: "blocked by before_tool_call: no deletes today" });
    expect(toolLabel(call("c", "output-available", { output: 42 }), { live: false, decision: { action: "substitute" } }))
      .toEqual({ outcome: "substituted", text: "substituted" });
    expect(toolLabel(call("c", "approval-requested"), { live: false, pending: [1, 2] }))
      .toEqual({ outcome: "waiting", text: "waiting for your approval (1 of 2)" });
    expect(toolLabel(call("c", "approval-requested"), { live: false, pending: [1, 1] }).text).toBe("waiting for your approval");
    expect(toolLabel(call("c", "approval-responded", { approval: { id: "a", approved: true } })))
      .toEqual({ outcome: "approved", text: "approved — running" });
    expect(toolLabel(call("c", "approval-responded", { approval: { id: "a", approved: true } }), { live: false, othersWaiting: true }).text)
      .toBe("approved — runs when the others are answered");
    expect(toolLabel(call("c", "output-denied", { approval: { id: "a", approved: false, reason: "too risky" } })))
      .toEqual({ outcome: "denied", text: "denied: too risky" });
    expect(toolLabel(call("c", "output-denied")).text).toBe("denied");
  });

  it("render with the outcome for colour and the raw state in the tooltip", async () => {
    const parts = [
      call("c1", "output-available", { output: "ok" }),
      call("c2", "output-error", { errorText: "ValueError: content is 200 tokens, which exceeds maxTokens" }),
      call("c3", "output-available", { output: "Tool 'delete_file' was blocked by before_tool_call." }),
      call("c4", "approval-requested", { approval: { id: "a4" } }),
      call("c5", "approval-requested", { approval: { id: "a5" } }),
    ];
    const annotations = { tools: { c3: { action: "block", reason: "no deletes in class" } } };
    const { $$ } = await mount({ status: "awaiting-approval", annotations, messages: [user, { id: "a1", role: "assistant", parts }] });
    const cards = $$(".think-tool");
    expect(cards.map((c) => c.dataset.outcome)).toEqual(["done", "failed", "blocked", "waiting", "waiting"]);
    expect(cards.map((c) => c.querySelector(".think-tool-badge")?.textContent)).toEqual([
      "done", "failed", "blocked by before_tool_call: no deletes in class",
      "waiting for your approval (1 of 2)", "waiting for your approval (2 of 2)",
    ]);
    expect(cards.map((c) => c.querySelector<HTMLElement>(".think-tool-badge")?.title)).toEqual([
      "state: output-available", "state: output-error", "state: output-available", "state: approval-requested", "state: approval-requested",
    ]);
    expect(cards.map((c) => c.dataset.state)).toEqual(["output-available", "output-error", "output-available", "approval-requested", "approval-requested"]);
    expect($$("button.think-regenerate")).toHaveLength(0); // no Regenerate while an approval is pending
  });

  it("a running call counts its seconds while its turn streams", async () => {
    const { model, $ } = await mount({ messages: [user] });
    model.fromKernel({
      type: FRAME.USE_CHAT_RESPONSE, id: "r1", done: false,
      chunks: [{ type: "start", messageId: "a1" }, { type: "tool-input-available", toolCallId: "c1", toolName: "slow", input: {} }],
    });
    const badge = $(".think-tool .think-tool-badge")!;
    expect($(".think-tool")?.dataset.outcome).toBe("running");
    expect(badge.textContent).toMatch(/^running… \d+\.\d s$/);
    expect(badge.dataset.started).toMatch(/^\d+$/);
  });
});

describe("how a reply ended", () => {
  const reply = (metadata: Record<string, unknown>) => ({
    id: "a1", role: "assistant", parts: [{ type: "text", text: "Once upon a" }],
    metadata: { model: "m", usage: { prompt_tokens: 30, completion_tokens: 16, total_tokens: 46, source: "reported" }, ...metadata },
  });

  it("a reply cut at its token limit says so and Continue sends continue_request", async () => {
    const { model, $ } = await mount({ messages: [user, reply({})], annotations: { finish: { a1: "length" } } });
    expect($(".think-cut")?.textContent).toContain("cut at 16 tokens — continue?");
    $<HTMLButtonElement>("button.think-continue")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.CONTINUE_REQUEST, id: expect.any(String) });
    expect($(".think-panel")?.dataset.status).toBe("submitted");
    expect($("button.think-stop")?.hidden).toBe(false);
  });

  it("a finish reason stored on the message works too; a stop reason shows no marker", async () => {
    const { $ } = await mount({ messages: [user, reply({ finishReason: "length" })] });
    expect($(".think-cut")).not.toBeNull();
    const again = await mount({ messages: [user, reply({})], annotations: { finish: { a1: "stop" } } });
    expect(again.$(".think-cut")).toBeNull();
  });

  it("a stopped reply says it was interrupted and its partial reply kept, once", async () => {
    const { $, $$ } = await mount({ messages: [user, reply({ aborted: true })] });
    expect($(".think-stopped")?.textContent).toBe(INTERRUPTED_NOTE);
    expect($("button.think-continue")).toBeNull();
    // stopped and cut by the kernel going away (a stall's abort too): the note is not said twice
    const both = await mount({ messages: [user, reply({ aborted: true, interrupted: true })] });
    expect([...both.$$(".think-message-error"), ...both.$$(".think-stopped")].map((e) => e.textContent))
      .toEqual([INTERRUPTED_NOTE]);
    expect($$(".think-message-error")).toEqual([]);
  });
});

describe("versions of a regenerated reply", () => {
  it("show ‹ 2 / 3 › and switch with switch_branch", async () => {
    const branches = { a2: { index: 1, count: 3, ids: ["a1", "a2", "a3"] } };
    const { model, $ } = await mount({
      messages: [user, { id: "a2", role: "assistant", parts: [{ type: "text", text: "Second" }] }],
      annotations: { branches },
    });
    expect($(".think-version-label")?.textContent).toBe("2 / 3");
    $<HTMLButtonElement>("button.think-version-prev")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.SWITCH_BRANCH, messageId: "a1" });
    $<HTMLButtonElement>("button.think-version-next")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.SWITCH_BRANCH, messageId: "a3" });
    model.set("status", "streaming");
    expect($<HTMLButtonElement>("button.think-version-prev")?.disabled).toBe(true);
  });

  it("a forked version says where it was forked and what was edited", async () => {
    const fork = { of: "a1", at: "after_tool_call:c1", label: "forked at after_tool_call(add) — result edited" };
    const { $ } = await mount({
      messages: [user, { id: "a2", role: "assistant", parts: [{ type: "text", text: "The sum is 0." }],
                         metadata: { fork } }],
      annotations: { branches: { a2: { index: 1, count: 2, ids: ["a1", "a2"] } } },
    });
    expect($(".think-version-label")?.textContent).toBe("2 / 2");
    expect($(".think-version-fork")?.textContent).toBe("forked at after_tool_call(add) — result edited");
    const plain = await mount({
      messages: [user, { id: "a1", role: "assistant", parts: [{ type: "text", text: "The sum is 42." }] }],
      annotations: { branches: { a1: { index: 0, count: 2, ids: ["a1", "a2"] } } },
    });
    expect(plain.$(".think-version-fork")).toBeNull();
    expect(plain.$("button.think-version-compare")).toBeNull();
  });

  it("compare shows a forked version beside its original: the word diff, then what else differs", async () => {
    const compare = { of: "a1", label: "forked at after_tool_call(add) — result edited",
                      diff: [["=", "The sum is "], ["-", "42."], ["+", "0."]],
                      rows: [{ aspect: "call 1 result", a: "42.0", b: "0" }] };
    const { $ } = await mount({
      messages: [user, { id: "a2", role: "assistant", parts: [{ type: "text", text: "The sum is 0." }],
                         metadata: { fork: { of: "a1", label: compare.label } } }],
      annotations: { branches: { a2: { index: 1, count: 2, ids: ["a1", "a2"], compare } } },
    });
    const view = $(".think-compare")!;
    expect(view.hidden).toBe(true);
    $<HTMLButtonElement>("button.think-version-compare")!.click();
    expect(view.hidden).toBe(false);
    expect($(".think-compare-diff")?.innerHTML).toBe("The sum is <del>42.</del><ins>0.</ins>");
    expect([...view.querySelectorAll(".think-compare-rows tr")].map((tr) => tr.textContent))
      .toEqual(["originalthis version", "call 1 result42.00"]);
    $<HTMLButtonElement>("button.think-version-compare")!.click();
    expect(view.hidden).toBe(true);
  });
});

describe("names and numbers", () => {
  it("header says class · name; the empty panel names the model and that it is offline", async () => {
    const { $ } = await mount();
    expect($(".think-agent-name")?.textContent).toBe("Tutor · default");
    expect($(".think-empty")?.textContent).toContain("runs on think-local/smollm2-135m-instruct, in this kernel and offline");
    expect($(".think-db-path")?.textContent).toBe(truncateMiddle("/home/teacher/courses/agents-101/week-3/.think/tools_and_approval.sqlite"));
    expect($(".think-db-path")?.textContent).toContain("…");
    expect($(".think-db-path")?.title).toBe("/home/teacher/courses/agents-101/week-3/.think/tools_and_approval.sqlite");
  });

  it("the box names the class, a test model is not called the embedded one, and no hint is Jupyter-only (issue 27 §9)", async () => {
    const { $ } = await mount();
    expect($<HTMLTextAreaElement>("textarea.think-input")?.placeholder).toBe("Message Tutor (Enter to send, Shift+Enter for a new line)");
    const embedded = $(".think-empty")?.textContent ?? "";
    expect(embedded).toContain("not good answers");
    expect(embedded).not.toContain("%think"); // marimo has no magics
    expect(embedded).toContain("agent.default_model");
    const scripted = emptyHint({ agentName: "default", dbPath: "", agentClass: "Bot", model: "think-scripted/script-1", offline: true });
    expect(scripted).toBe("Bot · default runs on a test model (think-scripted/script-1), in this kernel: its replies are the ones its script or function gives.");
  });

  it("truncate in the middle; a hosted model's hint says messages leave", () => {
    expect(truncateMiddle("short")).toBe("short");
    const cut = truncateMiddle("/a/very/long/path/that/goes/on/and/on/notebook.sqlite", 30);
    expect(cut).toHaveLength(30);
    expect(cut.endsWith("notebook.sqlite")).toBe(true);
    expect(emptyHint({ agentName: "x", dbPath: "", agentClass: "C", model: "openai/gpt-4o-mini", offline: false }))
      .toContain("sent to that provider");
  });
});

describe("busy from the first moment", () => {
  it("a turn started from a cell shows submitted with Stop, which cancels the kernel's running request", async () => {
    const { model, $ } = await mount({ messages: [user] });
    model.set("annotations", { active: ["req-cell-1"] });
    model.set("status", "submitted");
    expect($(".think-status")?.textContent).toBe("submitted");
    expect($(".think-status")?.title).toContain("waiting for the model's first token");
    expect($("button.think-stop")?.hidden).toBe(false);
    $<HTMLButtonElement>("button.think-stop")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.CHAT_REQUEST_CANCEL, id: "req-cell-1" });
  });

  it("the status says what the turn waits for; the detail is dropped once it streams or ends", async () => {
    const { model, $ } = await mount({ messages: [user] });
    model.set("annotations", { active: ["req-cell-1"] });
    model.set("status_detail", "loading litellm…");
    model.set("status", "submitted");
    expect($(".think-status")?.textContent).toBe("submitted · loading litellm…");
    expect($(".think-status")?.getAttribute("data-detail")).toBe("loading litellm…");
    expect($(".think-status")?.title).toMatch(/^loading litellm…: sent;/);
    model.set("status_detail", "1 queued");
    model.set("status", "streaming");
    expect($(".think-status")?.textContent).toBe("streaming · 1 queued");
    model.set("status", "ready"); // a stale detail is never shown on an idle panel
    expect($(".think-status")?.textContent).toBe("ready");
  });

  it("a queued (pending) turn can be stopped", async () => {
    const { model, $ } = await mount({ messages: [user] });
    model.set("annotations", { active: ["req-q"] });
    model.set("status", "pending");
    expect($(".think-status")?.textContent).toBe("queued");
    expect($("button.think-stop")?.hidden).toBe(false);
  });
});
