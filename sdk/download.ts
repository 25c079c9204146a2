/**
 * Content-Disposition for file downloads (RFC 6266, spec A.9). Pure and isolate-safe: services
 * call it in their sandbox. A plain ASCII name is written as `filename=<name>` (quoted when it
 * is not an HTTP token); any other name also gets `filename*=UTF-8''<percent-encoded>` with an
 * ASCII fallback in `filename`, which every current browser prefers.
 */

export type Disposition = 'attachment' | 'inline';

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Path separators and control characters never belong in a suggested file name.
const UNSAFE = /[\x00-\x1f\x7f/\\]/g;

/** RFC 5987 attr-char: what may stay literal in `filename*`. */
function encodeExtValue(s: string): string {
  return encodeURIComponent(s).replace(/['()*!]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

function asciiFallback(name: string): string {
  let base = name;
  try {
    base = name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  } catch {
    // normalize needs ICU; without it non-ASCII characters simply become '_'.
  }
  return base.replace(/[^\x20-\x7e]/g, '_');
}

function quoted(s: string): string {
  return `"${s.replace(/["\\]/g, '\\$&')}"`;
}

/** `attachment; filename=report.pdf`, or with `filename*` for non-ASCII names. */
export function contentDisposition(filename: string, disposition: Disposition = 'attachment'): string {
  const name = String(filename).replace(UNSAFE, '_').trim() || 'download';
  const isAscii = /^[\x20-\x7e]*$/.test(name);
  if (isAscii) return `${disposition}; filename=${TOKEN.test(name) ? name : quoted(name)}`;
  return `${disposition}; filename=${quoted(asciiFallback(name))}; filename*=UTF-8''${encodeExtValue(name)}`;
}

/** Response headers of a file download: its content type and Content-Disposition. */
export function downloadHeaders(
  filename: string,
  contentType = 'application/octet-stream',
  disposition: Disposition = 'attachment',
): { 'content-type': string; 'content-disposition': string } {
  if (/[\x00-\x1f\x7f]/.test(contentType)) throw new TypeError('a content type cannot hold control characters');
  return { 'content-type': contentType, 'content-disposition': contentDisposition(filename, disposition) };
}
