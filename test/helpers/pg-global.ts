import { dropPgSchemas } from './store.ts';

/** vitest globalSetup: the schemas this run created in the test database go at its end. */
export default function setup(): () => Promise<void> {
  return () => dropPgSchemas();
}
