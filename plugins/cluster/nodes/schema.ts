import { z } from 'zod';

export const nodesOptionsSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[\w.:@-]+$/, 'letters, digits and . _ : @ - only')
      .optional()
      .describe('This node\'s name in the nodes list and in /ready. Default: $SVC_NODE_NAME, else `<hostname>:<port>`. Names need not be unique: each start also gets its own id.'),
    heartbeat_ms: z
      .number()
      .int()
      .min(100)
      .max(600_000)
      .default(5000)
      .describe('How often this node writes that it is alive into the data store.'),
    down_after_ms: z
      .number()
      .int()
      .min(300)
      .max(3_600_000)
      .default(15_000)
      .describe('A node not heard from for this long is listed as down (it stopped without saying so: kill -9, a lost machine).'),
    forget_after_ms: z
      .number()
      .int()
      .min(60_000)
      .default(24 * 3_600_000)
      .describe('Stopped or down nodes leave the list after this long.'),
  })
  .strict()
  .prefault({});

export type NodesOptions = z.infer<typeof nodesOptionsSchema>;

export const listArgsSchema = z.object({}).strict();
