import { randomBytes } from 'node:crypto';
import type { Capabilities } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import type { ResourceSet } from './engine.ts';
import type { PubSubStrategy } from './strategy.ts';

/** `svc demo`: demo credentials and topics for trying variant B, in memory only (spec C: they do not survive restarts). */
export const DEMO_TOPICS = ['/demo/orders', '/demo/invoices', '/demo/alerts'] as const;

export interface DemoUser {
  username: string;
  password: string;
  endpoint: string;
  subscribed: string[];
}

export interface DemoImport {
  users: DemoUser[];
  topics: string[];
}

function demoResources(): { users: DemoUser[]; resources: ResourceSet } {
  const users: DemoUser[] = [
    { username: 'demo.user.1', password: randomBytes(12).toString('base64url'), endpoint: 'demo.endpoint.1', subscribed: [...DEMO_TOPICS] },
    { username: 'demo.user.2', password: randomBytes(12).toString('base64url'), endpoint: 'demo.endpoint.2', subscribed: ['/demo/alerts'] },
  ];
  return {
    users,
    resources: {
      topics: DEMO_TOPICS.map((name) => ({ name })),
      endpoints: users.map((u) => ({ name: u.endpoint, security: u.username, pub: ['/demo/**'], sub: ['/demo/**'] })),
      subscriptions: users.map((u) => ({ endpoint: u.endpoint, topics: u.subscribed })),
    },
  };
}

/** Imports the demo once per process; later calls return the same credentials. */
export class Demo {
  private imported: Promise<DemoImport> | undefined;

  constructor(
    private readonly engine: PubSubStrategy,
    private readonly register: () => Capabilities['security.basic.register'] | undefined,
  ) {}

  run(): Promise<DemoImport> {
    this.imported ??= this.importNow().catch((err) => {
      this.imported = undefined;
      throw err;
    });
    return this.imported;
  }

  private async importNow(): Promise<DemoImport> {
    const register = this.register();
    if (!register) throw new Error("the basic-auth plugin offers no 'security.basic.register'; demo credentials cannot be created");
    const { users, resources } = demoResources();
    for (const u of users) await register({ name: u.username, username: u.username, lifetime: 'ephemeral', password: u.password });
    await this.engine.addEphemeral(resources);
    return { users, topics: [...DEMO_TOPICS] };
  }
}
