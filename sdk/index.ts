/**
 * The svc SDK: the only surface a service sees.
 *
 *   import { service, t, BadRequest } from 'svc/sdk';
 *   export default service({
 *     input: { name: t.string(), times: t.integer({ default: 1 }) },
 *     handle(ctx) { return { greeting: `hello ${ctx.input.name}`.repeat(ctx.input.times) }; },
 *   });
 */
import type { Model } from './model.ts';
import type { ServiceDefinition } from './context.ts';

export { t } from './model.ts';
export type { Field, FieldType, Model, InputOf, ValueOf } from './model.ts';
export type { Context, Delivery, Handler, Log, ResponseControl, ServiceDefinition, ServiceLimits, UploadedFile, User } from './context.ts';
export { ServiceError, type FieldProblem, BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PayloadTooLarge, TooManyRequests, BadGateway, GatewayTimeout, ServiceUnavailable } from './errors.ts';
export { hmacSha256Hex, hmacSha256Base64, verifyHmacSha256Hex, verifyHmacSha256Base64, sha256Hex, sha256Base64, timingSafeEqual, type Data } from './crypto.ts';
export { secret, type NamedSecret, type SignedHeaderOptions, type HmacAlgorithm, type SignatureEncoding } from './secrets.ts';
export { cache, type Cache, type CacheSetOptions } from './cache.ts';
export { mqtt, type MqttConnection, type MqttProperties, type MqttPublishOptions } from './mqtt.ts';
export { toBase64, fromBase64, utf8Encode, utf8Decode } from './internal/bytes.ts';

/** Declares a service: its input model, limits and handlers. The file's default export. */
export function service<M extends Model = Model>(definition: ServiceDefinition<M>): ServiceDefinition<M> {
  return definition;
}
export * from './hl7.ts';
export * from './download.ts';
export { publish, type PublishOptions } from './pubsub.ts';
export { invokeAsync, type InvokeAsyncOptions } from './queue.ts';
export { invoke, invokeAll, type InvokeCall, type InvokeOptions } from './invoke.ts';
export { outgoing, gatewayError, OutgoingError, type CallOptions, type OutgoingConnection, type OutgoingFailureKind, type OutgoingResponse, type ParamValue } from './outgoing.ts';
export { amqp, type AmqpConnection, type AmqpPublishOptions, type AmqpHeaderValue } from './amqp.ts';
export { mail, type MailAttachment, type MailConnection, type MailMessage, type MailQueued, type MailSendOptions, type MailSent } from './mail.ts';
export { sql, SqlError, type SqlConnection, type SqlField, type SqlParam, type SqlResult, type SqlRow, type SqlStatement } from './sql.ts';
export { sftp, type SftpConnection, type SftpEntry, type SftpGetOptions, type SftpPutOptions } from './sftp.ts';
