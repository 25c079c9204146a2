import { definePlugin } from '../../../sdk/plugin/index.ts';
import { trafficControls } from './control.ts';
import { trafficOptionsSchema, type TrafficOptions } from './schema.ts';
import { TrafficRecorder } from './traffic.ts';

/**
 * Recent requests and per-channel rates, in memory, for the management plane's live view and
 * charts (control ops traffic.recent and traffic.stats). See README.md.
 */
export default definePlugin<TrafficOptions, TrafficRecorder>({
  name: 'traffic',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.1.0',
  configSchema: trafficOptionsSchema,
  setup(kernel, options) {
    const recorder = new TrafficRecorder(options.recent, kernel.clock);
    for (const op of trafficControls(recorder)) kernel.addControl(op);
    return recorder;
  },
  hooks: {
    onResponse: ({ channel, state }) => state.recorderFor(channel.name),
  },
});
