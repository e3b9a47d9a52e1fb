/**
 * Keyset pages of a list (`?cursor=` and `next_cursor`, docs/api.md): the
 * cursors walked so far are a stack, so "back" is the previous page exactly
 * as the API cut it, with no offset counting. `useCursors` holds the stack,
 * `Pager` draws the two buttons under the list.
 */
import { useState } from "preact/hooks";

export interface Cursors {
  /** The cursor of the page shown; undefined for the first page. */
  cursor: string | undefined;
  atFirst: boolean;
  back(): void;
  forward(next: string): void;
  /** Back to the first page (the filters changed). */
  reset(): void;
}

export function useCursors(): Cursors {
  const [stack, setStack] = useState<string[]>([]);
  return {
    cursor: stack[stack.length - 1],
    atFirst: stack.length === 0,
    back: () => setStack(stack.slice(0, -1)),
    forward: (next) => setStack([...stack, next]),
    reset: () => setStack([]),
  };
}

export function Pager(props: {
  cursors: Cursors;
  next: string | null;
  /** The buttons' words: a list newest first reads "newer" and "older". */
  labels?: readonly [back: string, forward: string];
}) {
  const { cursors, next } = props;
  const [back, forward] = props.labels ?? ["← newer", "older →"];
  return (
    <div class="pager">
      <button type="button" disabled={cursors.atFirst} onClick={cursors.back}>
        {back}
      </button>
      <button type="button" disabled={next === null} onClick={() => next && cursors.forward(next)}>
        {forward}
      </button>
    </div>
  );
}
