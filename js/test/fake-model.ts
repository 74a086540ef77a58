/** A small in-memory AnyModel: traits, change events, custom messages both ways. */
import type { AnyModel } from "@anywidget/types";

type Handler = (...args: any[]) => void;

export class FakeModel<T extends Record<string, any>> {
  readonly sent: unknown[] = [];
  private handlers = new Map<string, Set<Handler>>();
  constructor(private traits: T) {}

  get<K extends keyof T>(key: K): T[K] {
    return this.traits[key];
  }
  set<K extends keyof T>(key: K, value: T[K]): void {
    this.traits[key] = value;
    this.emit(`change:${String(key)}`);
  }
  on(event: string, cb: Handler): void {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event)!.add(cb);
  }
  off(event?: string | null, cb?: Handler | null): void {
    if (event && cb) this.handlers.get(event)?.delete(cb);
  }
  send(content: unknown): void {
    this.sent.push(content);
  }
  save_changes(): void {}
  /** Deliver a custom message from the kernel. */
  fromKernel(msg: unknown): void {
    this.emit("msg:custom", msg, []);
  }
  /** Fire a model event the widget manager fires (`comm_live_update`, `comm:close`). */
  trigger(event: string): void {
    this.emit(event);
  }
  listenerCount(event: string): number {
    return this.handlers.get(event)?.size ?? 0;
  }
  private emit(event: string, ...args: unknown[]): void {
    for (const cb of this.handlers.get(event) ?? []) cb(...args);
  }
  get widget_manager(): AnyModel["widget_manager"] {
    throw new Error("not used");
  }
}
