import type { Contributions } from '../../sdk/plugin/contract.ts';
import type { DecodedMessage, MessageDecoder } from '../../sdk/plugin/messages.ts';
import { SvcError } from '../errors.ts';

/**
 * The message decoders the enabled plugins contribute (Contributions.messageFormats), by format:
 * what `KernelApi.decodeMessage` reads. The kernel knows no format by name.
 */
export class MessageFormats {
  private decoders: Map<string, MessageDecoder> | undefined;

  constructor(private readonly contributions: () => readonly Contributions[]) {}

  /** The formats some enabled plugin decodes (config checks). */
  names(): ReadonlySet<string> {
    return new Set(this.map().keys());
  }

  decode(format: string, body: Buffer, settings: unknown): DecodedMessage {
    const decoder = this.map().get(format);
    if (!decoder) throw new SvcError('INTERNAL', `no enabled plugin decodes messages of data format '${format}'`);
    return decoder.decode(body, settings);
  }

  // Built on first use: the plugins are all set up by then, and their contributions do not change.
  private map(): Map<string, MessageDecoder> {
    if (!this.decoders) {
      this.decoders = new Map();
      for (const c of this.contributions()) for (const [format, decoder] of Object.entries(c.messageFormats ?? {})) this.decoders.set(format, decoder);
    }
    return this.decoders;
  }
}

/** The formats a plugin list decodes, for validating a config before the plugins are set up. */
export function messageFormatNames(contributions: Iterable<Contributions | undefined>): ReadonlySet<string> {
  const names = new Set<string>();
  for (const c of contributions) for (const format of Object.keys(c?.messageFormats ?? {})) names.add(format);
  return names;
}
