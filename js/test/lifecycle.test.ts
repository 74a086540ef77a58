// @vitest-environment happy-dom
/** The panel in the notebook's life (issue 27 §1, §2): keys stay inside the panel; a panel whose
 * kernel is gone says so, disables its box, and never leaves a message looking sent. */
import { afterEach, describe, expect, it } from "vitest";
import { INTERRUPTED_EMPTY_NOTE, INTERRUPTED_NOTE } from "../src/parts";
import { FRAME } from "../src/protocol";
import { mount, unmountAll } from "./mount";

afterEach(unmountAll);

describe("keys pressed in the panel", () => {
  it("never reach the notebook: Lumino's shortcuts are suppressed and key events stop at the panel", async () => {
    const { el, $ } = await mount();
    const root = $(".think-panel")!;
    expect(root.getAttribute("data-lm-suppress-shortcuts")).toBe("true");
    const heard: string[] = [];
    const outside = (e: Event) => heard.push(`${e.type}:${(e as KeyboardEvent).key}`);
    el.addEventListener("keydown", outside);
    el.addEventListener("keyup", outside);
    const input = $<HTMLTextAreaElement>("textarea.think-input")!;
    for (const key of ["Enter", "Escape", "ArrowUp", "Tab", "a", "b", "d"]) {
      input.dispatchEvent(new KeyboardEvent("keydown", { key, shiftKey: key === "Enter", bubbles: true }));
      input.dispatchEvent(new KeyboardEvent("keyup", { key, bubbles: true }));
    }
    expect(heard).toEqual([]);
  });

  it("but Accel+S: replayed from outside the guard (with the keyCode Lumino's keymap reads), the browser's own save prevented", async () => {
    const { el, $, model } = await mount();
    const root = $(".think-panel")!;
    const heard: KeyboardEvent[] = [];
    el.addEventListener("keydown", (e) => heard.push(e));
    const input = $<HTMLTextAreaElement>("textarea.think-input")!;
    input.value = "draft";
    const sent = model.sent.length;
    for (const init of [{ ctrlKey: true }, { metaKey: true }, { ctrlKey: true, shiftKey: true }]) {
      const press = new KeyboardEvent("keydown", { key: "s", code: "KeyS", ...init, bubbles: true, cancelable: true });
      input.dispatchEvent(press);
      expect(press.defaultPrevented).toBe(true);
    }
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "s", code: "KeyS", ctrlKey: true, altKey: true, bubbles: true }));
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "s", code: "KeyS", bubbles: true }));
    expect(heard.map((e) => [e.keyCode, e.ctrlKey, e.metaKey, e.shiftKey, root.contains(e.target as Node)])).toEqual([
      [83, true, false, false, false],
      [83, false, true, false, false],
      [83, true, false, true, false],
    ]);
    expect(input.value).toBe("draft");
    expect(model.sent.length).toBe(sent);
  });
});

const user = (text: string) => ({ id: `u-${text}`, role: "user", parts: [{ type: "text", text }] });

