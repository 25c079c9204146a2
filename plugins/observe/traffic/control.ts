import type { ControlOp } from '../../../sdk/plugin/index.ts';
import type { TrafficRecorder } from './traffic.ts';
import { recentArgsSchema, statsArgsSchema, type RecentArgs, type StatsArgs } from './schema.ts';

/** The live view and the charts read these (admin API, Dashboard, `svc` control socket). */
export function trafficControls(recorder: TrafficRecorder): ControlOp[] {
  const recent: ControlOp<RecentArgs> = {
    op: 'traffic.recent',
    readOnly: true,
    args: recentArgsSchema,
    handler: async (args) => recorder.recent(args),
  };
  const stats: ControlOp<StatsArgs> = {
    op: 'traffic.stats',
    readOnly: true,
    args: statsArgsSchema,
    handler: async (args) => recorder.stats(args),
  };
  return [recent, stats];
}
