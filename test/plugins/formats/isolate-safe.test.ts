import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { createRequire } from 'node:module';
import type ivmTypes from 'isolated-vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAck } from '../../../sdk/hl7.ts';
import { contentDisposition } from '../../../sdk/download.ts';
import { isolatedVmEntry } from '../../../kernel/sandbox/ivm.ts';

// The isolated-vm line for this Node (vitest starts its workers with --no-node-snapshot).
const ivm = createRequire(import.meta.url)(isolatedVmEntry()) as typeof ivmTypes;

/**
 * The format helpers the SDK exposes (sdk/hl7.ts, sdk/download.ts), which the format plugins
 * also use on the host, must run in a bare V8 isolate: no Node APIs, no Buffer, no packages.
 * Bundle them as a service would get them and run them in isolated-vm.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const ENTRY = `
export * from './sdk/hl7.ts';
export * from './sdk/download.ts';
`;

let isolate: ivmTypes.Isolate;
let context: ivmTypes.Context;
let bundle: esbuild.BuildResult & { outputFiles: esbuild.OutputFile[]; metafile: esbuild.Metafile };

beforeAll(async () => {
  bundle = await esbuild.build({
    stdin: { contents: ENTRY, resolveDir: ROOT, loader: 'ts' },
    bundle: true,
    format: 'iife',
    globalName: 'helpers',
    platform: 'neutral',
    write: false,
    metafile: true,
  });
  isolate = new ivm.Isolate({ memoryLimit: 16 });
  context = await isolate.createContext();
  await (await isolate.compileScript(bundle.outputFiles[0]!.text)).run(context);
});

afterAll(() => isolate?.dispose());

const run = (code: string) => context.eval(code, { copy: true });

describe('SDK helpers in a bare isolate', () => {
  it('bundle nothing but their own files', () => {
    const inputs = Object.keys(bundle.metafile.inputs).filter((f) => f !== '<stdin>');
    expect(inputs.length).toBeGreaterThan(3);
    for (const f of inputs) expect(f).toMatch(/^sdk\/(hl7\/(ack|codec|escape|fields|types)|hl7|download)\.ts$/);
  });

  it('are part of an SDK that imports nothing outside sdk/ (plugins depend on the SDK, never the reverse)', async () => {
    const sdk = await esbuild.build({ entryPoints: [`${ROOT}sdk/index.ts`], absWorkingDir: ROOT, bundle: true, format: 'esm', platform: 'neutral', write: false, metafile: true });
    const inputs = Object.keys(sdk.metafile.inputs);
    expect(inputs).toContain('sdk/hl7/codec.ts');
    for (const f of inputs) expect(f).toMatch(/^sdk\//);
  });

  it('find no Node globals there (so the test means something)', async () => {
    expect(await run('typeof Buffer + typeof TextDecoder + typeof process + typeof require')).toBe('undefinedundefinedundefinedundefined');
  });

  it('build the same ACK as on the host', async () => {
    const msg = 'MSH|^~\\&|A|B|C|D|20240101||ADT^A01|CTRL|P|2.5\rPID|1||x\\F\\y\r';
    const opts = { controlId: 'K1', now: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)), text: 'Bad | PID' };
    const inIsolate = await run(`helpers.buildAck(${JSON.stringify(msg)}, 'AE', { controlId: 'K1', now: new Date(${opts.now.getTime()}), text: 'Bad | PID' })`);
    expect(inIsolate).toBe(buildAck(msg, 'AE', opts));
  });

  it('parse, read and write HL7 with escapes, including hex data', async () => {
    const msg = 'MSH|^~\\&|A|B|C|D|1||ORU^R01|9|P|2.5\rOBX|1|TX|||caf\\XC3A9\\ \\S\\ \\X0D\\\\X0A\\end\r';
    expect(await run(`helpers.getField(helpers.parseHl7(${JSON.stringify(msg)}), 'OBX.5')`)).toBe('café ^ \r\nend');
    expect(await run(`helpers.serializeHl7(helpers.parseHl7(${JSON.stringify(msg)}))`)).toBe(msg);
  });

  it('write the same Content-Disposition as on the host', async () => {
    for (const name of ['a.pdf', 'résumé.pdf', '日本語 "x".txt']) {
      expect(await run(`helpers.contentDisposition(${JSON.stringify(name)})`)).toBe(contentDisposition(name));
    }
  });
});
