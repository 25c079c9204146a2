/** A JSON document of about `bytes` bytes: an order's lines, as integration payloads look. */
export function jsonBody(bytes: number): string {
  const lines: unknown[] = [];
  while (JSON.stringify({ order: 'A-1', lines }).length < bytes) lines.push({ sku: `SKU-${lines.length}`, name: `item number ${lines.length}`, qty: lines.length % 7, price: lines.length * 1.5, tags: ['a', 'b'] });
  return JSON.stringify({ order: 'A-1', lines });
}

/** The sizes of the JSON documents the peers suite sends and answers with. */
export const DOCUMENT_SIZES = [1024, 8192] as const;
