/**
 * What a connector built from each named entry of a config section (a pool, a consumer, a
 * poller), kept while its entry stays the same: a config change elsewhere must not drop the
 * connector's sockets and sessions. Each `sync` builds what is new or changed and returns what it
 * replaced or what was removed, for the caller to close (after its successor was built, so a
 * changed consumer can drain before the new one starts on the same queue, folder or mailbox).
 */
export class BuiltByName<T> {
  private built = new Map<string, { source: string; value: T }>();

  get(name: string): T | undefined {
    return this.built.get(name)?.value;
  }

  values(): T[] {
    return [...this.built.values()].map((b) => b.value);
  }

  /**
   * `dependsOn` is everything the built value reads (by default the entry itself): when it is
   * unchanged, as JSON, the value is kept.
   */
  sync<E extends { name: string }>(entries: readonly E[], build: (entry: E) => T, dependsOn: (entry: E) => unknown = (entry) => entry): { built: T[]; kept: T[]; retired: T[] } {
    const next = new Map<string, { source: string; value: T }>();
    const built: T[] = [];
    const kept: T[] = [];
    for (const entry of entries) {
      const source = JSON.stringify(dependsOn(entry));
      const current = this.built.get(entry.name);
      if (current !== undefined && current.source === source) {
        next.set(entry.name, current);
        kept.push(current.value);
        continue;
      }
      const value = build(entry);
      built.push(value);
      next.set(entry.name, { source, value });
    }
    const live = new Set([...next.values()].map((b) => b.value));
    const retired = this.values().filter((value) => !live.has(value));
    this.built = next;
    return { built, kept, retired };
  }
}
