import { readFileSync } from 'node:fs';
import { definePlugin, type ControlOp } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { defaultNodeName, NodeRegistry } from './registry.ts';
import { listArgsSchema, nodesOptionsSchema, type NodesOptions } from './schema.ts';

const SVC_VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * This node's identity (capability `cluster.node`, shown by /ready) and the list of nodes sharing
 * the data store (control op `cluster.nodes`: the Dashboard's Nodes page, `svc` control socket).
 * See README.md.
 */
export default definePlugin<NodesOptions, NodeRegistry>({
  name: 'nodes',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.1.0',
  configSchema: nodesOptionsSchema,
  provides: ['cluster.node'],
  async setup(kernel, options) {
    const name = options.name ?? defaultNodeName(kernel.env, kernel.server().port);
    const timing = { heartbeatMs: options.heartbeat_ms, downAfterMs: options.down_after_ms, forgetAfterMs: options.forget_after_ms };
    const onError = (error: string | undefined) => {
      if (error === undefined) kernel.log.info({ node: registry.self.id }, 'nodes: heartbeat written again');
      else kernel.log.warn({ node: registry.self.id, err: error }, 'nodes: heartbeat failed');
    };
    const onRejoined = () =>
      kernel.log.warn(
        { node: registry.self.id, forget_after_ms: timing.forgetAfterMs },
        'nodes: this node was silent so long that other nodes forgot it; its row is written again (they may have taken over its queued events meanwhile)',
      );
    const registry = new NodeRegistry(kernel.store, kernel.clock, timing, name, SVC_VERSION, onError, onRejoined);
    await registry.start();
    kernel.provide('cluster.node', { ...registry.self, liveNodes: () => registry.liveIds() });
    const list: ControlOp = { op: 'cluster.nodes', readOnly: true, args: listArgsSchema, handler: async () => ({ self: registry.self.id, nodes: await registry.list() }) };
    kernel.addControl(list);
    kernel.log.info({ node: registry.self.id, node_name: name }, 'nodes: this node registered');
    return registry;
  },
  stop: (registry) => registry.stop(),
  hooks: {},
});
