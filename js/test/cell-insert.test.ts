// @vitest-environment happy-dom
/**
 * "Into a cell" on a run_code card: with think-nb-cells (the real plugin module, on an app whose shell
 * holds one notebook panel around the widget) the click inserts a cell below the panel's cell and copies
 * nothing; without it (marimo, VS Code, a saved notebook) the code goes to the clipboard and the card says so.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import plugin, { type AppLike, handle } from "../cells/src/index";
import { INSERT_CELL_EVENT, requestCell } from "../src/cell-insert";
import { mount, unmountAll } from "./mount";

const CODE = 'import math\nprint("π ≈", round(math.pi, 3))\n';
const user = { id: "u1", role: "user", parts: [{ type: "text", text: "Compute pi" }] };
const call = (state: string, extra: Record<string, unknown> = {}) => ({
  type: "tool-run_code", toolCallId: "c1", state, input: { code: CODE }, ...extra,
});
const reply = (...parts: unknown[]) => ({ id: "a1", role: "assistant", parts });

const listeners: ((e: Event) => void)[] = [];
afterEach(() => {
  unmountAll();
  for (const l of listeners.splice(0)) document.removeEventListener(INSERT_CELL_EVENT, l);
  vi.restoreAllMocks();
  Reflect.deleteProperty(globalThis.navigator, "clipboard");
  Reflect.deleteProperty(document, "execCommand");
});

function clipboard(writeText: (text: string) => Promise<void> = async () => {}) {
  const spy = vi.fn(writeText);
  Object.defineProperty(globalThis.navigator, "clipboard", { value: { writeText: spy }, configurable: true });
  return spy;
}

/** A notebook of three cells whose middle one holds the panel's element `el`, behind the real plugin. */
function notebookAround(el: HTMLElement) {
  const inserted: [number, Record<string, unknown>][] = [];
  const panelNode = document.createElement("div");
  const cells = [0, 1, 2].map(() => ({ node: document.createElement("div") }));
  el.replaceWith(panelNode);
  panelNode.append(...cells.map((c) => c.node));
  cells[1].node.append(el);
  const panel = {
    node: panelNode,
    content: { widgets: cells, activeCellIndex: 1, model: { sharedModel: { insertCell: (i: number, c: Record<string, unknown>) => inserted.push([i, c]) } } },
  };
  const app: AppLike = { shell: { widgets: () => [panel][Symbol.iterator](), currentWidget: panel } };
  const add = document.addEventListener.bind(document);
  vi.spyOn(document, "addEventListener").mockImplementation((type: string, l: unknown, o?: unknown) => {
    if (type === INSERT_CELL_EVENT) listeners.push(l as (e: Event) => void);
    add(type, l as EventListener, o as AddEventListenerOptions);
  });
  plugin.activate(app);
  return { inserted, panel };
}