describe("a panel whose kernel is gone", () => {
  it("says the kernel restarted, disables the box, and marks a message the kernel never stored as unsent", async () => {
    const { model, $, $$ } = await mount({ messages: [user("stored")] });
    const input = $<HTMLTextAreaElement>("textarea.think-input")!;
    input.value = "lost in the restart";
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect($(".think-panel")?.dataset.status).toBe("submitted");
    const sent = model.sent.length;

    model.trigger("comm_live_update"); // the widget manager: the session is restarting
    const root = $(".think-panel")!;
    expect(root.dataset.status).toBe("disconnected");
    expect(root.dataset.kernel).toBe("gone");
    expect($(".think-disconnected")?.hidden).toBe(false);
    expect($(".think-disconnected")?.textContent).toContain("The kernel restarted — run the cell again");
    expect(input.getAttribute("aria-disabled")).toBe("true"); // focusable, so the panel still holds the keys
    const typed = new InputEvent("beforeinput", { data: "x", inputType: "insertText", cancelable: true });
    input.dispatchEvent(typed);
    expect(typed.defaultPrevented).toBe(true); // what is typed there is refused
    expect(input.placeholder).toBe("The kernel restarted — run the cell again");
    expect($<HTMLButtonElement>("button.think-send")?.disabled).toBe(true);
    expect($("button.think-stop")?.hidden).toBe(true);
    const users = $$(".think-message[data-role=user]");
    expect(users.map((m) => m.dataset.unsent ?? "")).toEqual(["", "true"]); // the stored one is not marked
    expect(users[1].textContent).toContain("not sent");

    input.setAttribute("aria-disabled", "false"); // even if something re-enabled the box, nothing is sent
    input.value = "another";
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    $<HTMLButtonElement>("button.think-stop")!.click();
    expect(model.sent.length).toBe(sent);
    expect($$(".think-message[data-role=user]")).toHaveLength(2);
  });

  it("ends a reply streaming when the kernel went away with the note the reloaded panel shows under it", async () => {
    const { model, $$ } = await mount({ messages: [user("tell me")] });
    model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id: "r", done: false,
      chunks: [{ type: "start", messageId: "a1" }, { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "Half a rep" }] });
    const reply = () => $$(".think-message[data-role=assistant]");
    expect(reply()).toHaveLength(1);
    expect(reply()[0].dataset.live).toBe("true");
    expect(reply()[0].querySelector(".think-message-error")).toBeNull();
    model.trigger("comm_live_update"); // the kernel was killed: the server restarts it
    expect(reply()).toHaveLength(1);
    expect(reply()[0].dataset.live).toBeUndefined();
    expect(reply()[0].querySelector(".think-text")?.textContent?.trim()).toBe("Half a rep");
    expect(reply()[0].querySelector(".think-message-error")?.textContent).toBe(INTERRUPTED_NOTE);
  });

  it("says of a reply cut by a restart what the panel drawn after the restart says of the same reply", async () => {
    // Kernel ▸ Restart interrupts the kernel before it shuts it down: the kernel stores the reply `aborted`
    const { model, $$ } = await mount({ messages: [user("tell me")] });
    model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id: "r", done: false,
      chunks: [{ type: "start", messageId: "a1" }, { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "Half" }] });
    model.trigger("comm_live_update");
    const notes = (all: HTMLElement[]) => all.map((e) => e.textContent);
    const old = notes($$(".think-message[data-role=assistant] :is(.think-message-error, .think-stopped)"));
    const stored = { id: "a1", role: "assistant", parts: [{ type: "text", text: "Half" }], metadata: { aborted: true } };
    const after = await mount({ messages: [user("tell me"), stored] });
    expect(notes(after.$$(".think-message[data-role=assistant] :is(.think-message-error, .think-stopped)"))).toEqual(old);
    expect(old).toEqual([INTERRUPTED_NOTE]);
  });

  it("says a reply cut before the model sent anything was interrupted before the model answered", async () => {
    const { model, $$ } = await mount({ messages: [user("tell me")] });
    model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id: "r", done: false, chunks: [{ type: "start", messageId: "a1" }] });
    model.trigger("comm:close");
    const errors = $$(".think-message[data-role=assistant] .think-message-error").map((e) => e.textContent);
    expect(errors).toEqual([INTERRUPTED_EMPTY_NOTE]);
  });

  it("leaves a reply that had finished as it was", async () => {
    const { model, $$ } = await mount({ messages: [user("tell me")] });
    model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id: "r", done: true,
      chunks: [{ type: "start", messageId: "a1" }, { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "Whole." },
        { type: "text-end", id: "t" }, { type: "finish" }] });
    model.trigger("comm_live_update");
    expect($$(".think-message-error")).toEqual([]);
  });

  it("a send that throws (the comm was disposed) leaves the message unsent, not submitted", async () => {
    const { model, $, $$ } = await mount();
    (model as unknown as { send: () => void }).send = () => {
      throw new Error("Cannot send");
    };
    const input = $<HTMLTextAreaElement>("textarea.think-input")!;
    input.value = "hello?";
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect($(".think-panel")?.dataset.status).toBe("disconnected");
    expect($(".think-disconnected")?.textContent).toContain("run the cell again");
    const users = $$(".think-message[data-role=user]");
    expect(users).toHaveLength(1);
    expect(users[0].dataset.unsent).toBe("true");
    expect(input.getAttribute("aria-disabled")).toBe("true");
  });

  it("disables every control that needs the kernel: Regenerate, versions, Continue, Approve / Deny, Undo", async () => {
    const gated = { type: "tool-delete_file", toolCallId: "c1", state: "approval-requested", input: { path: "/tmp/x" }, approval: { id: "ap1" } };
    const ran = { type: "tool-run_code", toolCallId: "c0", state: "output-available", input: { code: "x = 1" },
      output: { type: "kernel-run", code: "x = 1", outputs: [], duration_ms: 3, edited: false, undoable: true, undone: false,
        changes: { bound: ["x"], rebound: [], deleted: [], mutated: [] } } };
    const answered = [user("one"), { id: "a1", role: "assistant", parts: [ran] },
      user("two"), { id: "a2", role: "assistant", parts: [{ type: "text", text: "Second" }] }];
    const annotations = { branches: { a2: { index: 1, count: 2, ids: ["a0", "a2"] } }, finish: { a2: "length" } };
    const cases = [
      [{ messages: answered, annotations }, ["regenerate", "version-prev", "continue", "undo"]],
      [{ messages: [user("one"), { id: "a1", role: "assistant", parts: [gated] }] }, ["approve", "deny"]],
    ] as const;
    for (const [traits, names] of cases) {
      const { model, $, $$ } = await mount(traits);
      const enabled = () => names.filter((n) => $<HTMLButtonElement>(`button.think-${n}`)?.disabled === false);
      expect(enabled()).toEqual(names); // drawn and live

      model.trigger("comm_live_update"); // Kernel ▸ Restart
      expect($(".think-panel")?.dataset.status).toBe("disconnected");
      expect(enabled()).toEqual([]);
      expect(names.filter((n) => !$(`button.think-${n}`))).toEqual([]); // still shown, just disabled
      const sent = model.sent.length;
      for (const b of $$(".think-message button") as HTMLButtonElement[]) b.click(); // a disabled button sends nothing
      expect(model.sent.length).toBe(sent);
      unmountAll();
    }
  });

  it("a live kernel's panel shows no notice", async () => {
    const { $ } = await mount();
    expect($(".think-disconnected")?.hidden).toBe(true);
    expect($(".think-panel")?.dataset.kernel).toBe("live");
    expect($<HTMLTextAreaElement>("textarea.think-input")?.getAttribute("aria-disabled")).toBe("false");
  });
});

