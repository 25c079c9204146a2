import { describe, expect, it } from 'vitest';
import { createCsvReader, CsvReadError, encodingOf } from '../../../../plugins/formats/csv/read.ts';
import { csvChannelSchema } from '../../../../plugins/formats/csv/schema.ts';
import { createCsvWriter, CsvWriteError } from '../../../../plugins/formats/csv/write.ts';

/** The reader and writer alone, on bytes: the shapes, the caps, the reasons a client is told. */

const reader = (settings: Record<string, unknown> = {}) => createCsvReader(csvChannelSchema.parse(settings));
const writer = (settings: Record<string, unknown> = {}) => createCsvWriter(csvChannelSchema.parse(settings));
const bytes = (text: string, encoding: BufferEncoding = 'utf8') => Buffer.from(text, encoding);

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CsvReadError);
    return (err as Error).message;
  }
  throw new Error('expected a CsvReadError');
}

describe('csv reading', () => {
  it('makes objects keyed by the header row, every value a string', () => {
    expect(reader()(bytes('id,name,zip\r\n1,Ann,007\r\n2,"Bob, Jr.",\r\n'))).toEqual([
      { id: '1', name: 'Ann', zip: '007' },
      { id: '2', name: 'Bob, Jr.', zip: '' },
    ]);
  });

  it('makes arrays without a header, objects with explicit columns (skipping the file’s header when header: true)', () => {
    expect(reader({ header: false })(bytes('1,Ann\n2,Bob\n'))).toEqual([['1', 'Ann'], ['2', 'Bob']]);
    expect(reader({ header: false, columns: ['id', 'name'] })(bytes('1,Ann\n'))).toEqual([{ id: '1', name: 'Ann' }]);
    expect(reader({ columns: ['id', 'name'] })(bytes('ID,Full name\n1,Ann\n'))).toEqual([{ id: '1', name: 'Ann' }]);
  });

  it('reads with the delimiter and quote it is given, quotes doubled inside', () => {
    expect(reader({ delimiter: ';', quote: "'" })(bytes("a;b\n'x;y';'it''s'\n"))).toEqual([{ a: 'x;y', b: "it's" }]);
    expect(reader({ delimiter: '\t' })(bytes('a\tb\n"1\n2"\t3\n'))).toEqual([{ a: '1\n2', b: '3' }]);
  });

  it('skips empty lines by default, trims only when asked', () => {
    expect(reader()(bytes('a,b\n\n 1 , 2 \n\n'))).toEqual([{ a: ' 1 ', b: ' 2 ' }]);
    expect(reader({ trim: true })(bytes('a,b\n 1 , 2 \n'))).toEqual([{ a: '1', b: '2' }]);
    expect(reason(() => reader({ skip_empty_lines: false })(bytes('a,b\n\n1,2\n')))).toMatch(/Invalid Record Length.*line 2/);
  });

  it('casts plain decimal numbers only when asked; codes, quoted fields and headers stay text', () => {
    const csv = bytes('n,code,q,e,f\n-12,007,"42",,1e3\n3.5,1,5, 7 ,0x1F\n');
    expect(reader()(csv)[0]).toEqual({ n: '-12', code: '007', q: '42', e: '', f: '1e3' });
    expect(reader({ cast: true })(csv)).toEqual([
      { n: -12, code: '007', q: '42', e: '', f: 1000 },
      { n: 3.5, code: 1, q: 5, e: ' 7 ', f: '0x1F' },
    ]);
    expect(reader({ cast: true })(bytes('1,2\n3,4\n'))).toEqual([{ 1: 3, 2: 4 }]);
  });

  it('drops a UTF-8 byte order mark unless bom: false', () => {
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes('id,name\n1,Zoë\n')]);
    expect(reader()(withBom)).toEqual([{ id: '1', name: 'Zoë' }]);
    expect(Object.keys((reader({ bom: false })(withBom) as Record<string, string>[])[0]!)).toEqual(['\uFEFFid', 'name']);
  });

  it('reads ISO-8859-1 when told, and refuses bytes that are not UTF-8 otherwise', () => {
    const latin1 = bytes('name,city\nZoë,Düsseldorf\n', 'latin1');
    expect(reader({ encoding: 'latin1' })(latin1)).toEqual([{ name: 'Zoë', city: 'Düsseldorf' }]);
    expect(reader()(latin1, 'latin1')).toEqual([{ name: 'Zoë', city: 'Düsseldorf' }]);
    expect(reason(() => reader()(latin1))).toMatch(/^the body is not valid UTF-8/);
  });

  it('takes the encoding from a Content-Type charset that names one it reads', () => {
    expect(encodingOf('text/csv; charset=ISO-8859-1', 'utf8')).toBe('latin1');
    expect(encodingOf('text/csv;charset="utf-8"', 'latin1')).toBe('utf8');
    expect(encodingOf('text/csv', 'latin1')).toBe('latin1');
    expect(encodingOf(undefined, 'utf8')).toBe('utf8');
    expect(reason(() => encodingOf('text/csv; charset=utf-16', 'utf8'))).toBe('unsupported charset "utf-16": send UTF-8 or ISO-8859-1');
  });

  it.each<[string, string, RegExp]>([
    ['an unclosed quote', 'id,name\n1,"Ann\n', /^Quote Not Closed: the parsing is finished with an opening quote at line 2/],
    ['a row longer than the header', 'id,name\n1,Ann\n2,Bob,extra\n', /^Invalid Record Length: columns length is 2, got 3 on line 3/],
    ['a row shorter than the first (no header)', 'a,b\nc\n', /^Invalid Record Length: expect 2, got 1 on line 2/],
    ['a quote inside an unquoted field', 'a,b\n1,x"y\n', /^Invalid Opening Quote: a quote is found on field "b" at line 2/],
    ['text after a closing quote', 'a,b\n"1"x,2\n', /^Invalid Closing Quote.*line 2/],
    ['a repeated column name', 'id,id\n1,2\n', /^the header row names column "id" twice \(column 2\)$/],
    ['an empty column name', 'id,,name\n1,2,3\n', /^the header row has an empty column name \(column 2\)$/],
    ['a __proto__ column', 'a,__proto__\n1,2\n', /^the header row names a forbidden column "__proto__" \(column 2\)$/],
  ])('refuses %s, naming where', (_label, text, expected) => {
    const settings = _label.includes('no header') ? { header: false } : {};
    expect(reason(() => reader(settings)(bytes(text)))).toMatch(expected);
  });

  it('accepts ragged rows with relax_column_count', () => {
    expect(reader({ relax_column_count: true })(bytes('a,b\n1\n2,3\n'))).toEqual([{ a: '1' }, { a: '2', b: '3' }]);
  });

  it('stops at max_rows, max_columns and max_cells, naming the line and the setting', () => {
    expect(reader({ max_rows: 2 })(bytes('a\n1\n2\n'))).toHaveLength(2);
    expect(reason(() => reader({ max_rows: 2 })(bytes('a\n1\n2\n3\n')))).toBe('line 4: more than 2 rows (csv.max_rows)');
    expect(reason(() => reader({ max_columns: 3, relax_column_count: true })(bytes('a,b,c\n1,2,3,4\n')))).toBe('line 2: more than 3 columns (csv.max_columns)');
    expect(reason(() => reader({ max_columns: 3, header: false })(bytes('1,2,3,4,5\n')))).toBe('line 1: more than 3 columns (csv.max_columns)');
    expect(reason(() => reader({ max_columns: 2 })(bytes('a,b,c\n1,2,3\n')))).toBe('line 1: more than 2 columns (csv.max_columns)');
    expect(reason(() => reader({ max_cells: 5 })(bytes('a,b\n1,2\n3,4\n')))).toBe('line 3: more than 5 fields in the body (csv.max_cells)');
  });

  it('stops a 40 MB body soon after a cap is passed, not after building millions of strings', () => {
    // One row of 40 million empty cells: refused within a 64 KiB chunk of passing column 100 000.
    const oneRow = Buffer.alloc(40 * 1024 * 1024, ',');
    expect(reason(() => reader({ header: false, max_columns: 100_000 })(oneRow))).toBe('line 1: more than 100000 columns (csv.max_columns)');
    // A million one-cell rows: refused at line 100 001 of them.
    const manyRows = Buffer.from('a\n'.repeat(1_000_000));
    expect(reason(() => reader({ header: false })(manyRows))).toBe('line 100001: more than 100000 rows (csv.max_rows)');
  });

  it('cuts a long reason to 300 characters', () => {
    const name = 'x'.repeat(1000);
    expect(reason(() => reader()(bytes(`${name},${name}\n1,2\n`))).length).toBeLessThanOrEqual(300);
  });
});

