import { describe, expect, it } from 'vitest';
import { contentDisposition, downloadHeaders } from '../../../../sdk/download.ts';

/** What a client recovers from the header (the RFC 6266 rule: filename* wins over filename). */
function filenameFrom(header: string): string {
  const ext = /filename\*=UTF-8''([^;]+)/.exec(header);
  if (ext) return decodeURIComponent(ext[1]!);
  const quoted = /filename="((?:[^"\\]|\\.)*)"/.exec(header);
  if (quoted) return quoted[1]!.replace(/\\(.)/g, '$1');
  return /filename=([^;]+)/.exec(header)![1]!;
}

describe('Content-Disposition', () => {
  it('writes a plain name as a token', () => {
    expect(contentDisposition('report.pdf')).toBe('attachment; filename=report.pdf');
    expect(contentDisposition('data-2024_01.csv', 'inline')).toBe('inline; filename=data-2024_01.csv');
  });

  it('quotes ASCII names with spaces or separators, escaping quotes and backslashes', () => {
    expect(contentDisposition('my report.pdf')).toBe('attachment; filename="my report.pdf"');
    expect(contentDisposition('a "b";c.txt')).toBe('attachment; filename="a \\"b\\";c.txt"');
  });

  it('adds filename* (RFC 5987) with an ASCII fallback for other names', () => {
    expect(contentDisposition('résumé.pdf')).toBe(`attachment; filename="resume.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf`);
    expect(contentDisposition('отчёт 2024.xlsx')).toBe(`attachment; filename="_____ 2024.xlsx"; filename*=UTF-8''%D0%BE%D1%82%D1%87%D1%91%D1%82%202024.xlsx`);
    expect(contentDisposition("it's (1)*.txt€")).toContain(`filename*=UTF-8''it%27s%20%281%29%2A.txt%E2%82%AC`);
  });

  it('round-trips any name through what a client reads', () => {
    for (const name of ['report.pdf', 'my "q" file.txt', 'résumé.pdf', '日本語.txt', '😀 emoji.png', "a'b(c)*d!.bin"]) {
      expect(filenameFrom(contentDisposition(name))).toBe(name);
    }
  });

  it('keeps path separators and control characters out of the header', () => {
    expect(contentDisposition('../../etc/passwd')).toBe('attachment; filename=.._.._etc_passwd');
    expect(contentDisposition('C:\\temp\\x.txt')).toBe('attachment; filename="C:_temp_x.txt"');
    const header = contentDisposition('a\r\nSet-Cookie: x=1.txt');
    expect(header).not.toMatch(/[\r\n]/);
    expect(filenameFrom(header)).toBe('a__Set-Cookie: x=1.txt');
  });

  it('names an empty name "download"', () => {
    expect(contentDisposition('')).toBe('attachment; filename=download');
    expect(contentDisposition('  ')).toBe('attachment; filename=download');
  });
});

describe('download headers', () => {
  it('pairs the content type with the disposition', () => {
    expect(downloadHeaders('a.csv', 'text/csv; charset=utf-8')).toEqual({ 'content-type': 'text/csv; charset=utf-8', 'content-disposition': 'attachment; filename=a.csv' });
    expect(downloadHeaders('a.bin')['content-type']).toBe('application/octet-stream');
    expect(downloadHeaders('a.png', 'image/png', 'inline')['content-disposition']).toBe('inline; filename=a.png');
  });

  it('refuses a content type that would break the header', () => {
    expect(() => downloadHeaders('a', 'text/plain\r\nX-Evil: 1')).toThrow(TypeError);
  });
});
