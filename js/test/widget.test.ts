// @vitest-environment happy-dom
import type { AnyModel, Initialize, Render } from "@anywidget/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FRAME, TRIGGER, type UseChatResponse } from "../src/protocol";
import widget from "../src/widget";
import { FakeModel } from "./fake-model";
import { frame } from "./frames";

type Traits = {
  uid: string;
  agent_name: string;
  db_path: string;
  status: string;
  error: string;
  messages: unknown[];
};

const user = { id: "u1", role: "user", parts: [{ type: "text", text: "What is 2 + 40?" }] };
const cleanups: (() => unknown)[] = [];
afterEach(() => {
  cleanups.splice(0).forEach((f) => f());
  document.body.replaceChildren();
});

async function mount(traits: Partial<Traits> = {}) {
  const model = new FakeModel<Traits>({
    uid: Math.random().toString(16).slice(2),
    agent_name: "calc",
    db_path: "/tmp/.think/demo.sqlite",
    status: "ready",
    error: "",
    messages: [],
    ...traits,
  });
  const anyModel = model as unknown as AnyModel<Traits>;
  const signal = new AbortController().signal;
  const init = (await (widget.initialize as Initialize<Traits>)({ model: anyModel, signal, experimental: {} as never })) as () => void;
  const el = document.createElement("div");
  document.body.append(el);
  const view = (await (widget.render as Render<Traits>)({ model: anyModel, el, signal, host: {} as never, experimental: {} as never })) as () => void;
  cleanups.push(view, init);
  const $ = <E extends Element = HTMLElement>(sel: string) => el.querySelector<E>(sel);
  const $$ = (sel: string) => Array.from(el.querySelectorAll<HTMLElement>(sel));
  return { model, el, $, $$ };
}

describe("ChatPanel front end", () => {
  it("handshakes from initialize and shows the header", async () => {
    const { model, $ } = await mount();
    expect(model.sent).toEqual([{ type: FRAME.STREAM_RESUME_REQUEST }]);
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
    expect(request).toMatchObject({ type: FRAME.USE_CHAT_REQUEST, trigger: TRIGGER.SUBMIT });
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
    expect($(".think-panel")?.dataset.status).toBe("streaming");
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

  it("Clear sends chat_clear; cleanup removes the listeners", async () => {
    const { model, $ } = await mount();
    $<HTMLButtonElement>("button.think-clear")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.CHAT_CLEAR });
    cleanups.splice(0).forEach((f) => f());
    expect(model.listenerCount("msg:custom")).toBe(0);
    expect(model.listenerCount("change:messages")).toBe(0);
  });
});