describe("a message the agent refuses", () => {
  const WHY = "A panel request's message has role 'system': send it as the user.";
  const reply = (id: string, text: string) => ({ id, role: "assistant", parts: [{ type: "text", text }] });
  const send = (input: HTMLTextAreaElement, text: string) => {
    input.value = text;
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
  };
  const refuse = (model: { fromKernel(m: unknown): void; set(k: string, v: unknown): void }, id: string) => {
    model.fromKernel({ type: FRAME.USE_CHAT_RESPONSE, id, chunks: [{ type: "error", errorText: WHY }], done: true,
      error: true, refused: true });
    model.set("error", WHY); // the kernel's error trait (hub.fail) says the same
  };

  it("stays where it was typed, marked not sent with why, the error said once, and no reply drawn", async () => {
    const { model, el, $, $$ } = await mount({ messages: [user("stored"), reply("a0", "Hi.")] });
    const input = $<HTMLTextAreaElement>("textarea.think-input")!;
    send(input, "forged?");
    const request = (model.sent.at(-1) as { id: string }).id;
    refuse(model, request);
    expect($(".think-panel")?.dataset.status).toBe("ready");
    const users = $$(".think-message[data-role=user]");
    expect(users.map((u) => u.dataset.unsent ?? "")).toEqual(["", "true"]);
    expect(users[1].querySelector(".think-unsent")?.textContent).toBe(`not sent: ${WHY}`);
    expect($$(".think-message[data-role=assistant]")).toHaveLength(1); // no empty reply holding the error
    expect($<HTMLElement>(".think-error")?.hidden).toBe(true); // the banner does not say it again
    const shown = $$("*").filter((e) => !e.closest("[hidden]") && e.children.length === 0 && e.textContent?.includes(WHY));
    expect(shown).toHaveLength(1);
    expect(el.querySelector(".think-message-error")).toBeNull();

    // the conversation goes on below it: the refused message keeps its place
    send(input, "plain question");
    const asked = (model.sent.at(-1) as { messages: { id: string }[] }).messages.at(-1)!; // stored as the view sent it
    model.set("messages", [user("stored"), reply("a0", "Hi."), asked, reply("a1", "Answer.")]);
    const order = $$(".think-message").map((m) => `${m.dataset.role}:${m.querySelector(".think-text")?.textContent?.trim()}`);
    expect(order).toEqual(["user:stored", "assistant:Hi.", "user:forged?", "user:plain question", "assistant:Answer."]);
    expect($$(".think-message[data-unsent=true]")).toHaveLength(1);
  });

  it("of another view (nothing of it here) is said in the banner only", async () => {
    const { model, $, $$ } = await mount({ messages: [user("stored")] });
    refuse(model, "someone-elses");
    expect($<HTMLElement>(".think-error")?.hidden).toBe(false);
    expect($(".think-error")?.textContent).toBe(WHY);
    expect($$(".think-message")).toHaveLength(1);
    expect($$(".think-message-error")).toEqual([]);
  });
});
