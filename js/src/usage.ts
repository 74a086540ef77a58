/**
 * Token usage and cost of a turn, as the kernel stores them on its assistant message, and how the
 * panel words them (per-message footer and header totals).
 *
 * `metadata.usage` is `{prompt_tokens, completion_tokens, total_tokens: number | null,
 * source: "reported" | null, estimated_tokens?: {prompt_tokens, completion_tokens, total_tokens}}`
 * (token counts); `metadata.cost_usd` (US dollars) is present only when known. `source` says who
 * counted: the provider ("reported"), or nobody (null: unknown, shown as "usage unknown", never 0
 * tokens or $0). An unknown turn may carry litellm's tokenizer estimate apart, as
 * `estimated_tokens`: shown on hover only, never added to the totals. Messages stored before
 * sources were recorded have no `source`; their counts are shown as they are. Messages stored when
 * litellm's estimate took the counts' place (`source: "estimated"`) read as unknown with that estimate.
 */
import type { UIMessage } from "./ui-message";

export type UsageSource = "reported" | "unknown";

/** One turn's usage: token counts (null when unknown) and cost in US dollars (null when unknown). */
export interface TurnUsage {
  source: UsageSource;
  total: number | null;
  prompt: number | null;
  completion: number | null;
  cost: number | null;
  /** litellm's estimate of the total tokens of an unknown turn (not a count), or null. */
  estimated: number | null;
}

const num = (x: unknown): number | null => (typeof x === "number" && Number.isFinite(x) ? x : null);

/** The usage recorded in a message's metadata, or null when it has none (a user message, a failed turn). */
export function turnUsage(metadata: Record<string, unknown> | undefined): TurnUsage | null {
  if (!metadata || !("usage" in metadata)) return null;
  const u = (metadata.usage ?? {}) as Record<string, unknown>;
  const legacyEstimate = u.source === "estimated";
  const total = legacyEstimate ? null : num(u.total_tokens);
  const estimate = legacyEstimate ? u : ((u.estimated_tokens ?? {}) as Record<string, unknown>);
  if (total === null || u.source === null) {
    return { source: "unknown", total: null, prompt: null, completion: null, cost: null, estimated: num(estimate.total_tokens) };
  }
  return { source: "reported", total, prompt: num(u.prompt_tokens), completion: num(u.completion_tokens), cost: num(metadata.cost_usd), estimated: null };
}

const dollars = (x: number): string => `$${x.toFixed(6)}`;

/** Footer text of one turn: `26 tokens · $0.000100`, `26 tokens · cost n/a`, or `usage unknown`
 * (both `tokens` and `output`; `cost` is then ""); `output`: this reply's output tokens
 * (`6 output tokens`), what the footer shows (the title has the turn's input + output). */
export function formatTurnUsage(u: TurnUsage): { tokens: string; output: string; cost: string; title: string } {
  if (u.source === "unknown") {
    const guess = u.estimated === null ? "" : ` (litellm's tokenizer estimates ≈${u.estimated} tokens; not counted in the totals)`;
    return { tokens: "usage unknown", output: "usage unknown", cost: "", title: `token usage unknown: the provider reported none${guess}` };
  }
  const tokens = `${u.total} tokens`;
  const output = u.completion === null ? tokens : `${u.completion} output tokens`;
  const cost = u.cost === null ? "cost n/a" : dollars(u.cost);
  const title =
    `this turn: ${u.prompt ?? "n/a"} input + ${u.completion ?? "n/a"} output = ${u.total} tokens ` +
    "(input counts the whole prompt of every step: system, history, tools), as reported by the provider";
  return { tokens, output, cost, title };
}

/** Totals over a transcript: `tokens` and `cost` sum the turns where they are known. */
export interface UsageTotals {
  /** Assistant messages with a usage record. */
  turns: number;
  tokens: number;
  /** Turns whose usage is unknown (left out of `tokens`, whatever litellm estimated). */
  unknown: number;
  /** Sum of the known costs (US dollars), or null when no turn has one. */
  cost: number | null;
  /** Turns with a known cost. */
  priced: number;
}

export function usageTotals(messages: readonly UIMessage[]): UsageTotals {
  const out: UsageTotals = { turns: 0, tokens: 0, unknown: 0, cost: null, priced: 0 };
  for (const m of messages) {
    const u = turnUsage(m.metadata);
    if (!u) continue;
    out.turns += 1;
    if (u.total === null) out.unknown += 1;
    else out.tokens += u.total;
    if (u.cost !== null) {
      out.cost = (out.cost ?? 0) + u.cost;
      out.priced += 1;
    }
  }
  return out;
}

/** Header text: `40 tokens (+1 turn unknown) · cost n/a`, `usage unknown` when no turn's usage is
 * known; "" without any turn. */
export function formatTotals(t: UsageTotals): string {
  if (!t.turns) return "";
  if (t.unknown === t.turns) return "usage unknown";
  const plural = (n: number): string => `${n} turn${n === 1 ? "" : "s"}`;
  const tokens = `${t.tokens} tokens${t.unknown ? ` (+${plural(t.unknown)} unknown)` : ""}`;
  const unpriced = t.turns - t.priced;
  const cost = t.cost === null ? "cost n/a" : `${dollars(t.cost)}${unpriced ? ` (+${plural(unpriced)} n/a)` : ""}`;
  return `${tokens} · ${cost}`;
}
