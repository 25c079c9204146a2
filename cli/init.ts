import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The services' SDK of this svc installation: what `svc/sdk` means in a service file. */
const SDK_ENTRY = fileURLToPath(new URL('../sdk/index.ts', import.meta.url));
/** Its testing API, what `svc/sdk/testing` means in a test file (`svc test`). */
const TESTING_ENTRY = fileURLToPath(new URL('../sdk/testing/index.ts', import.meta.url));

const SAMPLE_SERVICE = `import { service, t, BadRequest } from 'svc/sdk';

/** GET /hello/{name}?greeting=Hi → {"message": "Hi, Ada"} */
export default service({
  input: {
    name: t.string({ description: 'Who to greet' }),
    greeting: t.string({ default: 'Hello', description: 'The word to greet with' }),
  },
  handle(ctx) {
    if (ctx.input.name.length > 100) throw new BadRequest('name is too long');
    ctx.log.info(\`greeting \${ctx.input.name}\`);
    return { message: \`\${ctx.input.greeting}, \${ctx.input.name}\` };
  },
});
`;

const SAMPLE_TEST = `import { BadRequest } from 'svc/sdk';
import { expect, test, testService } from 'svc/sdk/testing';

// \`svc test\` runs this file; the service runs in the sandbox, as under \`svc start\`.
const hello = testService('hello');

test('greets by name, with the default greeting', async () => {
  const res = await hello.get({ name: 'Ada' });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ message: 'Hello, Ada' });
  expect(res.logs).toContain({ level: 'info', message: 'greeting Ada' });
});

test('refuses a name that is too long', async () => {
  const res = await hello.get({ name: 'x'.repeat(101) });
  expect(res.error).toBeInstanceOf(BadRequest);
  expect(res.status).toBe(400);
});
`;

const SAMPLE_CONFIG = `# svc configuration of this directory: \`svc start --config svc.yaml\` from here.
# Relative paths are relative to the directory svc starts in.
server:
  host: 127.0.0.1
  port: 17010
  data_dir: ./data
  services_dir: ./services

channel_rest:
  - name: hello
    url_path: /hello/{name}
    service: hello
    method: GET
    security: none
`;

/** Relative when the file is reachable that way (editors show shorter paths), absolute otherwise. */
function pathFrom(dir: string, file: string): string {
  const rel = relative(dir, file);
  return rel.startsWith('..') || rel.startsWith('/') ? file : `./${rel}`;
}

function tsconfig(dir: string): string {
  const config = {
    compilerOptions: {
      target: 'ES2022',
      module: 'ESNext',
      moduleResolution: 'Bundler',
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      allowImportingTsExtensions: true,
      // Services run in a sandbox without Node: no Node or DOM globals to lean on by mistake.
      lib: ['ES2022'],
      types: [],
      paths: { 'svc/sdk': [pathFrom(dir, SDK_ENTRY)], 'svc/sdk/testing': [pathFrom(dir, TESTING_ENTRY)] },
    },
    include: ['services/**/*.ts'],
  };
  return JSON.stringify(config, null, 2) + '\n';
}

/**
 * `svc init DIR`: a service directory anywhere, with editor types for `svc/sdk` and
 * `svc/sdk/testing` (a tsconfig whose paths point at this installation's SDK), a sample service,
 * its test and a config that serves it.
 * Existing files are left as they are.
 */
export function initDirectory(target: string, out: (line: string) => void): number {
  const dir = resolve(target);
  mkdirSync(join(dir, 'services'), { recursive: true });
  const files: Array<[string, string]> = [
    ['tsconfig.json', tsconfig(dir)],
    ['services/hello.ts', SAMPLE_SERVICE],
    ['services/hello.test.ts', SAMPLE_TEST],
    ['svc.yaml', SAMPLE_CONFIG],
  ];
  for (const [name, text] of files) {
    const path = join(dir, name);
    if (existsSync(path)) {
      out(`kept     ${path} (exists)`);
      continue;
    }
    writeFileSync(path, text);
    out(`created  ${path}`);
  }
  out('');
  out(`Open ${dir} in your editor: services get the types of svc/sdk from tsconfig.json.`);
  out(`Develop: cd ${dir} && svc dev --config svc.yaml (saving a file deploys it), then curl http://127.0.0.1:17010/hello/Ada`);
  out(`Test: svc test (runs services/*.test.ts against the services in the sandbox); serve: svc start --config svc.yaml`);
  return 0;
}
