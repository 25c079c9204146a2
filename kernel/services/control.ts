import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { DataStore } from '../../sdk/plugin/store.ts';
import type { SvcConfig } from '../config/schema.ts';
import { scopedRef, tenantOf } from '../../sdk/plugin/tenants.ts';
import { IssuesError, SvcError } from '../errors.ts';
import type { ControlOp, ServingVersion } from '../plugin.ts';
import { isServiceFile, serviceName, transpile, type DeployedVersion, type ServiceRegistry } from './registry.ts';
import { SharedServices } from './shared.ts';
import { DeployHistory } from './history.ts';
import { testCandidate, testFileOf } from './test-op.ts';

/**
 * Deployed services as control ops (admin API, Dashboard, control socket): list, read the
 * source, upload (a hot deploy that reports its outcome) and delete. An upload is compiled and
 * deployed before its file is written: a version that does not compile is refused whole (422
 * SERVICE_NOT_COMPILED, the position as an issue of `source`), and the previous one keeps
 * serving, on disk and in the store. On a PostgreSQL store uploads and deletes reach every node
 * (shared.ts), and the stored services are written into services_dir here before it deploys.
 */

export const MAX_SERVICE_SOURCE = 512 * 1024;

/** A plain file name in services_dir: letters, digits, `_` and `-`, then .ts or .js; no path, no dot file. */
const FILE_RE = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,99}\.(ts|js)$/;
/** A service to read: a tenant's by its qualified name (`acme/orders`), which its administrators may write short. */
const QUALIFIED_NAME_RE = /^([a-z][a-z0-9_-]{0,31}\/)?[A-Za-z0-9_][A-Za-z0-9_-]{0,99}$/;
const readNameField = scopedRef(z.string().regex(QUALIFIED_NAME_RE, "a service name: letters, digits, _ and -, at most 100; a tenant's as <tenant>/<name>")).describe(
  "Service name: its file name without the extension; a tenant's `<tenant>/<name>`.",
);

export const listArgs = z.object({}).strict();
export const nameArgs = z.object({ name: readNameField }).strict();
export const versionArgs = z
  .object({ name: readNameField, version: z.number().int().min(1).describe('A version number from services.history (1 is the oldest kept).') })
  .strict();
export const uploadArgs = z
  .object({
    file: z
      .string()
      .regex(FILE_RE, 'a plain file name like orders.ts or orders.js: letters, digits, _ and -, no path, not starting with a dot')
      .describe('File name in services_dir, e.g. orders.ts; the service is named after it (orders).'),
    tenant: z
      .string()
      .regex(/^[a-z][a-z0-9_-]{0,31}$/)
      .optional()
      .describe("A platform admin's upload into a tenant's services directory (the service is `<tenant>/<name>`); a tenant's administrators upload into their own tenant's, whatever this says."),
    source: z
      .string()
      .refine((s) => Buffer.byteLength(s) <= MAX_SERVICE_SOURCE, `at most ${MAX_SERVICE_SOURCE / 1024} KiB`)
      .describe('The whole source text of the service (TypeScript or JavaScript).'),
    test: z
      .boolean()
      .optional()
      .describe(
        "The test gate: run the service's own tests (`<name>.test.ts` beside it) against this version first, and deploy it only if they pass. A platform service's, by a platform administrator: a test file runs outside the sandbox.",
      ),
  })
  .strict();

export const checkArgs = z.object({ file: uploadArgs.shape.file, source: uploadArgs.shape.source }).strict();

/** `file:12:5: message` → line and column of the first error, when the message has them. */
function positionOf(error: string): { line: number; column: number } | null {
  const m = /^[^:\n]+:(\d+):(\d+): /.exec(error);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : null;
}

/** A compile error as issues of `field`, one per message line, each with its position when it has one (the editor marks it). */
function compileIssues(field: string, error: string): Array<{ path: string[]; message: string; position: { line: number; column: number } | null }> {
  return error.split('\n').map((message) => ({ path: [field], message, position: positionOf(message) }));
}

