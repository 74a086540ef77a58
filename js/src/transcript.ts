/**
 * The transcript a view holds, kept by message id: a run of the agent's branch that ends at its leaf
 * (the newest window when the view opened, plus the older pages it fetched), brought up to date by the
 * kernel's `transcript_patch` frames. think_nb/panel/transcript.py says what the kernel sends.
 *
 * Pure functions over message lists; state.ts applies them to a PanelState (revisions, who asked).
 */
import type { TranscriptPage, TranscriptPatch } from "./protocol";
import type { UIMessage } from "./ui-message";

/** Messages a view asks for when it reaches the top of what it holds. */
export const PAGE = 100;
/** Messages the kernel puts in the `messages` trait (think_nb/panel/transcript.py WINDOW): the view
 * keeps as many in its model's copy of the trait, for a notebook saved with its widget state. */
export const WINDOW = 60;

/** What a view holds after `patch`: its messages up to `after` (none when null, or when `after` is older
 * than all of them: they lie after the fork) with the `updated` ones replaced by id, then the patch's messages. `more`: older
 * messages precede the first one held. */
export function applyPatch(held: readonly UIMessage[], patch: Pick<TranscriptPatch, "after" | "messages" | "updated" | "more">,
  more: boolean): { messages: UIMessage[]; more: boolean } {
  if (patch.after === null) return { messages: patch.messages.slice(), more: patch.more === true };
  const at = held.findIndex((m) => m.id === patch.after);
  const kept = at < 0 ? [] : held.slice(0, at + 1);
  const updated = new Map(patch.updated.map((m) => [m.id, m]));
  const messages = updated.size ? kept.map((m) => updated.get(m.id) ?? m) : kept;
  return { messages: messages.concat(patch.messages), more: at < 0 || more };
}

/** `held` with a page of older messages before it, or null when the page is not for what is held
 * (its `before` is not the oldest message held: the view moved on since it asked). */
export function prependPage(held: readonly UIMessage[], page: Pick<TranscriptPage, "before" | "messages">): UIMessage[] | null {
  if (held[0]?.id !== page.before) return null;
  const ids = new Set(held.map((m) => m.id));
  return page.messages.filter((m) => !ids.has(m.id)).concat(held);
}
