import busboy from 'busboy';
import { addField, FieldNameError } from '../shared/fields.ts';
import type { Fields } from '../shared/fields.ts';
import type { UploadedFile } from '../../../sdk/plugin/index.ts';

/**
 * multipart/form-data body → fields and files, with busboy reading the already-buffered body.
 * Any limit crossed fails the whole request (never a truncated file or a dropped part).
 */

export interface MultipartLimits {
  maxFileBytes: number;
  maxFiles: number;
  maxFields: number;
  maxTotalBytes: number;
  maxFieldBytes: number;
}

export type MultipartFailure = 'malformed' | 'too_large' | 'media_type';

export class MultipartError extends Error {
  constructor(message: string, readonly kind: MultipartFailure) {
    super(message);
    this.name = 'MultipartError';
  }
}

export interface MultipartResult {
  fields: Fields;
  files: UploadedFile[];
}

const FIELD_NAME_BYTES = 200;

/** Header values and file names in error messages: quoted and short (a header may be 16 KB). */
function quoted(s: string): string {
  return JSON.stringify(s.length > 100 ? s.slice(0, 100) + '…' : s);
}

export function parseMultipart(body: Buffer, contentType: string | undefined, limits: MultipartLimits): Promise<MultipartResult> {
  if (contentType === undefined || !/^multipart\/form-data\s*(;|$)/i.test(contentType)) {
    return Promise.reject(new MultipartError(`expected Content-Type multipart/form-data, got ${contentType === undefined ? 'none' : quoted(contentType)}`, 'media_type'));
  }
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      defParamCharset: 'utf8', // browsers send non-ASCII filenames as raw UTF-8
      preservePath: false,
      // busboy counts reaching a size limit as truncation, so it gets one byte more than we allow.
      limits: {
        fileSize: limits.maxFileBytes + 1,
        files: limits.maxFiles,
        fields: limits.maxFields,
        fieldSize: limits.maxFieldBytes + 1,
      },
    });
  } catch (err) {
    return Promise.reject(new MultipartError(err instanceof Error ? err.message : String(err), 'malformed'));
  }

  return new Promise<MultipartResult>((resolve, reject) => {
    const fields: Fields = {};
    const files: UploadedFile[] = [];
    let totalBytes = 0;
    let settled = false;
    let pendingFiles = 0;
    let parserClosed = false;

    const fail = (err: MultipartError) => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    const maybeDone = () => {
      if (!settled && parserClosed && pendingFiles === 0) {
        settled = true;
        resolve({ fields, files });
      }
    };

    // busboy applies no name limit to multipart bodies, so it is checked here; a part without a
    // name (RFC 7578 requires one; busboy gives undefined for it and for name="") is refused too.
    const nameProblem = (name: string | undefined): MultipartError | undefined => {
      if (!name) return new MultipartError('a part has no field name', 'malformed');
      if (name.length > FIELD_NAME_BYTES / 4 && Buffer.byteLength(name) > FIELD_NAME_BYTES) return new MultipartError(`a field name is longer than ${FIELD_NAME_BYTES} bytes`, 'too_large');
      return undefined;
    };

    parser.on('field', (name, value, info) => {
      if (settled) return;
      const problem = nameProblem(name);
      if (problem) return fail(problem);
      if (info.valueTruncated) return fail(new MultipartError(`field ${quoted(name)} is larger than ${limits.maxFieldBytes} bytes`, 'too_large'));
      try {
        addField(fields, name, value);
      } catch (err) {
        fail(new MultipartError(err instanceof FieldNameError ? err.message : String(err), 'malformed'));
      }
    });

    parser.on('file', (field, stream, info) => {
      pendingFiles++;
      const problem = nameProblem(field);
      if (problem) fail(problem);
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        if (settled) return;
        size += chunk.length;
        totalBytes += chunk.length;
        if (totalBytes > limits.maxTotalBytes) {
          fail(new MultipartError(`uploaded files together exceed ${limits.maxTotalBytes} bytes`, 'too_large'));
          return;
        }
        chunks.push(chunk);
      });
      stream.on('limit', () => fail(new MultipartError(`file ${quoted(info.filename ?? field)} is larger than ${limits.maxFileBytes} bytes`, 'too_large')));
      stream.on('error', (err: Error) => fail(new MultipartError(err.message, 'malformed')));
      stream.on('end', () => {
        pendingFiles--;
        if (settled) return;
        const filename = info.filename ?? '';
        // A browser's empty file input sends a part with no name and no bytes: not an upload.
        if (!(filename === '' && size === 0)) {
          if (field === '__proto__' || field === 'constructor' || field === 'prototype') {
            return fail(new MultipartError(`the field name ${JSON.stringify(field)} is not allowed`, 'malformed'));
          }
          files.push({ field, filename, contentType: info.mimeType, content: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
        }
        maybeDone();
      });
    });

    parser.on('filesLimit', () => fail(new MultipartError(`more than ${limits.maxFiles} files`, 'too_large')));
    parser.on('fieldsLimit', () => fail(new MultipartError(`more than ${limits.maxFields} fields`, 'too_large')));
    parser.on('error', (err: Error) => fail(new MultipartError(err.message, 'malformed')));
    parser.on('close', () => {
      parserClosed = true;
      maybeDone();
    });
    // The whole body is in memory: once busboy has taken it in and been ended, every event it
    // will give is queued before the next turn of the event loop. busboy 1.6 can take a closing
    // delimiter and still open a file part after it (a mutated body found this); it then waits
    // for that part's end forever, and the request with it. Whatever is unsettled by then is a
    // part the body left open.
    parser.write(body, () => {
      parser.end();
      setImmediate(() => fail(new MultipartError('a part is left open after the closing boundary', 'malformed')));
    });
  });
}
