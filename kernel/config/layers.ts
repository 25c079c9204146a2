import type { ConfigLayer, RawConfig } from '../plugin.ts';

/** The config layers plugins register, applied in registration order on the file's data. */
export class ConfigLayers {
  private readonly list: ConfigLayer[] = [];

  get size(): number {
    return this.list.length;
  }

  names(): string[] {
    return this.list.map((l) => l.name);
  }

  async ready(): Promise<void> {
    for (const layer of this.list) await layer.ready?.();
  }

  add(layer: ConfigLayer): void {
    if (this.list.some((l) => l.name === layer.name)) throw new Error(`a config layer named '${layer.name}' exists already`);
    this.list.push(layer);
  }

  /** `candidate` takes the place of the layer of its name (or comes last when there is none). */
  applyAll(fileRaw: RawConfig, candidate?: ConfigLayer): RawConfig {
    const layers = candidate === undefined ? this.list : this.list.some((l) => l.name === candidate.name) ? this.list.map((l) => (l.name === candidate.name ? candidate : l)) : [...this.list, candidate];
    let raw = fileRaw;
    for (const layer of layers) {
      try {
        raw = layer.apply(raw);
      } catch (err) {
        throw new Error(`config layer '${layer.name}': ${(err as Error).message}`);
      }
    }
    return raw;
  }
}
