import { service, t } from 'svc/sdk';

/** GET /hello/{name}?times=2 → {"greeting": "Hello, Ann! Hello, Ann!"} */
export default service({
  input: {
    name: t.string({ description: 'Who to greet' }),
    times: t.integer({ default: 1, description: 'How many times' }),
  },
  handle(ctx) {
    ctx.log.info(`greeting ${ctx.input.name}`);
    return { greeting: Array(Math.min(ctx.input.times, 10)).fill(`Hello, ${ctx.input.name}!`).join(' ') };
  },
});
