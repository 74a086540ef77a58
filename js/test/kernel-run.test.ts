// @vitest-environment jsdom
/**
 * The `run_code` card (kernel-run.ts) and Stop's kernel interrupt (interrupt.ts), on the mounted
 * panel: the approval card shows the code and lets it be edited (kept across rebuilds), Approve
 * sends the edited input only when it changed, the finished card shows what ran (text, tables,
 * validated PNG figures, sanitised HTML, names changed, in-place changes) with Undo, and Stop
 * asks Jupyter Server to interrupt the kernel while a run_code call runs.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { interruptKernel, jupyterServer, xsrfToken } from "../src/interrupt";
import { kernelRunOf, pngDataUrl } from "../src/kernel-run";
import { FRAME } from "../src/protocol";
import { mount, unmountAll } from "./mount";

// a 1x1 PNG
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const user = { id: "u1", role: "user", parts: [{ type: "text", text: "Plot df" }] };
const CODE = "import matplotlib\ndf.plot()";

const call = (state: string, extra: Record<string, unknown> = {}) => ({
  type: "tool-run_code", toolCallId: "c1", state, input: { code: CODE }, approval: { id: "ap" }, ...extra,
});
const assistant = (part: unknown) => ({ id: "a1", role: "assistant", parts: [part] });
const run = (extra: Record<string, unknown> = {}) => ({
  type: "kernel-run", code: CODE, edited: false, stdout: "", stderr: "", result: null, outputs: [],
  changes: { bound: [], rebound: [], deleted: [], mutated: [] }, undoable: false, undone: false, duration_ms: 12, ...extra,
});
const sentOf = (model: { sent: unknown[] }, type: string) => model.sent.filter((m) => (m as { type: string }).type === type);

afterEach(() => {
  unmountAll();
  document.getElementById("jupyter-config-data")?.remove();
  vi.unstubAllGlobals();
});

describe("the run_code approval card", () => {
  it("shows the code highlighted; Approve without an edit sends no input", async () => {
    const { model, $ } = await mount({ status: "awaiting-approval", messages: [user, assistant(call("approval-requested", { toolCallId: "c0" }))] });
    const card = $(".think-tool[data-tool-name=run_code]")!;
    const code = card.querySelector(".think-tool-input pre.think-code code.hljs")!;
    expect(code.textContent).toBe(CODE);
    expect(code.querySelector(".hljs-keyword")?.textContent).toBe("import");
    expect(card.querySelector("button.think-edit")).not.toBeNull();
    card.querySelector<HTMLButtonElement>("button.think-approve")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.TOOL_APPROVAL, toolCallId: "c0", approved: true });
  });

  it("Edit turns it into a code box that survives rebuilds (value, focus, caret); Approve sends the edited code", async () => {
    const part = call("approval-requested");
    const { model, $ } = await mount({ status: "awaiting-approval", messages: [user, assistant(part)] });
    $<HTMLButtonElement>("button.think-edit")!.click();
    const box = $<HTMLTextAreaElement>("textarea.think-code-edit")!;
    expect(box.value).toBe(CODE);
    expect(document.activeElement).toBe(box);
    expect($("pre.think-code")).toBeNull();
    box.value = "df.plot(kind='bar')";
    box.dispatchEvent(new Event("input"));
    box.setSelectionRange(8, 8);
    model.set("messages", [user, assistant({ ...part })]); // the transcript again: the card is rebuilt
    const now = $<HTMLTextAreaElement>("textarea.think-code-edit")!;
    expect(now).not.toBe(box);
    expect(now.value).toBe("df.plot(kind='bar')");
    expect(document.activeElement).toBe(now);
    expect([now.selectionStart, now.selectionEnd]).toEqual([8, 8]);
    $<HTMLButtonElement>("button.think-approve")!.click();
    expect(model.sent.at(-1)).toEqual({
      type: FRAME.TOOL_APPROVAL, toolCallId: "c1", approved: true, input: { code: "df.plot(kind='bar')" },
    });
    // answered: the code it runs is shown, edited, and nothing is editable any more
    expect($("textarea.think-code-edit")).toBeNull();
    expect($("button.think-edit")).toBeNull();
    expect($("pre.think-code")?.textContent).toBe("df.plot(kind='bar')");
    expect($(".think-run-edited")?.textContent).toBe("edited");
    // the kernel keeps the model's input and records the edited one on the approval
    model.set("status", "streaming");
    model.set("messages", [user, assistant(call("approval-responded", { approval: { id: "ap", approved: true, input: { code: "df.plot(kind='bar')" } } }))]);
    const card = $(".think-tool[data-tool-name=run_code]")!;
    expect(card.querySelector(".think-run-edited")?.textContent).toBe("edited");
    expect(card.querySelector("pre.think-code")?.textContent).toBe("df.plot(kind='bar')");
  });

  it("an edit put back as it was, or discarded, approves the model's code", async () => {
    const part = call("approval-requested", { toolCallId: "c2" });
    const { model, $ } = await mount({ status: "awaiting-approval", messages: [user, assistant(part)] });
    $<HTMLButtonElement>("button.think-edit")!.click();
    const box = $<HTMLTextAreaElement>("textarea.think-code-edit")!;
    box.value = "1/0";
    box.dispatchEvent(new Event("input"));
    $<HTMLButtonElement>("button.think-edit-discard")!.click();
    expect($("textarea.think-code-edit")).toBeNull();
    expect($("pre.think-code")?.textContent).toBe(CODE);
    $<HTMLButtonElement>("button.think-approve")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.TOOL_APPROVAL, toolCallId: "c2", approved: true });
  });
});

describe("the finished run_code card", () => {
  it("shows printed text, the result, tables, a PNG figure, names changed and in-place changes", async () => {
    const output = run({
      edited: true, stdout: "hello\n", stderr: "careful\n", result: "42",
      outputs: [
        { mime: "text/plain", data: "<Axes: >" },
        { mime: "image/png", data: PNG },
        { mime: "table", data: { type: "table", kind: "DataFrame", shape: [2, 1], markdown: "| | a |\n|---|---|\n| 0 | 1 |\n| 1 | 2 |" } },
        { mime: "text/html", data: '<b>bold</b><img src=x onerror="alert(1)"><script>alert(2)</script>' },
      ],
      changes: { bound: ["fig"], rebound: ["df"], deleted: ["tmp"], mutated: ["rows"] }, undoable: true,
    });
    const { $ } = await mount({ messages: [user, assistant(call("output-available", { output }))] });
    const card = $(".think-tool[data-tool-name=run_code]")!;
    expect(card.querySelector(".think-run-edited")?.textContent).toBe("edited");
    expect(card.querySelector("pre.think-code")?.textContent).toBe(CODE);
    expect(card.querySelector("pre.think-run-stdout")?.textContent).toBe("hello\n");
    expect(card.querySelector("pre.think-run-stderr")?.textContent).toBe("careful\n");
    expect(card.querySelector("pre.think-run-result")?.textContent).toBe("42");
    expect(card.querySelector("pre.think-run-text")?.textContent).toBe("<Axes: >");
    expect(card.querySelector<HTMLImageElement>("img.think-run-image")?.getAttribute("src")).toBe(`data:image/png;base64,${PNG}`);
    expect(card.querySelectorAll(".think-data-table table td").length).toBeGreaterThan(0);
    const html = card.querySelector(".think-run-html")!;
    expect(html.querySelector("b")?.textContent).toBe("bold");
    expect(html.querySelector("script")).toBeNull();
    expect(html.innerHTML).not.toContain("onerror");
    expect(html.querySelector("img")).toBeNull(); // a fetched image becomes a link, never a request
    expect(card.querySelector(".think-run-changes")?.textContent).toBe("names changed: bound fig · rebound df · deleted tmp");
    expect(card.querySelector(".think-run-mutated")?.textContent).toBe("changed in place: rows — cannot be undone");
  });

  it("Undo sends tool_undo once; the stored output's undone makes it read Undone, disabled (as after a reload)", async () => {
    const output = run({ changes: { bound: [], rebound: ["df"], deleted: [], mutated: ["rows"] }, undoable: true });
    const { model, $ } = await mount({ messages: [user, assistant(call("output-available", { output }))] });
    const undo = $<HTMLButtonElement>("button.think-undo")!;
    expect(undo.textContent).toBe("Undo");
    undo.click();
    undo.click();
    expect(sentOf(model, FRAME.TOOL_UNDO)).toEqual([{ type: FRAME.TOOL_UNDO, toolCallId: "c1" }]);
    expect($<HTMLButtonElement>("button.think-undo")!.disabled).toBe(true);
    const undone = { ...output, undone: true, undoable: false, undo_note: "restored: df; changed in place: rows -- cannot be undone" };
    model.fromKernel({ type: FRAME.MESSAGE_UPDATED, message: assistant(call("output-available", { output: undone })) });
    const after = $<HTMLButtonElement>("button.think-undo")!;
    expect([after.textContent, after.disabled]).toEqual(["Undone", true]);
    expect($(".think-tool[data-tool-name=run_code]")?.dataset.undone).toBe("true");
    expect($(".think-run-undo-note")?.textContent).toContain("restored: df");
    expect($(".think-run-mutated")?.textContent).toBe("changed in place: rows — cannot be undone");
    unmountAll();
    const reloaded = await mount({ messages: [user, assistant(call("output-available", { output: undone }))] });
    expect([reloaded.$("button.think-undo")?.textContent, reloaded.$<HTMLButtonElement>("button.think-undo")?.disabled]).toEqual(["Undone", true]);
  });

  it("a refused undo (an error) gives the button back", async () => {
    const output = run({ changes: { bound: ["x"], rebound: [], deleted: [], mutated: [] }, undoable: true });
    const { model, $ } = await mount({ messages: [user, assistant(call("output-available", { output }))] });
    $<HTMLButtonElement>("button.think-undo")!.click();
    expect($<HTMLButtonElement>("button.think-undo")!.disabled).toBe(true);
    model.set("error", "undo refused: x was rebound since");
    expect($<HTMLButtonElement>("button.think-undo")!.disabled).toBe(false);
  });

  it("no Undo when nothing can be put back", async () => {
    const { $ } = await mount({ messages: [user, assistant(call("output-available", { output: run({ stdout: "hi" }) }))] });
    expect($("button.think-undo")).toBeNull();
    expect($("pre.think-run-stdout")?.textContent).toBe("hi");
  });

  it("shows an image only when its data is base64 PNG", async () => {
    const bad = [
      "javascript:alert(1)", `data:image/png;base64,${PNG}`, "R0lGODlhAQABAAAAACw=", `${PNG}"><script>`, 7,
      PNG.slice(0, -1),
    ];
    const outputs = bad.map((data) => ({ mime: "image/png", data }));
    const { $, $$ } = await mount({ messages: [user, assistant(call("output-available", { output: run({ outputs }) }))] });
    expect($("img")).toBeNull();
    expect($$(".think-run-rejected")).toHaveLength(bad.length);
  });

  it("pngDataUrl accepts base64 PNG with line breaks and nothing else; kernelRunOf checks the shape", () => {
    const wrapped = `${PNG.slice(0, 40)}\n${PNG.slice(40)}`;
    expect(pngDataUrl(wrapped)).toBe(`data:image/png;base64,${PNG}`);
    expect(pngDataUrl("/9j/4AAQSkZJRg==")).toBeNull(); // JPEG
    expect(pngDataUrl(null)).toBeNull();
    expect(kernelRunOf({ type: "kernel-run" })).toBeNull();
    expect(kernelRunOf("kernel-run")).toBeNull();
    const parsed = kernelRunOf({ type: "kernel-run", code: "x", changes: { bound: ["a", 3] }, outputs: [{ mime: 1 }, { mime: "text/plain", data: "t" }] });
    expect(parsed?.changes).toEqual({ bound: ["a"], rebound: [], deleted: [], mutated: [] });
    expect(parsed?.outputs).toEqual([{ mime: "text/plain", data: "t" }]);
  });
});

describe("Stop while run_code runs", () => {
  const config = (data: Record<string, unknown>) => {
    const el = document.createElement("script");
    el.id = "jupyter-config-data";
    el.type = "application/json";
    el.textContent = JSON.stringify(data);
    document.body.append(el);
  };
  const running = [user, assistant(call("approval-responded", { approval: { id: "ap", approved: true } }))];

  it("asks Jupyter Server to interrupt the kernel, with the token and the _xsrf cookie, and cancels the turn", async () => {
    config({ baseUrl: "/user/ada/", token: "tok" });
    document.cookie = "_xsrf=2|abc|def|123";
    const fetcher = vi.fn(async () => new Response(null, { status: 204 }));
    vi.stubGlobal("fetch", fetcher);
    const { model, $ } = await mount({ status: "streaming", messages: running, kernel_id: "k-1", annotations: { active: ["r1"] } });
    $<HTMLButtonElement>("button.think-stop")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.CHAT_REQUEST_CANCEL, id: "r1" });
    expect(fetcher).toHaveBeenCalledOnce();
    const [url, init] = fetcher.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/user/ada/api/kernels/k-1/interrupt");
    expect(init.method).toBe("POST");
    expect(init.headers).toEqual({ Authorization: "token tok", "X-XSRFToken": "2|abc|def|123" });
    expect($(".think-notice")?.textContent).toBe("interrupting the kernel…");
    await vi.waitFor(() => expect($(".think-notice")?.hidden).toBe(true));
  });

  it("interrupts the kernel when Stop follows Approve before the kernel's update of the part", async () => {
    config({ baseUrl: "/" });
    const fetcher = vi.fn(async () => new Response(null, { status: 204 }));
    vi.stubGlobal("fetch", fetcher);
    const asked = [user, assistant(call("approval-requested", { approval: { id: "ap" } }))];
    const { $ } = await mount({ status: "streaming", messages: asked, kernel_id: "k-1", annotations: { active: ["r1"] } });
    $<HTMLButtonElement>("button.think-approve")!.click(); // the continuation starts; its part update is on the way
    $<HTMLButtonElement>("button.think-stop")!.click();
    expect(fetcher).toHaveBeenCalledOnce();
    expect((fetcher.mock.calls[0] as unknown as [string])[0]).toBe("/api/kernels/k-1/interrupt");
  });

  it("does not interrupt the kernel when no run_code call runs", async () => {
    config({ baseUrl: "/" });
    const fetcher = vi.fn(async () => new Response(null, { status: 204 }));
    vi.stubGlobal("fetch", fetcher);
    const other = [user, assistant({ ...call("input-available"), type: "tool-add" })];
    const { model, $ } = await mount({ status: "streaming", messages: other, kernel_id: "k-1", annotations: { active: ["r1"] } });
    $<HTMLButtonElement>("button.think-stop")!.click();
    expect(model.sent.at(-1)).toEqual({ type: FRAME.CHAT_REQUEST_CANCEL, id: "r1" });
    expect(fetcher).not.toHaveBeenCalled();
    expect($(".think-notice")?.hidden).toBe(true);
  });

  it("says so where there is no Jupyter Server (marimo, a saved notebook)", async () => {
    const fetcher = vi.fn();
    vi.stubGlobal("fetch", fetcher);
    const { $ } = await mount({ status: "streaming", messages: running, kernel_id: "k-1", annotations: { active: ["r1"] } });
    $<HTMLButtonElement>("button.think-stop")!.click();
    expect(fetcher).not.toHaveBeenCalled();
    const notice = $(".think-notice")!;
    expect(notice.hidden).toBe(false);
    expect(notice.textContent).toContain("no Jupyter Server");
  });

  it("says why when the server refuses", async () => {
    config({ baseUrl: "/" });
    const res = await interruptKernel("k/1", document, (async () => new Response("no", { status: 403 })) as typeof fetch);
    expect(res).toEqual({ ok: false, reason: "Jupyter Server did not interrupt the kernel (HTTP 403)." });
    expect((await interruptKernel("", document, vi.fn())).reason).toContain("did not say its id");
  });

  it("reads the page's server and the _xsrf cookie", () => {
    expect(jupyterServer()).toBeNull();
    config({ baseUrl: "/lab-base", token: "" });
    expect(jupyterServer()).toEqual({ baseUrl: "/lab-base/", token: "" });
    expect(xsrfToken("a=1; _xsrf=2%7Cx; b=2")).toBe("2|x");
    expect(xsrfToken("a=1")).toBe("");
  });
});
