// @vitest-environment happy-dom
/** The panel in the notebook's life (issue 27 §1, §2): keys stay inside the panel; a panel whose
 * kernel is gone says so, disables its box, and never leaves a message looking sent. */
import { afterEach, describe, expect, it } from "vitest";
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
});
