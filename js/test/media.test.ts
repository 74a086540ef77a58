// @vitest-environment jsdom
/**
 * Images in the panel (media.ts, issue 31 §1): a pasted or dropped image waits in the composer's tray
 * and is sent as a file part; a file larger than the cap is refused with a note; images show only
 * from inline base64 data: URLs of PNG/JPEG/GIF/WebP.
 */
import { describe, expect, it, vi } from "vitest";
import { MAX_ATTACHMENT_BYTES, contentOutputElement, filePartElement, hasImages, inlineImageUrl } from "../src/media";
import { createPanel } from "../src/render";
import { initialState } from "../src/state";

const PNG_URL = "data:image/png;base64,iVBORw0KGgo=";

function pasteFiles(target: Element, files: File[]): Event {
  const e = new Event("paste", { bubbles: true, cancelable: true });
  Object.defineProperty(e, "clipboardData", { value: { files, types: ["Files"] } });
  target.dispatchEvent(e);
  return e;
}

function dropFiles(target: Element, files: File[]): Event {
  const e = new Event("drop", { bubbles: true, cancelable: true });
  Object.defineProperty(e, "dataTransfer", { value: { files, types: ["Files"] } });
  target.dispatchEvent(e);
  return e;
}

function panel() {
  const host = document.createElement("div");
  document.body.append(host);
  const send = vi.fn();
  const view = createPanel(host, { send, stop() {}, clear() {}, regenerate() {}, approve() {}, deny() {}, switchSession() {}, continueTurn() {}, switchBranch() {} });
  view.update(initialState(), { agentName: "calc", dbPath: "" });
  return { host, send, view };
}

describe("images shown in the transcript", () => {
  it("only from inline base64 data: URLs of raster images", () => {
    expect(inlineImageUrl(PNG_URL)).toBe(PNG_URL);
    expect(inlineImageUrl("data:image/jpeg;base64,/9j/4AAQ")).toBe("data:image/jpeg;base64,/9j/4AAQ");
    for (const bad of ["data:image/svg+xml;base64,PHN2Zz4=", "https://example.com/a.png", "data:image/png;base64,abc",
      "data:image/png,rawbytes", "javascript:alert(1)", "data:text/html;base64,PGI+"]) {
      expect(inlineImageUrl(bad)).toBeNull();
    }
  });

  it("a file part is an image, a link for https, else a chip that loads nothing", () => {
    const img = filePartElement({ type: "file", mediaType: "image/png", url: PNG_URL, filename: "a.png" });
    expect(img.tagName).toBe("IMG");
    expect(img.className).toBe("think-image");
    expect((img as HTMLImageElement).src).toBe(PNG_URL);
    const svg = filePartElement({ type: "file", mediaType: "image/svg+xml", url: "data:image/svg+xml;base64,PHN2Zz4=", filename: "x.svg" });
    expect(svg.className).toBe("think-file-chip");
    expect(svg.outerHTML).toBe('<span class="think-file-chip" title="image/svg+xml">📎 x.svg</span>');
  });

  it("a tool's content output shows its text and its image", () => {
    const el = contentOutputElement({ type: "content", value: [{ type: "text", text: "the chart" },
      { type: "image-data", data: "iVBORw0KGgo=", mediaType: "image/png" },
      { type: "image-data", data: "PHN2Zz4=", mediaType: "image/svg+xml" }] }, "output");
    expect(el?.querySelector(".think-tool-text")?.textContent).toBe("the chart");
    expect(Array.from(el?.querySelectorAll("img.think-tool-image") ?? []).map((i) => (i as HTMLImageElement).src)).toEqual([PNG_URL]);
    expect(el?.querySelector(".think-file-chip")?.textContent).toBe("📎 image/svg+xml");
  });

  it("a card opens on an image: a content output's, or a run_code figure (a stranger's run: the approved plot was folded)", () => {
    expect(hasImages({ type: "content", value: [{ type: "image-data", data: "iVBORw0KGgo=", mediaType: "image/png" }] })).toBe(true);
    expect(hasImages({ type: "kernel-run", outputs: [{ mime: "text/plain", data: "x" }, { mime: "image/png", data: "iVBORw0KGgo=" }] })).toBe(true);
    expect(hasImages({ type: "kernel-run", outputs: [{ mime: "table", data: {} }] })).toBe(false);
    expect(hasImages({ type: "kernel-run" })).toBe(false);
    expect(hasImages("a string")).toBe(false);
    expect(hasImages(null)).toBe(false);
  });
});

