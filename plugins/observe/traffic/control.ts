import type { ControlOp } from '../../../sdk/plugin/index.ts';
import type { TrafficRecorder } from './traffic.ts';
import { recentArgsSchema, statsArgsSchema, type RecentArgs, type StatsArgs } from './schema.ts';

/** The live view and the charts read these (admin API, Dashboard, `svc` control socket); a tenant's administrators see their tenant's channels. */
export function trafficControls(recorder: TrafficRecorder): ControlOp[] {
  const recent: ControlOp<RecentArgs> = {
    op: 'traffic.recent',
    readOnly: true,
    tenantScoped: true,
    args: recentArgsSchema,
    handler: async (args, caller) => recorder.recent(args, caller?.tenant),
  };
  const stats: ControlOp<StatsArgs> = {
    op: 'traffic.stats',
    readOnly: true,
    tenantScoped: true,
    args: statsArgsSchema,
    handler: async (args, caller) => recorder.stats(args, caller?.tenant),
  };
  return [recent, stats];
}
