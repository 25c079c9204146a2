import type { ResourceSet } from './engine.ts';

/** The built-in test resources every environment has (spec, section B, last paragraph). */
export const BUILTIN = {
  topic: '/svc/test/sample',
  endpoint: 'svc.pubsub.test.endpoint',
  secdef: 'svc.pubsub.test.secdef',
  username: 'svc.pubsub.test.secdef',
  patterns: ['/svc/test/*'],
} as const;

export const BUILTIN_RESOURCES: ResourceSet = {
  topics: [{ name: BUILTIN.topic }],
  endpoints: [{ name: BUILTIN.endpoint, security: BUILTIN.secdef, pub: BUILTIN.patterns, sub: BUILTIN.patterns }],
  subscriptions: [],
};