describe("attaching in the composer", () => {
  it("a pasted image waits in the tray and is sent as a file part with the text", async () => {
    const { host, send, view } = panel();
    const input = host.querySelector<HTMLTextAreaElement>(".think-input");
    const png = new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], "shot.png", { type: "image/png" });
    const e = pasteFiles(input as Element, [png]);
    expect(e.defaultPrevented).toBe(true);
    await vi.waitFor(() => expect(host.querySelector(".think-attachment[data-name='shot.png'] img")).not.toBeNull());
    (input as HTMLTextAreaElement).value = "what is this?";
    host.querySelector<HTMLButtonElement>(".think-send")?.click();
    expect(send).toHaveBeenCalledWith("what is this?", [
      { type: "file", mediaType: "image/png", url: "data:image/png;base64,iVBORw==", filename: "shot.png" }]);
    expect(host.querySelector<HTMLElement>(".think-attachments")?.hidden).toBe(true);
    view.destroy();
  });

  it("a dropped image can be sent alone, and the remove button takes it back", async () => {
    const { host, send, view } = panel();
    const composer = host.querySelector(".think-composer") as Element;
    const gif = new File([new Uint8Array([0x47, 0x49, 0x46, 0x38])], "a.gif", { type: "image/gif" });
    const jpg = new File([new Uint8Array([0xff, 0xd8, 0xff])], "b.jpg", { type: "image/jpeg" });
    dropFiles(composer, [gif, jpg]);
    await vi.waitFor(() => expect(host.querySelectorAll(".think-attachment").length).toBe(2));
    host.querySelector<HTMLButtonElement>(".think-attachment[data-name='b.jpg'] .think-attachment-remove")?.click();
    host.querySelector<HTMLButtonElement>(".think-send")?.click();
    expect(send).toHaveBeenCalledWith("", [{ type: "file", mediaType: "image/gif", url: "data:image/gif;base64,R0lGOA==", filename: "a.gif" }]);
    view.destroy();
  });

  it("a file over the cap, or of another type, is refused with a note naming the limit", async () => {
    const { host, send, view } = panel();
    const input = host.querySelector(".think-input") as Element;
    const big = new File([new Uint8Array(MAX_ATTACHMENT_BYTES + 1)], "huge.png", { type: "image/png" });
    const zip = new File([new Uint8Array(3)], "a.zip", { type: "application/zip" });
    pasteFiles(input, [big, zip]);
    await vi.waitFor(() => expect(host.querySelector(".think-attach-note")?.textContent).toContain("a.zip"));
    pasteFiles(input, [big]);
    await vi.waitFor(() => expect(host.querySelector(".think-attach-note")?.textContent).toBe(
      "huge.png is 5.0 MiB, more than the 5.0 MiB an attachment may be: it was not attached."));
    expect(host.querySelectorAll(".think-attachment").length).toBe(0);
    host.querySelector<HTMLButtonElement>(".think-send")?.click();
    expect(send).not.toHaveBeenCalled();
    view.destroy();
  });
});

describe("one message's attachments", () => {
  it("total at most MAX_MESSAGE_ATTACHMENT_BYTES: the one past it is refused with a note", async () => {
    const { host, view } = panel();
    const input = host.querySelector(".think-input") as Element;
    const four = (name: string) => new File([new Uint8Array(4 * 1024 * 1024)], name, { type: "image/png" });
    pasteFiles(input, [four("one.png")]);
    await vi.waitFor(() => expect(host.querySelectorAll(".think-attachment").length).toBe(1));
    pasteFiles(input, [four("two.png")]);
    await vi.waitFor(() => expect(host.querySelector(".think-attach-note")?.textContent).toBe(
      "two.png was not attached: one message's attachments may total 6.0 MiB; send it in another message."));
    expect(host.querySelectorAll(".think-attachment").length).toBe(1);
    view.destroy();
  });
});
