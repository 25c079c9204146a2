/**
 * Shapes plugins extend by declaration merging, as they do Capabilities. The kernel declares
 * only what it reads itself; a plugin family adds what it contributes:
 *
 *   declare module '<path to>/sdk/plugin/extensions.ts' {
 *     interface ConfigSections { groups: Group[] }   // a top-level section it owns (Contributions.sections)
 *     interface AuthInfo { group?: string }          // what its authenticate step records
 *     interface ChannelFields { use_queue?: boolean } // keys it adds to channels (Contributions.channelFields)
 *   }
 */

/** Top-level config sections that plugins own; each is present once its plugin is enabled. */
// biome-ignore lint/suspicious/noEmptyInterface: empty until plugins extend it by declaration merging
export interface ConfigSections {}

/**
 * Keys plugins add to every `channel_rest[]` entry, declared optional: a key exists only while
 * its plugin is enabled.
 */
// biome-ignore lint/suspicious/noEmptyInterface: empty until plugins extend it by declaration merging
export interface ChannelFields {}

/**
 * Keys plugins add to the `server` section (Contributions.serverFields), e.g. the admin
 * listener's `server.admin`; declared optional: a key exists only while its plugin is enabled.
 */
// biome-ignore lint/suspicious/noEmptyInterface: empty until plugins extend it by declaration merging
export interface ServerFields {}

/** Who a security plugin recognised (exchange.auth). The service sees it as `ctx.user`. */
export interface AuthInfo {
  /** Security type, e.g. basic_auth. */
  type: string;
  /** Name of the definition that matched. */
  definition: string;
  /** The caller's name: a Basic Auth username, an API key definition's name, a token's subject. */
  username: string;
}
