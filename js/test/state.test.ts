import { describe, expect, it } from "vitest";
import { applyChunks, newTurn } from "../src/accumulate";
import { FRAME, type UseChatResponse } from "../src/protocol";
import {
  activeRequestId,
  initialState,
  reduce,
  setTranscript,
  submitted,
  visibleMessages,
} from "../src/state";
import type { UIMessage, UIMessageChunk } from "../src/ui-message";
import { frame } from "./frames";

const response = (id: string, chunks: UIMessageChunk[], extra: Partial<UseChatResponse> = {}): UseChatResponse => ({
  type: FRAME.USE_CHAT_RESPONSE,
  id,
  chunks,
  done: false,
  ...extra,
});

const deepFreeze = <T>(x: T): T => {
  if (x && typeof x === "object") {
    Object.values(x).forEach(deepFreeze);
    Object.freeze(x);
  }
  return x;
};

describe("chunk accumulation", () => {
  it("builds the assistant message of the tool fixture like the Python accumulator", () => {
    const { chunks } = frame<UseChatResponse>("use_chat_response--tool");
    const turn = applyChunks(newTurn("req", false), chunks);
    expect(turn.message).toEqual({
      id: "msg-a2",
      role: "assistant",
      parts: [
        { type: "step-start" },
        { type: "reasoning", text: "I should use the add tool.", state: "done" },
        { type: "tool-add", toolCallId: "call-1", state: "output-available", input: { a: 2, b: 40 }, output: 42 },
        {
          type: "tool-divide",
          toolCallId: "call-2",
          state: "output-error",
          input: { a: 1, b: 0 },
          errorText: "ZeroDivisionError: division by zero",
        },
        { type: "step-start" },
        { type: "text", text: "2 + 40 = 42", state: "done" },
      ],
    });
    expect(turn.rawInput).toEqual({ "call-1": '{"a": 2, "b": 40}' });
  });

  it("applies deltas split across frames to the part with the same id", () => {
    const split: UIMessageChunk[][] = [
      [{ type: "start", messageId: "m" }, { type: "text-start", id: "a" }, { type: "text-delta", id: "a", delta: "Hel" }],
      [{ type: "text-start", id: "b" }, { type: "text-delta", id: "a", delta: "lo" }, { type: "text-delta", id: "b", delta: "!" }],
      [{ type: "text-end", id: "a" }],
    ];
    const turn = split.reduce(applyChunks, newTurn("r", false));
    expect(turn.message.parts).toEqual([
      { type: "text", text: "Hello", state: "done" },
      { type: "text", text: "!", state: "streaming" },
    ]);
  });

  it("streams tool input text, then never moves a tool part backwards", () => {
    let turn = applyChunks(newTurn("r", false), [
      { type: "tool-input-start", toolCallId: "c", toolName: "add" },
      { type: "tool-input-delta", toolCallId: "c", inputTextDelta: '{"a":' },
      { type: "tool-input-delta", toolCallId: "c", inputTextDelta: " 1}" },
    ]);
    expect(turn.message.parts).toEqual([{ type: "tool-add", toolCallId: "c", state: "input-streaming", input: undefined }]);
    expect(turn.rawInput.c).toBe('{"a": 1}');
    turn = applyChunks(turn, [
      { type: "tool-input-available", toolCallId: "c", toolName: "add", input: { a: 1 } },
      { type: "tool-output-available", toolCallId: "c", output: 1 },
      { type: "tool-output-error", toolCallId: "c", errorText: "late" },
      { type: "tool-input-start", toolCallId: "c", toolName: "add" },
    ]);
    expect(turn.message.parts).toEqual([
      { type: "tool-add", toolCallId: "c", state: "output-available", input: { a: 1 }, output: 1 },
    ]);
  });

  it("records approval requests, data parts, metadata and errors; ignores the rest", () => {
    const turn = applyChunks(newTurn("r", false), [
      { type: "start", messageMetadata: { model: "x" } },
      { type: "tool-input-available", toolCallId: "c", toolName: "rm", input: { path: "/" } },
      { type: "tool-approval-request", toolCallId: "c", approvalId: "ap1" },
      { type: "data-progress", id: "p", data: 1 },
      { type: "data-progress", id: "p", data: 2 },
      { type: "data-ping", data: 0, transient: true },
      { type: "finish-step" },
      { type: "abort" },
      { type: "something-new" },
      { type: "finish", messageMetadata: { tokens: 3 } },
      { type: "error", errorText: "boom" },
    ]);
    expect(turn.message).toEqual({
      id: "live-r",
      role: "assistant",
      metadata: { model: "x", tokens: 3 },
      parts: [
        { type: "tool-rm", toolCallId: "c", state: "approval-requested", input: { path: "/" }, approval: { id: "ap1" } },
        { type: "data-progress", id: "p", data: 2 },
      ],
    });
    expect(turn.errorText).toBe("boom");
  });

  it("never mutates its input", () => {
    const turn = deepFreeze(applyChunks(newTurn("r", false), [{ type: "text-start", id: "a" }]));
    expect(() => applyChunks(turn, [{ type: "text-delta", id: "a", delta: "x" }, { type: "start-step" }])).not.toThrow();
  });
});

