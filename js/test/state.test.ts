import { describe, expect, it } from "vitest";
import { applyChunks, newTurn } from "../src/accumulate";
import { FRAME, type UseChatResponse } from "../src/protocol";
import {
  activeRequestId,
  disconnected,
  displayStatus,
  initialState,
  reduce,
  responded,
  setQueued,
  setStatus,
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

  it("runs a whole turn: submit, stream, done, transcript; status comes from the kernel", () => {
    let s = deepFreeze(submitted(initialState(), "r1", user));
    expect(displayStatus(s)).toBe("submitted");
    expect(visibleMessages(s).map((v) => v.message.id)).toEqual(["u1"]);
    expect(activeRequestId(s)).toBe("r1");

    s = deepFreeze(setStatus(s, "streaming"));
    s = deepFreeze(reduce(s, response("r1", [{ type: "start", messageId: "a1" }, { type: "text-start", id: "t" }])));
    s = deepFreeze(reduce(s, response("r1", [{ type: "text-delta", id: "t", delta: "Hello" }])));
    expect(displayStatus(s)).toBe("streaming");
    const views = visibleMessages(s);
    expect(views.map((v) => [v.message.id, v.live])).toEqual([["u1", false], ["a1", true]]);
    expect(views[1].message.parts).toEqual([{ type: "text", text: "Hello", state: "streaming" }]);

    s = deepFreeze(reduce(s, response("r1", [{ type: "text-end", id: "t" }], { done: true })));
    s = setStatus(s, "ready");
    expect(displayStatus(s)).toBe("ready");
    expect(s.pendingRequestId).toBeNull();
    expect(visibleMessages(s).map((v) => v.message.id)).toEqual(["u1", "a1"]);

    s = setTranscript(s, [user, assistant]);
    expect(s.live).toEqual([]);
    expect(s.optimistic).toEqual([]);
    expect(visibleMessages(s)).toEqual([{ message: user, live: false }, { message: assistant, live: false }]);
  });

  it("a skipped turn's empty done frame does not change the kernel's status", () => {
    let s = setStatus(initialState(), "streaming");
    s = reduce(s, response("r1", [{ type: "start", messageId: "a1" }]));
    s = reduce(s, response("r2", [], { done: true }));
    expect(displayStatus(s)).toBe("streaming");
    expect(s.live.map((t) => t.requestId)).toEqual(["r1"]);
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
    expect(last.message.id).toBe("msg-a3"); // a continuation with its own id is its own message
    expect(last.message.parts).toEqual([
      { type: "step-start" },
      { type: "text", text: "Continuing after the tool result", state: "streaming" },
      { type: "data-progress", id: "p1", data: { step: 1 } },
    ]);
    const anonymous = reduce(s0, response("c", [{ type: "text-delta", id: "x", delta: "more" }], { continuation: true }));
    expect(visibleMessages(anonymous).at(-1)?.message.parts).toEqual([...assistant.parts, { type: "text", text: "more", state: "streaming" }]);
  });

  it("resume: live frames are dropped until this view's replay, then applied once", () => {
    let s = initialState({ transcript: [user], probeId: "v1", probePending: true });
    const chunks: UIMessageChunk[] = [{ type: "start", messageId: "a1" }, { type: "text-delta", id: "t", delta: "He" }];
    s = reduce(s, response("r1", chunks.slice(0, 1)));
    expect(s.live).toEqual([]);
    expect(reduce(s, { type: FRAME.STREAM_RESUMING, id: "r1", probeId: "other" })).toBe(s);
    s = reduce(s, { type: FRAME.STREAM_RESUMING, id: "r1", probeId: "v1" });
    expect([s.probePending, s.awaitingReplay]).toEqual([false, ["r1"]]);
    s = reduce(s, response("r1", [{ type: "text-delta", id: "t", delta: "XX" }]));
    s = reduce(s, response("r1", chunks, { replay: true }));
    s = reduce(s, response("r1", [{ type: "text-delta", id: "t", delta: "llo" }]));
    expect(visibleMessages(s).at(-1)?.message.parts).toEqual([{ type: "text", text: "Hello", state: "streaming" }]);
    const none = reduce(initialState({ probeId: "v2", probePending: true }), { type: FRAME.STREAM_RESUME_NONE, probeId: "v2" });
    expect(none.probePending).toBe(false);
  });

  it("stream_pending releases the probe (live frames are the whole turn) and shows the turn queued", () => {
    let s = reduce(initialState({ probeId: "v1", probePending: true }), { type: FRAME.STREAM_PENDING, id: "r1", probeId: "v1" });
    expect([s.probePending, s.pendingTurn, displayStatus(s)]).toEqual([false, "r1", "pending"]);
    s = reduce(s, response("r1", [{ type: "start", messageId: "a1" }, { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "Hi" }]));
    expect(s.pendingTurn).toBeNull();
    expect(visibleMessages(s).at(-1)?.message.parts).toEqual([{ type: "text", text: "Hi", state: "streaming" }]);
    const other = reduce(initialState({ probeId: "v2", probePending: true }), { type: FRAME.STREAM_PENDING, id: "r1", probeId: "v1" });
    expect(other.probePending).toBe(true); // another view's answer
  });

  it("chat_recovering shows recovering until it ends", () => {
    let s = reduce(initialState(), frame("chat_recovering"));
    expect([s.recovering, displayStatus(s)]).toEqual([true, "recovering"]);
    s = reduce(s, frame("chat_recovering--done"));
    expect(displayStatus(s)).toBe("ready");
  });

  it("a continuation's result for an earlier tool call shows in that message at once", () => {
    const tool = { type: "tool-rm", toolCallId: "c1", state: "approval-responded", input: { p: 1 }, approval: { id: "a", approved: true } };
    const earlier: UIMessage = { id: "a1", role: "assistant", parts: [tool as never] };
    let s = initialState({ transcript: [user, earlier] });
    s = reduce(s, response("r2", [{ type: "start", messageId: "a2" }, { type: "tool-output-available", toolCallId: "c1", output: "ok" }], { continuation: true }));
    const views = visibleMessages(s);
    expect(views[1].message.parts[0]).toMatchObject({ state: "output-available", output: "ok" });
    expect(s.transcript[1]).toBe(earlier); // the transcript itself is untouched
  });

  it("message_updated replaces the stored message; responded marks a tool call answered", () => {
    let s = initialState({ transcript: [user, assistant] });
    const updated = { ...assistant, parts: [{ type: "text", text: "Changed" }] } as UIMessage;
    s = reduce(s, { type: FRAME.MESSAGE_UPDATED, message: updated });
    expect(s.transcript).toEqual([user, updated]);
    expect(responded(s, "c1").responded).toEqual({ c1: true });
  });

  it("an answered call that asks again (a second gated call inside execute) can be answered again", () => {
    const asking = (id: string) => ({ type: "tool-execute", toolCallId: "c1", state: "approval-requested", input: { code: "x" }, approval: { id } });
    const message = (part: object): UIMessage => ({ id: "a1", role: "assistant", parts: [part as never] });
    let s = responded(initialState({ transcript: [user, message(asking("ap1"))] }), "c1");
    s = reduce(s, { type: FRAME.MESSAGE_UPDATED, message: message(asking("ap1")) }); // not taken yet: still answered
    expect(s.responded).toEqual({ c1: true });
    s = reduce(s, { type: FRAME.MESSAGE_UPDATED, message: message({ ...asking("ap1"), state: "approval-responded", approval: { id: "ap1", approved: true } }) });
    expect(s.responded).toEqual({});
    s = reduce(s, { type: FRAME.MESSAGE_UPDATED, message: message(asking("ap2")) });
    expect(s.responded).toEqual({});
    s = responded(s, "c1");
    expect(setTranscript(s, [user, message({ ...asking("ap2"), state: "output-denied" })]).responded).toEqual({});
  });

  it("an error chunk sets the error and shows inline", () => {
    const s = reduce(initialState(), frame<UseChatResponse>("use_chat_response--error"));
    expect(s.error).toBe("The model provider returned 429 Too Many Requests.");
    expect(visibleMessages(s).at(-1)?.errorText).toBe(s.error);
  });

  it("a turn stopped before anything streamed says so under its message, until another message follows", () => {
    // Think stores no empty reply, so the note lives in the view: stored message, sent message, reload-free
    let s = submitted(initialState(), "r1", user);
    s = deepFreeze(reduce(s, response("r1", [{ type: "start" }, { type: "abort", reason: "cancelled" }], { done: true })));
    expect(visibleMessages(s).map((v) => [v.message.id, v.stopped ?? false])).toEqual([["u1", true]]);
    s = setTranscript(s, [user]);
    expect(visibleMessages(s)).toEqual([{ message: user, live: false, stopped: true }]);
    const next: UIMessage = { id: "u2", role: "user", parts: [{ type: "text", text: "again" }] };
    s = submitted(s, "r2", next);
    expect(visibleMessages(s).map((v) => v.stopped ?? false)).toEqual([false, false]);
    // a stopped turn that had streamed keeps its own message and its stored "aborted" note instead
    s = reduce(s, response("r2", [{ type: "start", messageId: "a2" }, { type: "start-step" }, { type: "abort" }], { done: true }));
    expect(s.stoppedAfter).toBeNull();
    expect(visibleMessages(s).map((v) => v.message.id)).toEqual(["u1", "u2", "a2"]);
  });

  it("chat_clear drops transcript, live turns and pending user messages", () => {
    let s = reduce(submitted(initialState({ transcript: [user] }), "r", user), response("r", [{ type: "start" }]));
    s = reduce(s, { type: FRAME.CHAT_CLEAR });
    expect([s.transcript, s.live, s.optimistic, s.pendingRequestId]).toEqual([[], [], [], null]);
    expect(reduce(s, { type: FRAME.CHAT_REQUEST_CANCEL, id: "r" })).toBe(s);
  });
});

