/**
 * Images and files in the panel (issue 31 §1): what a user attaches (pasted or dropped into the
 * composer) and how images in the transcript are shown.
 *
 * - An attachment becomes an AI SDK file part `{type: "file", mediaType, url: "data:…;base64,…",
 *   filename}` of the user's message, read in the browser (FileReader), at most `MAX_ATTACHMENT_BYTES`
 *   (the kernel refuses larger ones too: think_nb.messages.validate); a larger or unsupported file is
 *   refused with a one-line note naming the limit, and nothing is attached.
 * - Images are shown only from inline `data:image/(png|jpeg|gif|webp);base64,…` URLs whose bytes
 *   are base64 (`inlineImageUrl`): nothing loads from outside, as the markdown sanitiser's rules say
 *   (markdown.ts); SVG never (it can carry script and references). Other files show as a chip with
 *   their name and type (no link: a `data:` document is not opened from the panel).
 * - A tool output in the AI SDK's content form `{type: "content", value: [text | image-data |
 *   file-data]}` (think_nb.messages.media) shows its text and its images inline.
 *
 * Stable classes for the browser tests: `.think-attachments` (the composer's tray) with
 * `.think-attachment[data-name]` (an `img` for an image) and `button.think-attachment-remove`;
 * `img.think-image` (an image part of a message), `.think-file-chip`; `.think-tool-media` with
 * `img.think-tool-image` (a tool's image output).
 */

export const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;
/** All the attachments of one message: its frame (base64, 4/3 larger) stays under the 10 MiB a
 * Jupyter server's websocket takes from the browser in one message (tornado's default). */
export const MAX_MESSAGE_ATTACHMENT_BYTES = 6 * 1024 * 1024;
/** Images shown and sent (what OpenAI, Anthropic and Gemini all take). */
export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const OTHER_TYPES = /^(application\/pdf|text\/[\w.+-]+|application\/(json|xml|csv|x-yaml|yaml))$/;

const INLINE_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]*={0,2}$/;

export interface FilePart {
  type: "file";
  mediaType: string;
  url: string;
  filename?: string;
  [key: string]: unknown;
}

function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

/** `url` when it is an inline base64 PNG/JPEG/GIF/WebP `data:` URL, else null (nothing else becomes an image source). */
export function inlineImageUrl(url: unknown): string | null {
  if (typeof url !== "string" || !INLINE_IMAGE.test(url)) return null;
  return (url.length - url.indexOf(",") - 1) % 4 === 0 ? url : null; // whole base64 quanta
}

function sizeText(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

/** The element for a message's file part: an inline image, a link for an http(s) file, else a chip. */
export function filePartElement(part: Record<string, unknown>): HTMLElement {
  const name = typeof part.filename === "string" && part.filename ? part.filename : String(part.mediaType ?? "file");
  const image = inlineImageUrl(part.url);
  if (image) {
    const img = h("img", "think-image");
    img.alt = name;
    img.title = name;
    img.src = image;
    return img;
  }
  if (typeof part.url === "string" && /^https?:/i.test(part.url)) {
    const a = h("a", "think-file", name);
    a.href = part.url;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    return a;
  }
  const chip = h("span", "think-file-chip", `📎 ${name}`);
  chip.title = String(part.mediaType ?? "");
  return chip;
}

interface ContentItem {
  type?: unknown;
  text?: unknown;
  data?: unknown;
  mediaType?: unknown;
  filename?: unknown;
}

/** The items of a content output `{type: "content", value: [...]}`, else null. */
export function contentItems(output: unknown): ContentItem[] | null {
  const o = output as { type?: unknown; value?: unknown } | null;
  if (!o || typeof o !== "object" || o.type !== "content" || !Array.isArray(o.value)) return null;
  return o.value.filter((v): v is ContentItem => !!v && typeof v === "object");
}

/** Whether a tool output holds an image to show (its card opens to show it). */
export function hasImages(output: unknown): boolean {
  if ((contentItems(output) ?? []).some((i) => i.type === "image-data")) return true;
  // a `run_code` report (think_nb.kernel, `kernel-run`): its figures are PNG outputs
  const o = output as { type?: unknown; outputs?: unknown } | null;
  return !!o && o.type === "kernel-run" && Array.isArray(o.outputs) &&
    o.outputs.some((x) => !!x && typeof x === "object" && (x as { mime?: unknown }).mime === "image/png");
}

/** A tool's content output: its text, its images inline, a chip for each other file. */
export function contentOutputElement(output: unknown, label: string): HTMLElement | null {
  const items = contentItems(output);
  if (!items) return null;
  const div = h("div", "think-tool-output think-tool-media");
  div.append(h("div", "think-tool-label", label));
  for (const item of items) {
    if (item.type === "text" && typeof item.text === "string") div.append(h("pre", "think-tool-text", item.text));
    else if (item.type === "image-data" || item.type === "file-data") {
      const media = typeof item.mediaType === "string" ? item.mediaType : "";
      const url = typeof item.data === "string" ? inlineImageUrl(`data:${media};base64,${item.data}`) : null;
      if (url) {
        const img = h("img", "think-tool-image");
        img.alt = `${media} from the tool`;
        img.src = url;
        div.append(img);
      } else div.append(h("span", "think-file-chip", `📎 ${typeof item.filename === "string" ? item.filename : media || "file"}`));
    }
  }
  return div;
}

/** Why `file` cannot be attached (one line naming the limit or the types), or null when it can. */
export function refusal(file: { name: string; type: string; size: number }): string | null {
  const name = file.name || "the pasted image";
  if (!IMAGE_TYPES.includes(file.type) && !OTHER_TYPES.test(file.type)) {
    return `${name} (${file.type || "unknown type"}) was not attached: attach PNG, JPEG, GIF or WebP images, PDFs or text files.`;
  }
  if (file.size > MAX_ATTACHMENT_BYTES) {
    return `${name} is ${sizeText(file.size)}, more than the ${sizeText(MAX_ATTACHMENT_BYTES)} an attachment may be: it was not attached.`;
  }
  return null;
}

function readDataUrl(file: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"));
    reader.readAsDataURL(file);
  });
}

