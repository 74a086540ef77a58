// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from "vitest";
import { blockUsage, createContextTab, sessionChoices } from "../src/context-tab";
import { FRAME, type SessionFrame, type SessionState } from "../src/protocol";
import { initialState, reduce, setMemory } from "../src/state";
import { frame } from "./frames";
import { mount, unmountAll } from "./mount";

const golden = (): SessionFrame => frame<SessionFrame>("session");
afterEach(unmountAll);

describe("context tab state", () => {
  it("a session frame replaces the memory; other frames keep it", () => {
    const s1 = reduce(initialState(), golden());
    const { type: _t, ...rest } = golden();
    expect(s1.memory).toEqual(rest);
    expect(reduce(s1, { type: FRAME.CHAT_CLEAR }).memory).toBe(s1.memory);
  });

  it("the session_state trait seeds the memory; {} leaves it null", () => {
    expect(setMemory(initialState(), {}).memory).toBeNull();
    expect(setMemory(initialState(), golden()).memory?.blocks).toHaveLength(2);
  });

  it("usage: percent from the kernel, computed and clamped otherwise, none without a limit", () => {
    expect(blockUsage(golden().blocks[0])).toEqual({ tokens: 9, max: 200, percent: 4.5, text: "9 / 200 tokens (4.5%)" });
    expect(blockUsage({ label: "x", tokens: 30, max_tokens: 20 }).percent).toBe(100);
    expect(blockUsage({ label: "x", tokens: 5, max_tokens: 40 }).percent).toBe(12.5);
    expect(blockUsage(golden().blocks[1])).toMatchObject({ percent: null, text: "5 tokens" });
  });

  it("session choices name the default session and select the active one", () => {
    const memory: SessionState = { ...golden(), session: "ses-1a2b" };
    expect(sessionChoices(memory)).toEqual([
      { value: "", label: "default", selected: false },
      { value: "ses-1a2b", label: "experiments", selected: true },
    ]);
    expect(sessionChoices({ session: "", blocks: [] })).toEqual([{ value: "", label: "default", selected: true }]);
  });
});

