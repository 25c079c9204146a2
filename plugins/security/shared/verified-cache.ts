/**
 * Presented-credential digest → the record it was verified against. Only successful
 * verifications enter, so failed guesses cannot fill it; the size bound only matters if
 * clients encode the same credentials in many ways. Oldest entries go first.
 *
 * The cache never decides alone: a hit counts only while its record is still the
 * definition's current one (see CredentialBook), which is what makes a rotated secret,
 * a changed username or a removed definition invalid at once.
 */
export class VerifiedCache<R> {
  private readonly entries = new Map<string, R>();

  constructor(private readonly maxEntries = 10_000) {}

  get(digest: string): R | undefined {
    return this.entries.get(digest);
  }

  set(digest: string, record: R): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(digest)) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(digest, record);
  }

  /** Drops entries whose record fails the test (memory hygiene after config changes). */
  retain(keep: (record: R) => boolean): void {
    for (const [digest, record] of this.entries) if (!keep(record)) this.entries.delete(digest);
  }
}
