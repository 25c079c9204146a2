import { isTopicName } from './patterns.ts';

/**
 * The topic named by the rest of a URL path. A topic's leading slash doubles as the path
 * separator (`/svc/pubsub/topic/svc/test/sample` is `/svc/test/sample`), and a
 * percent-encoded name (`%2Fsvc%2Ftest%2Fsample`) addresses the same topic.
 * Undefined when the result is not a valid topic name.
 */
export function topicFromPath(rest: string | undefined): string | undefined {
  if (rest === undefined || rest === '') return undefined;
  let name = rest;
  // Topic names never contain '%', so decoding until none is left is unambiguous.
  for (let i = 0; i < 3 && name.includes('%'); i++) {
    try {
      name = decodeURIComponent(name);
    } catch {
      return undefined;
    }
  }
  if (!name.startsWith('/')) name = `/${name}`;
  return isTopicName(name) ? name : undefined;
}
