import { describe, expect, it } from 'vitest';
import { BuiltByName } from '../../../../plugins/connectors/shared/built.ts';

interface Entry {
  name: string;
  host: string;
}

describe('BuiltByName', () => {
  it('keeps what an unchanged entry built, builds new and changed ones, and hands back what they replaced', () => {
    const built = new BuiltByName<{ entry: Entry }>();
    let builds = 0;
    const build = (entry: Entry) => {
      builds++;
      return { entry };
    };
    const first = built.sync([{ name: 'a', host: 'x' }, { name: 'b', host: 'y' }], build);
    expect(first.built.map((v) => v.entry.name)).toEqual(['a', 'b']);
    expect(first.retired).toEqual([]);
    const a = built.get('a')!;
    const b = built.get('b')!;

    const second = built.sync([{ name: 'a', host: 'x' }, { name: 'b', host: 'z' }, { name: 'c', host: 'w' }], build);
    expect(built.get('a')).toBe(a);
    expect(second.kept).toEqual([a]);
    expect(second.built.map((v) => v.entry.name)).toEqual(['b', 'c']);
    expect(second.retired).toEqual([b]);
    expect(builds).toBe(4);

    const third = built.sync([{ name: 'c', host: 'w' }], build);
    expect(third.retired.map((v) => v.entry.name).sort()).toEqual(['a', 'b']);
    expect(built.values().map((v) => v.entry.name)).toEqual(['c']);
    expect(built.get('a')).toBeUndefined();
  });

  it('rebuilds when something else the value reads changes', () => {
    const built = new BuiltByName<string>();
    let zone = 'UTC';
    const sync = () => built.sync([{ name: 'a' }], () => `a@${zone}`, (entry) => [entry, zone]);
    sync();
    expect(sync().kept).toEqual(['a@UTC']);
    zone = 'Europe/Berlin';
    const changed = sync();
    expect(changed.built).toEqual(['a@Europe/Berlin']);
    expect(changed.retired).toEqual(['a@UTC']);
  });
});