/** The file parts of `files`, and one note for each file refused; `already`: bytes attached before. */
export async function readAttachments(files: Iterable<File>, already = 0): Promise<{ parts: FilePart[]; notes: string[]; bytes: number }> {
  const parts: FilePart[] = [];
  const notes: string[] = [];
  let bytes = already;
  for (const file of files) {
    const why = refusal(file) ?? (bytes + file.size > MAX_MESSAGE_ATTACHMENT_BYTES
      ? `${file.name || "the file"} was not attached: one message's attachments may total ${sizeText(MAX_MESSAGE_ATTACHMENT_BYTES)}; send it in another message.`
      : null);
    if (why) {
      notes.push(why);
      continue;
    }
    bytes += file.size;
    try {
      const url = await readDataUrl(file);
      const ext = file.type.split("/")[1]?.replace("jpeg", "jpg") ?? "bin";
      parts.push({ type: "file", mediaType: file.type, url, filename: file.name || `pasted.${ext}` });
    } catch (e) {
      notes.push(`${file.name || "the file"} could not be read: ${(e as Error).message}`);
    }
  }
  return { parts, notes, bytes };
}

/**
 * The composer's tray of pending attachments: paste (Ctrl+V of an image) and drop onto `target`
 * add to it; `take()` empties it into the message being sent. `onNote` gets each refusal.
 */
export function attachmentTray(target: HTMLElement, onNote: (note: string) => void, enabled: () => boolean) {
  const tray = h("div", "think-attachments");
  tray.hidden = true;
  let pending: FilePart[] = [];
  let bytes = 0; // of the pending files
  const draw = (): void => {
    tray.replaceChildren(
      ...pending.map((part, i) => {
        const item = h("span", "think-attachment");
        item.dataset.name = part.filename ?? "";
        const image = inlineImageUrl(part.url);
        if (image) {
          const img = h("img");
          img.src = image;
          img.alt = part.filename ?? "image";
          item.append(img);
        } else item.append(h("span", "think-file-chip", `📎 ${part.filename ?? part.mediaType}`));
        const remove = h("button", "think-attachment-remove", "×");
        remove.type = "button";
        remove.title = `remove ${part.filename ?? "this attachment"}`;
        remove.addEventListener("click", () => {
          pending = pending.filter((_, k) => k !== i);
          bytes = pending.reduce((sum, p) => sum + Math.floor(((p.url.length - p.url.indexOf(",") - 1) * 3) / 4), 0);
          draw();
        });
        item.append(remove);
        return item;
      }),
    );
    tray.hidden = pending.length === 0;
  };
  const add = async (files: File[]): Promise<void> => {
    if (!files.length || !enabled()) return;
    const read = await readAttachments(files, bytes);
    const { parts, notes } = read;
    bytes = read.bytes;
    pending = [...pending, ...parts];
    for (const note of notes) onNote(note);
    draw();
  };
  target.addEventListener("paste", (e: ClipboardEvent) => {
    const files = Array.from(e.clipboardData?.files ?? []);
    if (!files.length) return; // text: the browser pastes it
    e.preventDefault();
    void add(files);
  });
  target.addEventListener("dragover", (e: DragEvent) => {
    if (Array.from(e.dataTransfer?.types ?? []).includes("Files")) e.preventDefault(); // allows the drop
  });
  target.addEventListener("drop", (e: DragEvent) => {
    const files = Array.from(e.dataTransfer?.files ?? []);
    if (!files.length) return;
    e.preventDefault();
    e.stopPropagation(); // not also into the notebook (JupyterLab opens dropped files)
    void add(files);
  });
  return {
    el: tray,
    /** The pending file parts; the tray is emptied. */
    take(): FilePart[] {
      const out = pending;
      pending = [];
      bytes = 0;
      draw();
      return out;
    },
    get count(): number {
      return pending.length;
    },
  };
}
