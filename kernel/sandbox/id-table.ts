/**
 * Values by a numeric id (a call's), in two arrays written in place: open addressing, linear
 * probing, deletion by shifting back (no tombstones). It grows and never shrinks.
 *
 * Why not a Map: the pool adds and deletes a call per request, with ids that only grow. A Map's
 * table then fills with deleted entries and is rebuilt every few dozen calls, and the table it
 * leaves behind, promoted to the old generation and dead, still points at the calls it held and
 * at the table that replaced it. Until the next full collection every scavenge keeps all of them
 * alive: under an invoke flood, ≈ 3 MB copied per scavenge and ≈ 18 MB a second promoted, and
 * the kernel's scavenges took 5–17 ms (bench/README.md, Tenants, item 6). Here a slot that is
 * emptied holds nothing, so a finished call is garbage at once.
 */
const EMPTY = -1;

export class IdTable<V> {
  private keys: number[];
  private vals: Array<V | undefined>;
  private mask: number;
  private count = 0;

  constructor(capacity = 64) {
    const size = 1 << Math.ceil(Math.log2(Math.max(8, capacity)));
    this.keys = new Array<number>(size).fill(EMPTY);
    this.vals = new Array<V | undefined>(size).fill(undefined);
    this.mask = size - 1;
  }

  get size(): number {
    return this.count;
  }

  get(id: number): V | undefined {
    const i = this.find(id);
    return i < 0 ? undefined : this.vals[i];
  }

  has(id: number): boolean {
    return this.find(id) >= 0;
  }

  set(id: number, value: V): this {
    if (!Number.isSafeInteger(id) || id < 0) throw new RangeError(`id ${id} is not a safe non-negative integer`);
    const at = this.find(id);
    if (at >= 0) {
      this.vals[at] = value;
      return this;
    }
    if ((this.count + 1) * 2 > this.keys.length) this.grow();
    let i = id & this.mask;
    while (this.keys[i] !== EMPTY) i = (i + 1) & this.mask;
    this.keys[i] = id;
    this.vals[i] = value;
    this.count++;
    return this;
  }

  delete(id: number): boolean {
    let hole = this.find(id);
    if (hole < 0) return false;
    this.count--;
    // Shift back every entry of the run after the hole whose home slot is not between the hole and itself.
    let j = hole;
    for (;;) {
      j = (j + 1) & this.mask;
      const key = this.keys[j]!;
      if (key === EMPTY) break;
      const home = key & this.mask;
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      this.keys[hole] = key;
      this.vals[hole] = this.vals[j];
      hole = j;
    }
    this.keys[hole] = EMPTY;
    this.vals[hole] = undefined;
    return true;
  }

  clear(): void {
    this.keys.fill(EMPTY);
    this.vals.fill(undefined);
    this.count = 0;
  }

  /** The values, in no particular order (a copy: the caller may delete while it walks them). */
  values(): V[] {
    const out: V[] = [];
    for (let i = 0; i < this.keys.length; i++) if (this.keys[i] !== EMPTY) out.push(this.vals[i]!);
    return out;
  }

  private find(id: number): number {
    if (id < 0) return -1; // EMPTY is -1: no id below 0 is ever held
    let i = id & this.mask;
    for (;;) {
      const key = this.keys[i];
      if (key === id) return i;
      if (key === EMPTY) return -1;
      i = (i + 1) & this.mask;
    }
  }

  private grow(): void {
    const keys = this.keys;
    const vals = this.vals;
    const size = keys.length * 2;
    this.keys = new Array<number>(size).fill(EMPTY);
    this.vals = new Array<V | undefined>(size).fill(undefined);
    this.mask = size - 1;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (key === EMPTY) continue;
      let k = key & this.mask;
      while (this.keys[k] !== EMPTY) k = (k + 1) & this.mask;
      this.keys[k] = key;
      this.vals[k] = vals[i];
    }
    // The old arrays may be in the old generation: emptied, they keep no call alive until it is collected.
    keys.fill(EMPTY);
    vals.fill(undefined);
  }
}
