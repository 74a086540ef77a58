// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import { FRAME, TRIGGER, type UseChatResponse } from "../src/protocol";
import { frame } from "./frames";
import { mount as mountPanel, unmountAll } from "./mount";

const user = { id: "u1", role: "user", parts: [{ type: "text", text: "What is 2 + 40?" }] };
afterEach(unmountAll);

const mount = (traits: Record<string, unknown> = {}, answerResume = true) =>
  mountPanel({ agent_name: "calc", db_path: "/tmp/.think/demo.sqlite", ...traits }, answerResume);

describe("ChatPanel front end", () => {
  it("handshakes from initialize and shows the header", async () => {
    const { model, $ } = await mount();
    expect(model.sent).toEqual([{ type: FRAME.STREAM_RESUME_REQUEST, probeId: expect.stringMatching(/^view-/) }]);
    expect(model.listenerCount("msg:custom")).toBe(1);
    expect($(".think-agent-name")?.textContent).toBe("calc");
    expect($(".think-db-path")?.textContent).toBe("/tmp/.think/demo.sqlite");
    expect($(".think-panel")?.dataset.status).toBe("ready");
    expect($(".think-stop")?.hidden).toBe(true);
  });

  it("Enter sends a use_chat_request with the user message and shows it at once", async () => {
    const { model, $, $$ } = await mount();
    const input = $<HTMLTextAreaElement>("textarea.think-input")!;
    input.value = "What is 2 + 40?";
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", shiftKey: true }));
    expect(model.sent).toHaveLength(1); // Shift+Enter is a new line
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    const request = model.sent[1] as { type: string; id: string; messages: { role: string; parts: unknown[] }[] };
    expect(request).toMatchObject({ type: FRAME.USE_CHAT_REQUEST, trigger: TRIGGER.SUBMIT, clientId: (model.sent[0] as { probeId: string }).probeId });
    expect(request.messages.at(-1)).toMatchObject({ role: "user", parts: [{ type: "text", text: "What is 2 + 40?" }] });
    expect(input.value).toBe("");
    expect($(".think-panel")?.dataset.status).toBe("submitted");
    expect($$(".think-message[data-role=user]")).toHaveLength(1);
    expect($<HTMLButtonElement>("button.think-send")?.disabled).toBe(true);
    expect($("button.think-stop")?.hidden).toBe(false);

    $<HTMLButtonElement>("button.think-stop")!.click();
    expect(model.sent[2]).toEqual({ type: FRAME.CHAT_REQUEST_CANCEL, id: request.id });
  });

  it("renders streamed chunks: markdown text and tool cards", async () => {
    const { model, $, $$ } = await mount({ messages: [user] });
    model.fromKernel(frame<UseChatResponse>("use_chat_response--tool"));
    const tools = $$(".think-tool");
    expect(tools.map((t) => [t.dataset.toolName, t.dataset.state])).toEqual([
      ["add", "output-available"],
      ["divide", "output-error"],
    ]);
    expect(tools[0].querySelector(".think-tool-input")?.textContent).toContain('"a": 2');
    expect(tools[0].querySelector(".think-tool-output")?.textContent).toContain("42");
    expect(tools[1].querySelector(".think-tool-error")?.textContent).toContain("ZeroDivisionError");
    expect($$(".think-message[data-role=assistant] .think-text").at(-1)?.textContent?.trim()).toBe("2 + 40 = 42");
    expect($(".think-message[data-message-id=msg-a2]")).not.toBeNull();
  });

  it("never lets model HTML execute", async () => {
    const { model, $ } = await mount();
    const evil = 'Hi <img src=x onerror="alert(1)"> <script>alert(2)</script> [x](javascript:alert(3)) **bold**';
    model.fromKernel({
      type: FRAME.USE_CHAT_RESPONSE,
      id: "r",
      chunks: [{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: evil }],
      done: false,
    });
    const text = $(".think-text")!;
    expect(text.querySelector("img, script")).toBeNull();
    expect(text.querySelector("strong")?.textContent).toBe("bold");
    expect(text.querySelector("a[href^=javascript]")).toBeNull();
  });

  it("rebuilds from the messages trait and shows errors from traits", async () => {
    const { model, $, $$ } = await mount();
    model.set("messages", [user, { id: "a1", role: "assistant", parts: [{ type: "text", text: "42" }] }]);
    expect($$(".think-message").map((m) => m.dataset.role)).toEqual(["user", "assistant"]);
    model.set("status", "error");
    model.set("error", "rate limited");
    expect($(".think-panel")?.dataset.status).toBe("error");
    expect($(".think-error")?.textContent).toBe("rate limited");
    expect($(".think-error")?.hidden).toBe(false);
  });

  it("ignores malformed frames", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const { model, $$ } = await mount();
    model.fromKernel(frame("malformed-chunk-without-type"));
    model.fromKernel("nonsense");
    expect($$(".think-message")).toHaveLength(0);
    expect(warn).toHaveBeenCalledTimes(2);
    warn.mockRestore();
  });

  it("Clear asks first, then sends chat_clear; cleanup removes the listeners", async () => {
    const { model, $ } = await mount();
    const sent = model.sent.length;
    $<HTMLButtonElement>("button.think-clear")!.click();
    expect(model.sent).toHaveLength(sent); // nothing yet: the panel asks
    expect($(".think-clear-confirm")?.hidden).toBe(false);
    expect($(".think-clear-confirm")?.textContent).toContain("Clear the whole conversation?");
    $<HTMLButtonElement>("button.think-clear-no")!.click();
    expect($(".think-clear-confirm")?.hidden).toBe(true);
    expect(model.sent).toHaveLength(sent);
    $<HTMLButtonElement>("button.think-clear")!.click();
    $<HTMLButtonElement>("button.think-clear-yes")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.CHAT_CLEAR });
    expect($(".think-clear-confirm")?.hidden).toBe(true);
    unmountAll();
    expect(model.listenerCount("msg:custom")).toBe(0);
    expect(model.listenerCount("change:messages")).toBe(0);
  });

  it("shows Approve and Deny with the tool name and full input; clicks send tool_approval once", async () => {
    const input = { path: "notes.txt", recursive: true, note: "x".repeat(300) };
    const tool = { type: "tool-delete_file", toolCallId: "c1", state: "approval-requested", input, approval: { id: "ap" } };
    const { model, $ } = await mount({ status: "awaiting-approval", messages: [user, { id: "a1", role: "assistant", parts: [tool] }] });
    expect($(".think-status")?.textContent).toBe("awaiting approval");
    const card = $(".think-tool[data-state=approval-requested]")!;
    expect(card.dataset.toolName).toBe("delete_file");
    expect((card as HTMLDetailsElement).open).toBe(true);
    expect(card.querySelector(".think-tool-input")?.textContent).toContain("x".repeat(300));
    card.querySelector<HTMLInputElement>("input.think-deny-reason")!.value = "keep it";
    card.querySelector<HTMLButtonElement>("button.think-deny")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.TOOL_APPROVAL, toolCallId: "c1", approved: false, reason: "keep it" });
    expect($<HTMLButtonElement>("button.think-approve")?.disabled).toBe(true);
  });

  it("a rebuilt card keeps the deny reason being typed: its value, the focus and the caret", async () => {
    const tool = { type: "tool-delete_file", toolCallId: "c1", state: "approval-requested", input: {}, approval: { id: "ap" } };
    const messages = [user, { id: "a1", role: "assistant", parts: [tool] }];
    const { model, $ } = await mount({ status: "awaiting-approval", messages });
    const typed = $<HTMLInputElement>("input.think-deny-reason")!;
    typed.focus();
    typed.value = "I still";
    typed.dispatchEvent(new Event("input"));
    typed.setSelectionRange(2, 2);
    model.set("messages", [user, { ...messages[1], parts: [{ ...tool }] }]); // the transcript again: the card is rebuilt
    const now = $<HTMLInputElement>("input.think-deny-reason")!;
    expect(now).not.toBe(typed);
    expect(now.value).toBe("I still");
    expect(document.activeElement).toBe(now);
    expect([now.selectionStart, now.selectionEnd]).toEqual([2, 2]);
    now.value = "I still need it";
    now.dispatchEvent(new Event("input"));
    $<HTMLButtonElement>("button.think-deny")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.TOOL_APPROVAL, toolCallId: "c1", approved: false, reason: "I still need it" });
  });

  it("approve sends approved: true", async () => {
    const tool = { type: "tool-rm", toolCallId: "c2", state: "approval-requested", input: {}, approval: { id: "ap" } };
    const { model, $ } = await mount({ messages: [user, { id: "a1", role: "assistant", parts: [tool] }] });
    $<HTMLButtonElement>("button.think-approve")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.TOOL_APPROVAL, toolCallId: "c2", approved: true });
  });

  it("the runner view runs pending client tools once each, errors as output-error", async () => {
    const specs = [
      { name: "tz", js: "return 'Mars/Olympus';" },
      { name: "echo", js: "return { got: input.x };" },
      { name: "boom", js: "throw new TypeError('no selection');" },
    ];
    const call = (id: string, name: string, input: unknown) => ({ type: `tool-${name}`, toolCallId: id, state: "input-available", input });
    const assistant = { id: "a1", role: "assistant", parts: [call("1", "tz", {}), call("2", "echo", { x: 7 }), call("3", "boom", {})] };
    const { model, probeId } = await mount({ client_tools: specs });
    model.set("messages", [user, assistant]);
    await new Promise((r) => setTimeout(r, 10));
    expect(model.sent.filter((m) => (m as { type: string }).type === FRAME.TOOL_RESULT)).toEqual([]); // not the runner
    model.set("client_tool_runner", probeId);
    model.set("messages", [user, { ...assistant }]);
    await vi.waitFor(() => expect(model.sent.filter((m) => (m as { type: string }).type === FRAME.TOOL_RESULT)).toHaveLength(3));
    const results = model.sent.filter((m) => (m as { type: string }).type === FRAME.TOOL_RESULT);
    expect(results).toEqual([
      { type: FRAME.TOOL_RESULT, toolCallId: "1", toolName: "tz", output: "Mars/Olympus", state: "output-available" },
      { type: FRAME.TOOL_RESULT, toolCallId: "2", toolName: "echo", output: { got: 7 }, state: "output-available" },
      { type: FRAME.TOOL_RESULT, toolCallId: "3", toolName: "boom", state: "output-error", errorText: "TypeError: no selection" },
    ]);
  });

  it("acks its own stream_resuming and ignores live frames until the replay", async () => {
    const { model, $$, probeId } = await mount({ messages: [user] }, false);
    model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id: "r", chunks: [{ type: "text-delta", id: "t", delta: "dup" }], done: false });
    model.fromKernel({ type: FRAME.STREAM_RESUMING, id: "r", probeId });
    expect(model.sent.at(-1)).toEqual({ type: FRAME.STREAM_RESUME_ACK, id: "r", probeId });
    model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id: "r", chunks: [{ type: "text-delta", id: "t", delta: "dup" }], done: false, replay: true });
    model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id: "r", chunks: [{ type: "text-delta", id: "t", delta: "!" }], done: false });
    expect($$(".think-message[data-role=assistant] .think-text").map((e) => e.textContent?.trim())).toEqual(["dup!"]);
  });

  it("keeps the list scrolled to the bottom while the user is there, and leaves it where they scrolled up to", async () => {
    const { model, $ } = await mount({ messages: [user] });
    const list = $(".think-messages")!;
    let height = 1000; // happy-dom lays nothing out: the list's sizes are given
    Object.defineProperty(list, "scrollHeight", { get: () => height, configurable: true });
    Object.defineProperty(list, "clientHeight", { get: () => 200, configurable: true });
    const delta = (text: string) => model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id: "r", done: false,
      chunks: [{ type: "text-delta", id: "t", delta: text }] });
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    delta("Hello");
    await vi.waitFor(() => expect(list.scrollTop).toBe(1000)); // pinned on the next animation frame
    list.scrollTop = 300; // the user scrolls up
    list.dispatchEvent(new Event("scroll"));
    height = 1500;
    delta(" more");
    await frame();
    expect(list.scrollTop).toBe(300);
    list.scrollTop = 1300; // and back to the bottom
    list.dispatchEvent(new Event("scroll"));
    height = 2000;
    delta(" and more");
    await vi.waitFor(() => expect(list.scrollTop).toBe(2000));
  });

  it("code blocks get a copy button; reasoning is collapsed; sub-agents are cards; usage shows", async () => {
    const writeText = vi.fn(async () => {});
    Object.defineProperty(globalThis.navigator, "clipboard", { value: { writeText }, configurable: true });
    const assistant = {
      id: "a1",
      role: "assistant",
      metadata: { model: "gpt-x", usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }, cost_usd: 0.0001 },
      parts: [
        { type: "reasoning", text: "thinking", state: "done" },
        { type: "text", text: "Run:\n\n```python\nprint(42)\n```" },
        { type: "data-subagent", id: "s1", data: { agent: "Lead:lead/Researcher:r1", label: "Researcher · r1", request_id: "r", status: "running", text: "Looking", tools: [] } },
      ],
    };
    const { $, $$ } = await mount({ messages: [user, assistant] });
    expect(($(".think-reasoning") as HTMLDetailsElement).open).toBe(false);
    $<HTMLButtonElement>(".think-code-copy")!.click();
    expect(writeText).toHaveBeenCalledWith("print(42)\n");
    expect($(".think-subagent[data-status=running] .think-subagent-name")?.textContent).toBe("↳ Researcher · r1");
    expect($(".think-usage")?.textContent).toBe("gpt-x · 5 output tokens · $0.000100");
    expect($(".think-usage")?.title).toContain("this turn: 10 input + 5 output = 15 tokens");
    expect($(".think-totals")?.textContent).toBe("15 tokens · $0.000100");
    expect($$("button.think-regenerate")).toHaveLength(1);
  });

  it("usage footers show reported counts, and usage the provider did not report as unknown, never 0", async () => {
    const reply = (id: string, usage: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      id, role: "assistant", parts: [{ type: "text", text: id }], metadata: { model: "gpt-x", usage, ...extra },
    });
    const unknown = { prompt_tokens: null, completion_tokens: null, total_tokens: null, source: null };
    const messages = [
      user, reply("a1", { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26, source: "reported" }, { cost_usd: 0.0001 }),
      { ...user, id: "u2" }, reply("a2", { ...unknown, estimated_tokens: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 } }),
      { ...user, id: "u3" }, reply("a3", unknown),
      { ...user, id: "u4" }, reply("a4", { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3, source: "reported" }),
    ];
    const { $, $$ } = await mount({ messages });
    expect($$(".think-usage").map((e) => [e.dataset.source, e.textContent])).toEqual([
      ["reported", "gpt-x · 6 output tokens · $0.000100"],
      ["unknown", "gpt-x · usage unknown"],
      ["unknown", "gpt-x · usage unknown"],
      ["reported", "gpt-x · 1 output tokens · cost n/a"],
    ]);
    expect($$(".think-usage")[1].title).toContain("litellm's tokenizer estimates ≈13 tokens");
    expect($(".think-totals")?.textContent).toBe("29 tokens (+2 turns unknown) · $0.000100 (+3 turns n/a)");
  });

  it("a stored interrupted reply shows its note every time it is drawn, empty or not", async () => {
    // the kernel was killed while the model chose a tool: recovery stored a reply with no content
    const empty = { id: "a1", role: "assistant", parts: [{ type: "step-start" }], metadata: { interrupted: true } };
    const partial = { id: "a2", role: "assistant", parts: [{ type: "text", text: "9 plus" }], metadata: { interrupted: true } };
    const messages = [user, empty, { ...user, id: "u2" }, partial];
    for (let drawn = 0; drawn < 2; drawn++) { // a panel drawn later (no replayed error frame) says it too
      const { $$ } = await mount({ messages });
      expect($$(".think-message[data-role=assistant]").map((e) => e.querySelector(".think-message-error")?.textContent)).toEqual([
        "The turn was interrupted before the model answered.", // nothing was kept: it does not say a partial was
        "The turn was interrupted before it finished; its partial reply was kept.",
      ]);
      unmountAll();
    }
  });

  it("a replayed interruption is said once, under the reply, and truly (a stranger saw it twice)", async () => {
    const empty = { id: "a1", role: "assistant", parts: [{ type: "step-start" }], metadata: { interrupted: true } };
    const { model, $, $$ } = await mount({ messages: [user, empty] });
    model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id: "r-dead", replay: true, done: true, error: true,
      chunks: [{ type: "error", errorText: "The turn was interrupted before it finished; its partial reply was kept." }] });
    await Promise.resolve();
    const said = $$(".think-message-error").map((e) => e.textContent);
    expect(said).toEqual(["The turn was interrupted before the model answered."]);
    expect($(".think-error")?.hidden).toBe(true);
  });

  it("Regenerate sends a regenerate request for the last user message", async () => {
    const { model, $ } = await mount({ messages: [user, { id: "a1", role: "assistant", parts: [{ type: "text", text: "42" }] }] });
    $<HTMLButtonElement>("button.think-regenerate")!.click();
    expect(model.sent.at(-1)).toMatchObject({ type: FRAME.USE_CHAT_REQUEST, trigger: TRIGGER.REGENERATE, messages: [user] });
    expect($(".think-panel")?.dataset.status).toBe("submitted");
  });
});
