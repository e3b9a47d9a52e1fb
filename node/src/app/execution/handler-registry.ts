import type { Handler, HandlerRegistry } from "../../ports/handler.js";

/** Handlers by task type. */
export class HandlerMap implements HandlerRegistry {
  private readonly handlers = new Map<string, Handler>();

  register(type: string, handler: Handler): this {
    if (this.handlers.has(type))
      throw new Error(`a handler for ${JSON.stringify(type)} is already registered`);
    this.handlers.set(type, handler);
    return this;
  }

  get(type: string): Handler | undefined {
    return this.handlers.get(type);
  }

  types(): string[] {
    return [...this.handlers.keys()].sort();
  }
}
