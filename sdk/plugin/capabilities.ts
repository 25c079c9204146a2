/**
 * Capabilities plugins offer each other (`kernel.provide` / `kernel.lookup`), typed by
 * declaration merging: a plugin family adds its names to this interface,
 *
 *   declare module '<path to>/sdk/plugin/capabilities.ts' {
 *     interface Capabilities { 'pubsub.engine': PubSubEngineApi }
 *   }
 *
 * and lookups of that name are typed everywhere. A plugin also lists the names it `provides`
 * and `needs`, so a missing one is refused at load, naming both plugins.
 */
// biome-ignore lint/suspicious/noEmptyInterface: empty until plugins extend it by declaration merging
export interface Capabilities {}

export type CapabilityName = keyof Capabilities & string;
