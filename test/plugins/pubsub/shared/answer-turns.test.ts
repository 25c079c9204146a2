import { describe, expect, it } from 'vitest';
import { AnswerTurns } from '../../../../plugins/pubsub/shared/answer-turns.ts';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('AnswerTurns', () => {
  it('lets the first answer of a turn go at once and holds the others of that turn until its check phase', async () => {
    const turns = new AnswerTurns();
    const order: string[] = [];
    expect(turns.next()).toBeUndefined();
    const second = turns.next();
    const third = turns.next();
    expect(second).toBeInstanceOf(Promise);
    expect(third).toBe(second);
    void second!.then(() => order.push('held answers'));
    setImmediate(() => order.push('check phase'));
    await Promise.resolve();
    expect(order).toEqual([]);
    await nextTurn();
    await nextTurn();
    expect(order).toEqual(['held answers', 'check phase']);
  });

  it('starts afresh in the next turn: a lone request per turn never waits', async () => {
    const turns = new AnswerTurns();
    for (let i = 0; i < 3; i++) {
      expect(turns.next()).toBeUndefined();
      await nextTurn();
    }
  });
});