describe("Into a cell", () => {
  it("a run_code card shows its code and the button; execute cards and streaming input get no button", async () => {
    const { $, $$ } = await mount({
      messages: [user, reply(call("output-available", { output: "π ≈ 3.142" }),
        { type: "tool-execute", toolCallId: "c2", state: "output-available", input: { code: "1 + 1" }, output: 2 },
        { type: "tool-run_code", toolCallId: "c3", state: "input-streaming" })],
    });
    const card = $(".think-tool[data-tool-name=run_code]")!;
    expect(card.querySelector(".think-tool-input code.language-python")?.textContent).toBe(CODE);
    expect(card.querySelector("button.think-into-cell")?.textContent).toBe("Into a cell");
    expect($$("button.think-into-cell")).toHaveLength(1);
  });

  it("offers the button while the call waits for approval and after it is denied", async () => {
    const { $$ } = await mount({
      messages: [user, reply(call("approval-requested", { approval: { id: "p1" } }),
        { ...call("output-denied", { approval: { id: "p2", approved: false } }), toolCallId: "c9" })],
    });
    expect($$(".think-tool[data-tool-name=run_code] button.think-into-cell")).toHaveLength(2);
  });

  it("with the extension: the click inserts exactly the code below the panel's cell, copies nothing", async () => {
    const writeText = clipboard();
    const { el, $, model } = await mount({ messages: [user, reply(call("output-available", { output: "ok" }))] });
    const { inserted, panel } = notebookAround(el);
    $<HTMLButtonElement>("button.think-into-cell")!.click();
    await vi.waitFor(() => expect($(".think-tool")?.dataset.intoCell).toBe("inserted"));
    expect(inserted).toEqual([[2, { cell_type: "code", source: CODE, metadata: {} }]]);
    expect(panel.content.activeCellIndex).toBe(2);
    expect(writeText).not.toHaveBeenCalled();
    expect($(".think-into-cell-note")?.textContent).toBe("added as a new cell below the panel");
    model.set("messages", [user, reply(call("output-available", { output: "ok" })), { ...user, id: "u2" }]);
    expect($(".think-tool")?.dataset.intoCell).toBe("inserted"); // a rebuilt card still says what happened
    expect($(".think-into-cell-note")?.textContent).toBe("added as a new cell below the panel");
  });

  it("puts in the cell what ran (an edited approval's code), not what the model proposed", async () => {
    const writeText = clipboard();
    const ran = "print('edited')\n";
    const { $$ } = await mount({
      messages: [user, reply(
        call("output-available", { approval: { id: "p1", approved: true, input: { code: ran } },
                                   output: { type: "kernel-run", code: ran, edited: true, stdout: "edited\n" } }),
        { ...call("approval-responded", { approval: { id: "p2", approved: true, input: { code: "x = 2" } } }), toolCallId: "c2" },
        { ...call("output-error", { errorText: "NameError" }), toolCallId: "c3" })],
    });
    const buttons = $$("button.think-into-cell");
    for (const button of buttons) button.click();
    await vi.waitFor(() => expect(writeText).toHaveBeenCalledTimes(3));
    expect(writeText.mock.calls.map(([text]) => text)).toEqual([ran, "x = 2", CODE]);
  });

  it("without the extension: the code goes to the clipboard and the card says to paste it", async () => {
    const writeText = clipboard();
    const { $ } = await mount({ messages: [user, reply(call("output-available", { output: "ok" }))] });
    $<HTMLButtonElement>("button.think-into-cell")!.click();
    await vi.waitFor(() => expect($(".think-tool")?.dataset.intoCell).toBe("copied"));
    expect(writeText).toHaveBeenCalledWith(CODE);
    expect($(".think-into-cell-note")?.textContent).toBe("copied — paste it into a cell");
  });

  it("when neither works, the card says to copy the code by hand", async () => {
    clipboard(async () => {
      throw new DOMException("denied", "NotAllowedError");
    });
    const execCommand = vi.fn(() => false); // the textarea fallback fails too
    Object.defineProperty(document, "execCommand", { value: execCommand, configurable: true });
    const { $ } = await mount({ messages: [user, reply(call("output-available", { output: "ok" }))] });
    $<HTMLButtonElement>("button.think-into-cell")!.click();
    await vi.waitFor(() => expect($(".think-tool")?.dataset.intoCell).toBe("failed"));
    expect(execCommand).toHaveBeenCalledWith("copy");
    expect($(".think-into-cell-note")?.textContent).toBe("could not copy — select the code above and copy it");
  });

  it("the extension leaves alone a request from outside a notebook cell and malformed requests", async () => {
    const { el } = await mount({ messages: [] });
    const { inserted } = notebookAround(el);
    const outside = document.createElement("button");
    document.body.append(outside);
    expect(requestCell(outside, "x = 1")).toBe(false); // e.g. a cloned output view: not a cell of a notebook
    const bad = new CustomEvent(INSERT_CELL_EVENT, { bubbles: true, cancelable: true, detail: { code: 42, handled: false } });
    el.dispatchEvent(bad);
    expect(bad.defaultPrevented).toBe(false);
    expect(inserted).toEqual([]);
    expect(requestCell(el, "x = 1")).toBe(true);
    expect(inserted.map(([i, c]) => [i, c.source])).toEqual([[2, "x = 1"]]);
  });

  it("a notebook that refuses the insert leaves the request unacknowledged (the card copies instead)", () => {
    const node = document.createElement("div");
    const cell = { node: document.createElement("div") };
    node.append(cell.node);
    document.body.append(node);
    const refusing = { node, content: { widgets: [cell], activeCellIndex: 0, model: { sharedModel: { insertCell: () => { throw new Error("read-only"); } } } } };
    const app: AppLike = { shell: { widgets: () => [refusing][Symbol.iterator]() } };
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const detail = { code: "y = 2", handled: false };
    const event = new CustomEvent(INSERT_CELL_EVENT, { bubbles: true, cancelable: true, detail });
    cell.node.addEventListener(INSERT_CELL_EVENT, (e) => handle(app, e));
    cell.node.dispatchEvent(event);
    expect([detail.handled, event.defaultPrevented]).toEqual([false, false]);
  });
});