describe("reduce", () => {
  const user: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] };
  const assistant: UIMessage = { id: "a1", role: "assistant", parts: [{ type: "text", text: "Hello", state: "done" }] };

  it("runs a whole turn: submit, stream, done, transcript", () => {
    let s = deepFreeze(submitted(initialState(), "r1", user));
    expect(s.status).toBe("submitted");
    expect(visibleMessages(s).map((v) => v.message.id)).toEqual(["u1"]);
    expect(activeRequestId(s)).toBe("r1");

    s = deepFreeze(reduce(s, response("r1", [{ type: "start", messageId: "a1" }, { type: "text-start", id: "t" }])));
    s = deepFreeze(reduce(s, response("r1", [{ type: "text-delta", id: "t", delta: "Hello" }])));
    expect(s.status).toBe("streaming");
    const views = visibleMessages(s);
    expect(views.map((v) => [v.message.id, v.live])).toEqual([["u1", false], ["a1", true]]);
    expect(views[1].message.parts).toEqual([{ type: "text", text: "Hello", state: "streaming" }]);

    s = deepFreeze(reduce(s, response("r1", [{ type: "text-end", id: "t" }], { done: true })));
    expect(s.status).toBe("ready");
    expect(s.pendingRequestId).toBeNull();
    expect(visibleMessages(s).map((v) => v.message.id)).toEqual(["u1", "a1"]);

    s = setTranscript(s, [user, assistant]);
    expect(s.live).toEqual([]);
    expect(s.optimistic).toEqual([]);
    expect(visibleMessages(s)).toEqual([{ message: user, live: false }, { message: assistant, live: false }]);
  });

  it("prefers the live message while its turn streams, even if the transcript already has it", () => {
    let s = reduce(initialState({ transcript: [user] }), response("r1", [{ type: "start", messageId: "a1" }, { type: "text-start", id: "t" }]));
    s = setTranscript(s, [user, { ...assistant, parts: [] }]);
    const views = visibleMessages(s);
    expect(views).toHaveLength(2);
    expect(views[1].live).toBe(true);
    s = reduce(s, response("r1", [], { done: true }));
    expect(s.live).toEqual([]); // persisted copy is in the transcript: the live one goes
  });

  it("replay resets the turn, so a replay after live frames shows no duplicates", () => {
    const replayFrame = frame<UseChatResponse>("use_chat_response--replay-continuation");
    const live = response(replayFrame.id, replayFrame.chunks.slice(0, 4), { continuation: true });
    const s0 = initialState({ transcript: [user, assistant] });
    const once = reduce(s0, replayFrame);
    const twice = reduce(reduce(reduce(s0, live), replayFrame), replayFrame);
    expect(visibleMessages(twice)).toEqual(visibleMessages(once));
    const last = visibleMessages(once).at(-1)!;
    expect(last.message.id).toBe("a1"); // a continuation extends the last assistant message
    expect(last.message.parts).toEqual([
      ...assistant.parts,
      { type: "step-start" },
      { type: "text", text: "Continuing after the tool result", state: "streaming" },
      { type: "data-progress", id: "p1", data: { step: 1 } },
    ]);
  });

  it("an error chunk sets status and error and shows inline", () => {
    const s = reduce(initialState(), frame<UseChatResponse>("use_chat_response--error"));
    expect(s.status).toBe("error");
    expect(s.error).toBe("The model provider returned 429 Too Many Requests.");
    expect(visibleMessages(s).at(-1)?.errorText).toBe(s.error);
  });

  it("a bare error frame (no chunks) still marks the panel as failed", () => {
    const s = reduce(submitted(initialState(), "r", user), response("r", [], { done: true, error: true }));
    expect([s.status, s.error, s.live]).toEqual(["error", "The turn failed.", []]);
  });

  it("chat_clear drops live turns and pending user messages; resume frames set status", () => {
    let s = reduce(submitted(initialState(), "r", user), response("r", [{ type: "start" }]));
    s = reduce(s, { type: FRAME.CHAT_CLEAR });
    expect([s.live, s.optimistic, s.status]).toEqual([[], [], "ready"]);
    expect(reduce(s, { type: FRAME.STREAM_RESUMING, id: "r" }).status).toBe("streaming");
    expect(reduce(s, { type: FRAME.STREAM_RESUME_NONE })).toBe(s);
    expect(reduce(s, { type: FRAME.CHAT_REQUEST_CANCEL, id: "r" })).toBe(s);
  });
});