/** The tests' last lines, where `svc test` prints its summary (`1 failed, 9 passed (…)`). */
function testSummary(output: string): string {
  return output.trimEnd().split('\n').at(-1) ?? '';
}

export async function serviceControls(
  registry: ServiceRegistry,
  config: () => SvcConfig,
  store: DataStore,
  log: Logger,
  node: string,
  configPath: () => string,
): Promise<{ ops: ControlOp[]; servingVersion: (name: string) => Promise<ServingVersion | undefined> }> {
  const shared = await SharedServices.open(store, registry, log);
  const history = await DeployHistory.open(store, node, log);
  registry.on('deployed', (version: DeployedVersion) => void history.record(version));
  const files = () => (existsSync(registry.dir) ? readdirSync(registry.dir).filter(isServiceFile) : []);
  const fileOf = (name: string) => registry.get(name)?.file ?? files().find((f) => serviceName(f) === name);

  function describe(name: string) {
    const current = config();
    const svc = registry.get(name);
    const error = registry.errors.get(name) ?? null;
    const quarantine = registry.quarantineOf(name);
    const { timeout_ms, memory_mb } = current.server.sandbox;
    return {
      name,
      file: fileOf(name) ?? null,
      deployed: svc !== undefined,
      state: stateOf(svc !== undefined, error !== null, quarantine !== undefined),
      // With an error while deployed: the file on disk failed and the previous version keeps serving.
      error,
      quarantine: quarantine ?? null,
      // Serving the copy kept from before a restart, because the file did not compile then.
      last_good_from: svc?.lastGoodFrom ?? null,
      error_position: error === null ? null : positionOf(error),
      verbs: svc?.meta.verbs ?? [],
      limits: svc ? { timeout_ms: svc.meta.limits.timeoutMs ?? timeout_ms, memory_mb: svc.meta.limits.memoryMb ?? memory_mb } : null,
      // The services that may invoke it (`invokableBy`): ['*'] any, [] none.
      invokable_by: svc?.meta.invokableBy ?? [],
      channels: current.channel_rest.filter((c) => c.service === name).map((c) => c.name),
    };
  }

  // A tenant's administrators (admin API) see their tenant's services only; another's is not found.
  const list: ControlOp<z.infer<typeof listArgs>> = {
    op: 'services.list',
    readOnly: true,
    tenantScoped: true,
    args: listArgs,
    handler: async (_args, caller) => {
      const names = new Set([...registry.names(), ...registry.errors.keys(), ...files().map(serviceName)]);
      return [...names]
        .filter((name) => caller === undefined || tenantOf(name) === caller.tenant)
        .sort()
        .map(describe);
    },
  };

  const source: ControlOp<z.infer<typeof nameArgs>> = {
    op: 'services.source',
    readOnly: true,
    tenantScoped: true,
    args: nameArgs,
    handler: async ({ name }, caller) => {
      const file = caller === undefined || tenantOf(name) === caller.tenant ? fileOf(name) : undefined;
      if (!file || !existsSync(join(registry.dir, file))) throw new SvcError('NOT_FOUND', `no service file named '${name}' in ${registry.dir}`);
      // The file as it is now: when its last deploy failed, not the version that serves. Its test
      // file, when it has one, is what the test gate and Run tests run.
      const tests = tenantOf(name) === undefined ? testFileOf(registry.dir, name) : undefined;
      return { name, file, source: readFileSync(join(registry.dir, file), 'utf8'), test_file: tests ? basename(tests) : null };
    },
  };

  /** The directory's registry: the platform's, or a declared tenant's (NOT_FOUND for another). */
  const registryOf = (tenant: string | undefined): ServiceRegistry => {
    const found = registry.forTenant(tenant);
    if (!found) throw new SvcError('NOT_FOUND', `no tenant named '${tenant}'`);
    return found;
  };
  const filesOf = (r: ServiceRegistry) => (existsSync(r.dir) ? readdirSync(r.dir).filter(isServiceFile) : []);

  // A tenant's administrators upload and delete their tenant's services only (admin API, docs/tenants.md).
  const upload: ControlOp<z.infer<typeof uploadArgs>> = {
    op: 'services.upload',
    tenantScoped: true,
    args: uploadArgs,
    handler: async ({ file, source: text, tenant: asked, test }, caller, actor) => {
      const tenant = caller?.tenant ?? asked;
      const target = registryOf(tenant);
      const short = serviceName(file);
      const name = tenant === undefined ? short : `${tenant}/${short}`;
      const other = filesOf(target).find((f) => f !== file && serviceName(f) === short);
      if (other) throw new SvcError('CONFLICT', `service '${name}' is already the file ${other}: delete it first, or upload as ${other}`);
      if (!existsSync(target.dir)) throw new SvcError('NOT_FOUND', `services directory ${target.dir} does not exist`);
      const serving = () => (registry.get(name) ? 'the previous version keeps serving' : 'nothing was deployed');
      const tests = test ? await gate(target, tenant, name, file, text, serving) : undefined;
      const outcome = await target.upload(file, text, 'upload', actor);
      if (!outcome.ok) throw new IssuesError('SERVICE_NOT_COMPILED', `not deployed: ${outcome.error.split('\n')[0]}; ${serving()}`, compileIssues('source', outcome.error));
      // Only a version that compiled is written, here and on the other nodes.
      await shared?.uploaded(file, text, tenant);
      return { ...describe(name), serving: 'this version', ...(tests ? { tests } : {}) };
    },
  };

  /**
   * The test gate: the candidate compiled, then its own tests run against it (test-op.ts), before
   * anything is deployed or written. A tenant's tests are never run: they are its code outside the sandbox.
   */
  async function gate(target: ServiceRegistry, tenant: string | undefined, name: string, file: string, text: string, serving: () => string) {
    if (tenant !== undefined) throw new SvcError('FORBIDDEN', "a tenant's service is deployed without its tests run: they would run outside the sandbox");
    const compiled = transpile(file, text);
    if ('error' in compiled) throw new IssuesError('SERVICE_NOT_COMPILED', `not deployed: ${compiled.error.split('\n')[0]}; ${serving()}`, compileIssues('source', compiled.error));
    const run = await testCandidate(target.dir, file, text, configPath(), name);
    if (!run) throw new SvcError('NOT_FOUND', `service '${name}' has no test file (${name}.test.ts beside it) to run before deploying`);
    if (!run.passed) throw new IssuesError('SERVICE_TESTS_FAILED', `not deployed: its tests failed (${testSummary(run.output)}); ${serving()}`, [{ path: ['test'], message: run.output }]);
    return { passed: true, summary: testSummary(run.output), output: run.output };
  }

  const remove: ControlOp<z.infer<typeof nameArgs>> = {
    op: 'services.delete',
    tenantScoped: true,
    args: nameArgs,
    handler: async ({ name }, caller) => {
      const tenant = tenantOf(name);
      const target = caller === undefined || tenant === caller.tenant ? registry.forTenant(tenant) : undefined;
      const short = tenant === undefined ? name : name.slice(tenant.length + 1);
      const file = target && (registry.get(name)?.file ?? filesOf(target).find((f) => serviceName(f) === short));
      if (!target || !file || !existsSync(join(target.dir, file))) throw new SvcError('NOT_FOUND', `no service file named '${name}'`);
      rmSync(join(target.dir, file));
      await target.syncNow(file);
      await shared?.deleted(file, tenant);
      return { name, file, deleted: true, deployed: registry.get(name) !== undefined };
    },
  };

  /** A service of the caller's tenant (another's is not found, as in a URL). */
  const visible = (name: string, caller: { tenant: string } | undefined) => caller === undefined || tenantOf(name) === caller.tenant;

  const versions: ControlOp<z.infer<typeof nameArgs>> = {
    op: 'services.history',
    readOnly: true,
    tenantScoped: true,
    args: nameArgs,
    handler: async ({ name }, caller) => {
      await history.settled();
      const list = visible(name, caller) ? await history.list(name) : [];
      if (!list.length) throw new SvcError('NOT_FOUND', `no deployed version of a service named '${name}' is recorded`);
      // The newest version serves while the service is deployed: a save that did not compile is no version.
      return { name, serving: registry.get(name) ? list[0]!.version : null, versions: list };
    },
  };

  const version: ControlOp<z.infer<typeof versionArgs>> = {
    op: 'services.version',
    readOnly: true,
    tenantScoped: true,
    args: versionArgs,
    handler: async ({ name, version: n }, caller) => {
      await history.settled();
      const found = visible(name, caller) ? await history.get(name, n) : undefined;
      if (!found) throw new SvcError('NOT_FOUND', `service '${name}' has no version ${n}`);
      return { name, ...found };
    },
  };

  // Deploys an earlier version again, as an upload of its source would: compiled first, and written
  // to its file (on every node of a cluster) only once it deployed. It becomes the newest version.
  const rollback: ControlOp<z.infer<typeof versionArgs>> = {
    op: 'services.rollback',
    tenantScoped: true,
    args: versionArgs,
    handler: async ({ name, version: n }, caller, actor) => {
      await history.settled();
      const found = visible(name, caller) ? await history.get(name, n) : undefined;
      if (!found) throw new SvcError('NOT_FOUND', `service '${name}' has no version ${n}`);
      const tenant = tenantOf(name);
      const target = registryOf(tenant);
      const short = tenant === undefined ? name : name.slice(tenant.length + 1);
      const other = filesOf(target).find((f) => f !== found.file && serviceName(f) === short);
      if (other) throw new SvcError('CONFLICT', `service '${name}' is the file ${other} now, version ${n} was ${found.file}: delete ${other} first`);
      const outcome = await target.upload(found.file, found.source, 'rollback', actor);
      if (!outcome.ok) throw new IssuesError('SERVICE_NOT_COMPILED', `version ${n} did not deploy: ${outcome.error.split('\n')[0]}; the version before keeps serving`, compileIssues('version', outcome.error));
      await shared?.uploaded(found.file, found.source, tenant);
      await history.settled();
      const newest = (await history.list(name))[0];
      return { ...describe(name), rolled_back_to: n, version: newest?.version ?? null };
    },
  };

  // The Dashboard's editor checks a version before it is deployed: compiled here, nothing deployed or written.
  const check: ControlOp<z.infer<typeof checkArgs>> = {
    op: 'services.check',
    readOnly: true,
    tenantScoped: true,
    args: checkArgs,
    handler: async ({ file, source: text }) => {
      const compiled = transpile(file, text);
      if (!('error' in compiled)) return { ok: true, errors: [] };
      return { ok: false, errors: compileIssues('source', compiled.error).map(({ message, position }) => ({ message, position })) };
    },
  };

  /** The version serving now: the newest recorded while the service is deployed (as services.history says). */
  async function servingVersion(name: string): Promise<ServingVersion | undefined> {
    if (!registry.get(name)) return undefined;
    await history.settled();
    const all = await history.list(name);
    const newest = all[0];
    return newest && { version: newest.version, hash: newest.hash, sameSource: all.filter((v) => v.hash === newest.hash).map((v) => v.version) };
  }

  return { ops: [list, source, upload, remove, versions, version, rollback, check], servingVersion };
}

/**
 * A service's state as the lists show it: serving its file; serving the previous version (its file
 * did not compile); not deployed (no version compiled); quarantined (it crashed its sandbox process
 * repeatedly: calls answer 503 until its file changes).
 */
function stateOf(deployed: boolean, failed: boolean, quarantined: boolean): 'serving' | 'serving_previous' | 'not_deployed' | 'quarantined' {
  if (quarantined) return 'quarantined';
  if (!deployed) return 'not_deployed';
  return failed ? 'serving_previous' : 'serving';
}
