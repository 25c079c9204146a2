import { SvcError } from '../../kernel/errors.ts';
import { BadRequest } from '../../sdk/errors.ts';
import { checkMail, type SendArgs } from '../../plugins/connectors/smtp/message.ts';
import { smtpConnectionSchema } from '../../plugins/connectors/smtp/schema.ts';
import type { FakeMailConnection, MailSentRecord } from '../../sdk/testing/index.ts';

/** A connection's default limits: the fake checks a mail as production would with them (header injection, addresses, sizes). */
const defaults = (name: string) => smtpConnectionSchema.parse({ name, host: 'fake.invalid', from: 'svc-test@fake.invalid' });

/** What the fake of a connection answers a send (the record is made by the caller), or 'no fake'. */
export function fakeMailSend(fake: FakeMailConnection | undefined, args: SendArgs, n: number): { record: MailSentRecord; answer: unknown } | 'no fake' {
  if (fake === undefined) return 'no fake';
  try {
    checkMail(args.message, defaults(args.connection));
  } catch (err) {
    // As the host answers it: the service sees a BadRequest.
    if (err instanceof SvcError) throw new BadRequest(err.details);
    throw err;
  }
  const queued = args.options.queue === true;
  const record: MailSentRecord = { connection: args.connection, message: args.message, queued };
  if (typeof fake === 'function') fake(record);
  const list = (v: string | string[] | undefined) => (v === undefined ? [] : typeof v === 'string' ? [v] : v);
  const recipients = [...list(args.message.to), ...list(args.message.cc), ...list(args.message.bcc)].map((a) => /<([^<>]+)>\s*$/.exec(a)?.[1] ?? a);
  const answer = queued ? { queued: true, cid: `queued-mail-${n}` } : { messageId: `<fake-${n}@svc-test>`, accepted: recipients, rejected: [] };
  return { record, answer };
}
