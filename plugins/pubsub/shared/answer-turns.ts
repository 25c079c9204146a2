/**
 * Quick answers of one event-loop turn, sent together. A non-GD publish is answered as soon as
 * it is parsed, so under concurrent publishers each answer went out between the reads of the next
 * requests: every write woke its client on its own, and the clients' next requests came back
 * one by one. Measured at 50 publishers, that cost the kernel about twice the CPU per publish of
 * answers written together (docs/decisions/performance.md). The first answer of a turn still goes
 * at once, so a lone client waits for nothing; the others of the same turn wait for its check
 * phase (setImmediate) and leave together.
 */
export class AnswerTurns {
  private turnOpen = false;
  private waiting: Promise<void> | undefined;
  private release: (() => void) | undefined;

  /** Undefined: answer now. A promise: answer once it resolves, with the turn's other answers. */
  next(): Promise<void> | undefined {
    if (!this.turnOpen) {
      this.turnOpen = true;
      setImmediate(this.closeTurn);
      return undefined;
    }
    return (this.waiting ??= new Promise<void>((resolve) => (this.release = resolve)));
  }

  private readonly closeTurn = (): void => {
    const release = this.release;
    this.turnOpen = false;
    this.waiting = undefined;
    this.release = undefined;
    release?.();
  };
}
