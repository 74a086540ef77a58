/**
 * Markdown → safe HTML for text parts: markdown-it renders (raw HTML in the source is
 * escaped, not passed through), then DOMPurify sanitizes what comes out, so nothing a
 * model writes can execute. Links open in a new tab. `enhanceCodeBlocks` adds a copy
 * button to every code block (built with DOM calls, after sanitizing).
 */
import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });

let hooked = false;
function addLinkHook(): void {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  });
}

/** Sanitized HTML for `text` read as Markdown. */
export function renderMarkdown(text: string): string {
  addLinkHook();
  return DOMPurify.sanitize(md.render(text), { ADD_ATTR: ["target"] });
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
