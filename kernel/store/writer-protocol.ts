/**
 * Messages between the SQLite store and its writer thread (kernel/store/writer-thread.ts).
 * Statement texts travel once per thread: later batches name them by number.
 */
export interface WriterBatch {
  id: number;
  /** Texts the thread has not seen yet, with the numbers the batch uses for them. */
  texts: Array<[number, string]>;
  /** Flat: a text's number, then its parameters, for each statement in order. */
  statements: unknown[];
}

export interface WriterClose {
  close: true;
}

export interface WriterReply {
  id: number;
  /** The failed statement's error; the transaction was rolled back. */
  error?: { message: string; code?: string };
}

export interface WriterOptions {
  file: string;
  /** better-sqlite3's entry for this Node (kernel/platform/native.ts). */
  driver: string;
}
