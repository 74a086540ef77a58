/**
 * Markdown → safe HTML for text parts: markdown-it renders (raw HTML in the source is
 * escaped, not passed through), then DOMPurify sanitizes what comes out, so nothing a
 * model writes can execute. Links open in a new tab.
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