describe('csv writing', () => {
  it('writes objects with a header of every key in the order first seen, CRLF, quoting where needed', () => {
    expect(writer()([{ id: 1, name: 'Ann "A"', note: 'a,b' }, { id: 2, name: ' pad ', extra: true }, { id: 3, note: 'two\nlines', name: null }])).toBe(
      'id,name,note,extra\r\n1,"Ann ""A""","a,b",\r\n2," pad ",,true\r\n3,,"two\nlines",\r\n',
    );
  });

  it('writes lists of lists as they are, a single object as one row, an empty list as nothing', () => {
    expect(writer({ delimiter: ';' })([['a', 'b;c'], [1, 2]])).toBe('a;"b;c"\r\n1;2\r\n');
    expect(writer()({ ok: true, count: 3 })).toBe('ok,count\r\ntrue,3\r\n');
    expect(writer()([])).toBe('');
  });

  it('follows the channel’s columns: their order, a header even for no rows, unknown keys left out', () => {
    const w = writer({ columns: ['name', 'id'] });
    expect(w([{ id: 1, name: 'Ann', secret: 'x' }])).toBe('name,id\r\nAnn,1\r\n');
    expect(w([])).toBe('name,id\r\n');
    expect(w([['Ann', 1]])).toBe('name,id\r\nAnn,1\r\n');
  });

  it('neutralises text cells a spreadsheet would run as a formula; numbers stay as they are', () => {
    const rows = [{ a: '=HYPERLINK("http://x","y")', b: '+1+2', c: '-2+3', d: '@SUM(A1)', e: '\t=1', f: -5, g: '-5', h: '+3.5', i: 'a=b' }];
    expect(writer()(rows)).toBe(`a,b,c,d,e,f,g,h,i\r\n"'=HYPERLINK(""http://x"",""y"")",'+1+2,'-2+3,'@SUM(A1),'\t=1,-5,-5,+3.5,a=b\r\n`);
    expect(writer({ escape_formulas: false })([{ a: '=1+1' }])).toBe('a\r\n=1+1\r\n');
  });

  it.each<[string, unknown, RegExp]>([
    ['a nested value', [{ id: 1, tags: ['a'] }], /^row 1, column "tags": a nested value/],
    ['mixed rows', [{ a: 1 }, [1]], /^every row must be an object, or every row a list$/],
    ['a number', 42, /^a number is not a list of rows/],
  ])('refuses %s', (_label, value, expected) => {
    expect(() => writer()(value)).toThrow(CsvWriteError);
    expect(() => writer()(value)).toThrow(expected);
  });

  it('quotes a row of one empty field, which would otherwise be an empty line a reader skips', () => {
    expect(writer()([{ a: '' }, { a: null }, { a: 'x' }])).toBe('a\r\n""\r\n""\r\nx\r\n');
    expect(reader()(Buffer.from(writer()([{ a: '' }, { a: 'x' }])))).toEqual([{ a: '' }, { a: 'x' }]);
  });

  it('reads back what it writes', () => {
    const rows = [{ id: '1', name: 'Zoë "Z", Jr.', note: 'two\r\nlines' }, { id: '2', name: ' ', note: '' }];
    expect(reader()(Buffer.from(writer()(rows)))).toEqual(rows);
  });
});