describe("queued messages (issue 27: a %%think cell sent while a turn runs)", () => {
  const u1: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "first" }] };
  const u2: UIMessage = { id: "u2", role: "user", parts: [{ type: "text", text: "second" }] };
  const u3: UIMessage = { id: "u3", role: "user", parts: [{ type: "text", text: "third" }] };
  const streaming = (): ReturnType<typeof initialState> => {
    let s = setTranscript(initialState(), [u1]);
    s = reduce(s, response("r1", [{ type: "start", messageId: "a1" }, { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "Work" }]));
    return s;
  };
  const shown = (s: ReturnType<typeof initialState>) => visibleMessages(s).map((v) => [v.message.id, !!v.queued]);

  it("shows the kernel's queued messages after the streaming reply, in run order, marked queued", () => {
    const s = deepFreeze(setQueued(streaming(), [{ requestId: "r2", message: u2 }, { requestId: "r3", message: u3 }]));
    expect(shown(s)).toEqual([["u1", false], ["a1", false], ["u2", true], ["u3", true]]);
  });

  it("drops a queued message once the transcript stores it, and ignores bad entries", () => {
    let s = setQueued(streaming(), [{ requestId: "r2", message: u2 }, null, { message: { id: 3, role: "user" } },
      { message: { id: "x", role: "assistant", parts: [] } }, "junk"]);
    expect(s.queued.map((m) => m.id)).toEqual(["u2"]);
    s = setTranscript(s, [u1, { id: "a1", role: "assistant", parts: [] }, u2]);
    expect(shown(s)).toEqual([["u1", false], ["a1", false], ["u2", false]]);
    expect(setQueued(s, undefined).queued).toEqual([]);
  });

  it("puts this view's message sent while another request streams after that reply, once", () => {
    let s = submitted(streaming(), "r2", u2);
    expect(shown(s)).toEqual([["u1", false], ["a1", false], ["u2", false]]);
    s = setQueued(s, [{ requestId: "r2", message: u2 }]);
    expect(shown(s)).toEqual([["u1", false], ["a1", false], ["u2", true]]);
  });

  it("forgets queued messages on clear and when the kernel is gone", () => {
    const s = setQueued(streaming(), [{ requestId: "r2", message: u2 }]);
    expect(reduce(s, { type: FRAME.CHAT_CLEAR }).queued).toEqual([]);
    expect(disconnected(s, "gone").queued).toEqual([]);
  });
});