describe("context tab DOM", () => {
  it("draws a card per block with a usage bar and keeps an expanded block open", () => {
    const switched: string[] = [];
    const tab = createContextTab({ switchSession: (id) => switched.push(id) });
    document.body.append(tab.el);
    tab.update(golden());
    const card = tab.el.querySelector<HTMLElement>(".think-context-block[data-label=memory]")!;
    const bar = card.querySelector<HTMLElement>(".think-context-usage")!;
    expect(bar.dataset.percent).toBe("4.5");
    expect(bar.querySelector<HTMLElement>(".think-context-usage-fill")!.style.width).toBe("4.5%");
    expect(card.querySelector(".think-context-text")?.textContent).toBe("The user's name is Ada.");
    expect(tab.el.querySelector<HTMLElement>(".think-context-block[data-label=rules] .think-context-usage")!.hidden).toBe(true);
    card.querySelector<HTMLDetailsElement>("details")!.open = true;
    card.querySelector("details")!.dispatchEvent(new Event("toggle"));
    const next = golden();
    next.blocks[0] = { ...next.blocks[0], content: "Ada likes tea.", tokens: 100, percent_used: 50 };
    tab.update(next);
    const again = tab.el.querySelector<HTMLElement>(".think-context-block[data-label=memory]")!;
    expect(again.querySelector<HTMLElement>(".think-context-usage")!.dataset.percent).toBe("50");
    expect(again.querySelector<HTMLDetailsElement>("details")!.open).toBe(true);
    const select = tab.el.querySelector<HTMLSelectElement>(".think-session-select")!;
    expect(Array.from(select.options, (o) => o.textContent)).toEqual(["default", "experiments"]);
    select.value = "ses-1a2b";
    select.dispatchEvent(new Event("change"));
    expect(switched).toEqual(["ses-1a2b"]);
  });
  it("a frame updates a card in place: the summary a press started on is the one the release ends on", () => {
    const tab = createContextTab({ switchSession: () => {} });
    document.body.append(tab.el);
    tab.update(golden());
    const card = tab.el.querySelector<HTMLElement>(".think-context-block[data-label=memory]")!;
    const summary = card.querySelector("summary")!;
    const next = golden();
    next.blocks[0] = { ...next.blocks[0], content: "Ada likes tea.", tokens: 100, percent_used: 50 };
    tab.update(next); // the frame lands between mousedown and mouseup
    const now = tab.el.querySelector<HTMLElement>(".think-context-block[data-label=memory]")!;
    expect(now).toBe(card);
    expect(now.querySelector("summary")).toBe(summary);
    expect(summary.isConnected).toBe(true);
    expect(now.querySelector(".think-context-text")!.textContent).toBe("Ada likes tea.");
    expect(now.querySelector<HTMLElement>(".think-context-usage")!.dataset.percent).toBe("50");
    expect(now.querySelectorAll(".think-context-usage")).toHaveLength(1); // redrawn, not appended
    expect(now.lastElementChild?.tagName).toBe("DETAILS");
    summary.click();
    tab.update(golden()); // the user's click survives the next frame too
    expect(now.querySelector<HTMLDetailsElement>("details")!.open).toBe(true);
    const gone = golden();
    gone.blocks = gone.blocks.slice(1);
    tab.update(gone);
    expect(Array.from(tab.el.querySelectorAll<HTMLElement>(".think-context-block"), (b) => b.dataset.label)).toEqual(["rules"]);
    tab.update(golden());
    const back = tab.el.querySelector<HTMLElement>(".think-context-block[data-label=memory]")!;
    expect(back).not.toBe(card);
    expect(Array.from(tab.el.querySelectorAll<HTMLElement>(".think-context-block"), (b) => b.dataset.label)).toEqual(["memory", "rules"]);
  });
  it("the session select is redrawn only when the sessions change, and a refused switch snaps back", () => {
    const tab = createContextTab({ switchSession: () => {} });
    document.body.append(tab.el);
    tab.update(golden());
    const select = tab.el.querySelector<HTMLSelectElement>(".think-session-select")!;
    const first = select.options[0];
    tab.update({ ...golden(), tokenEstimate: 99 });
    expect(select.options[0]).toBe(first);
    select.value = "ses-1a2b"; // the user picks; the kernel refuses and re-sends the default
    tab.update({ ...golden(), tokenEstimate: 100 });
    expect(select.value).toBe("");
    tab.update({ ...golden(), session: "ses-1a2b" });
    expect(select.value).toBe("ses-1a2b");
    expect(select.options[0]).not.toBe(first);
  });
});

describe("context tab in the panel", () => {
  it("the Context tab shows the blocks, updates on a session frame, and switching sends session_switch", async () => {
    const { model, el } = await mount({ uid: "ctx", agent_name: "calc", db_path: "", session_state: {} }, false);
    const context = el.querySelector<HTMLElement>(".think-context")!;
    expect(context.hidden).toBe(true);
    el.querySelector<HTMLButtonElement>(".think-tab[data-tab=context]")!.click();
    expect(context.hidden).toBe(false);
    expect(el.querySelector<HTMLElement>(".think-messages")!.hidden).toBe(true);
    expect(context.querySelectorAll(".think-context-block")).toHaveLength(0);
    model.fromKernel(golden());
    expect(context.querySelector(".think-context-block[data-label=memory] .think-context-text")?.textContent).toBe("The user's name is Ada.");
    const select = context.querySelector<HTMLSelectElement>(".think-session-select")!;
    select.value = "ses-1a2b";
    select.dispatchEvent(new Event("change"));
    expect(model.sent.at(-1)).toEqual({ type: FRAME.SESSION_SWITCH, session: "ses-1a2b" });
  });
});
