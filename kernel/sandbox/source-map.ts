import { SourceMap, type SourceMapPayload } from 'node:module';

/**
 * Positions in a service's transpiled code, taken back to its source file. Isolates run what
 * esbuild emitted (types stripped, lines moved), so V8's `file:line:col` of a deploy error or an
 * exception's stack frames point into code nobody wrote; the transpiler's source map says where
 * each position came from. Node's own SourceMap class reads it (no dependency), built only when
 * a position needs mapping, which is only on errors.
 */
export class ServicePositions {
  private decoded: SourceMap | undefined;

  constructor(
    readonly file: string,
    private readonly map: string | undefined,
  ) {}

  /** The source position of a 1-based transpiled line and column; the same when there is no map or no entry. */
  original(line: number, column: number): [line: number, column: number] {
    if (!this.map) return [line, column];
    try {
      this.decoded ??= new SourceMap(JSON.parse(this.map) as SourceMapPayload);
      const entry = this.decoded.findEntry(line - 1, column - 1) as { originalLine?: number; originalColumn?: number };
      if (typeof entry.originalLine !== 'number' || typeof entry.originalColumn !== 'number') return [line, column];
      return [entry.originalLine + 1, entry.originalColumn + 1];
    } catch {
      return [line, column];
    }
  }

  /**
   * Every `<file>:line:col` of this service in `text` (a stack frame's `file:///services/<file>`,
   * or a deploy error's leading `<file>:`) with the source position in its place.
   */
  rewrite(text: string): string {
    const escaped = this.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return text.replace(new RegExp(`((?:file:///services/|(?<![\\w./-]))${escaped}):(\\d+):(\\d+)`, 'g'), (_all, at: string, line: string, column: string) => {
      const [l, c] = this.original(Number(line), Number(column));
      return `${at}:${l}:${c}`;
    });
  }
}
