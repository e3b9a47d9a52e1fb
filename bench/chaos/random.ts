/**
 * A seeded random stream (mulberry32), so that one `--seed` decides the
 * nemesis's plan and the workload's choices. Each consumer forks its own
 * stream by name: the workload drawing one more number must not shift every
 * fault of the plan. (What a run observes still depends on timing; the seed
 * fixes what is attempted, not what the machine does with it.)
 */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A stream of its own, named: same seed and name, same numbers. */
  fork(name: string): Random {
    let h = this.state ^ 0x9e3779b9;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x85ebca6b);
    return new Random((h ^ (h >>> 13)) >>> 0);
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One of `weights`' keys, each with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as Array<[K, number]>;
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    let x = this.next() * total;
    for (const [key, w] of entries) {
      x -= w;
      if (x < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }
}
