import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * What the service editor offers after `ctx.`: the members of the services' SDK `Context` and of
 * the interfaces its members are typed with (`ctx.log.`, `ctx.user.`), read from the SDK's own
 * source when the Dashboard starts, so the list is never out of step with the SDK. The SDK's
 * interfaces are written one member per line, each after its doc comment: that is what is read.
 */

export interface SdkMember {
  name: string;
  /** The member's type as written (`string | undefined`, `(): Uint8Array` for a method). */
  type: string;
  /** Its doc comment, as one line of text ('' when it has none). */
  doc: string;
  /** The SDK interface its value is, when it is one (`Log` for `log`): its members follow a dot. */
  of?: string;
}

export interface SdkTypes {
  /** The handler's argument, as services name it. */
  ctx: SdkMember[];
  /** Interfaces reachable from ctx's members, by name. */
  types: Record<string, SdkMember[]>;
}

const CONTEXT_FILE = fileURLToPath(new URL('../../../sdk/context.ts', import.meta.url));

const INTERFACE_RE = /export interface (\w+)(?:<.*>)?\s*\{/g;
const MEMBER_RE = /^\s*(?:readonly\s+)?(\w+)(\?)?(\([^)]*\))?\s*:\s*(.+?);\s*$/;

/** The body of each `export interface NAME {…}` of a source, by name (braces counted). */
function interfaceBodies(source: string): Map<string, string> {
  const bodies = new Map<string, string>();
  for (const m of source.matchAll(INTERFACE_RE)) {
    const start = m.index + m[0].length;
    let depth = 1;
    let i = start;
    for (; i < source.length && depth > 0; i++) {
      if (source[i] === '{') depth++;
      else if (source[i] === '}') depth--;
    }
    bodies.set(m[1]!, source.slice(start, i - 1));
  }
  return bodies;
}

/** The members of an interface body at its own depth, each with the doc comment above it. */
function membersOf(body: string): SdkMember[] {
  const members: SdkMember[] = [];
  let doc = '';
  let depth = 0;
  let inDoc = false;
  for (const line of body.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('/**')) {
      inDoc = true;
      doc = '';
    }
    if (inDoc) {
      doc += ` ${trimmed.replace(/^\/\*\*|\*\/$|^\*/g, '').trim()}`;
      if (trimmed.endsWith('*/')) inDoc = false;
      continue;
    }
    const m = depth === 0 ? MEMBER_RE.exec(line) : null;
    if (m) {
      const [, name, optional, args, type] = m;
      members.push({ name: name!, type: args ? `${args}: ${type}` : `${type}${optional ? ' | undefined' : ''}`, doc: doc.trim().replace(/\s+/g, ' ') });
      doc = '';
    }
    depth += (line.match(/\{/g)?.length ?? 0) - (line.match(/\}/g)?.length ?? 0);
  }
  return members;
}

/** The editor's completions from a source declaring `Context` (sdk/context.ts's text). */
export function sdkTypesOf(source: string): SdkTypes {
  const bodies = interfaceBodies(source);
  const context = bodies.get('Context');
  if (context === undefined) throw new Error('the SDK source declares no Context interface');
  const types: Record<string, SdkMember[]> = {};
  const link = (members: SdkMember[]) =>
    members.map((member) => {
      // `User | undefined`, `readonly UploadedFile[]` is a list, not a User.
      const named = /^(\w+)(?:\s*\|\s*undefined)?$/.exec(member.type)?.[1];
      if (!named || !bodies.has(named)) return member;
      types[named] ??= membersOf(bodies.get(named)!);
      return { ...member, of: named };
    });
  return { ctx: link(membersOf(context)), types };
}

/** The completions of the SDK this server runs, read once. */
export function readSdkTypes(): SdkTypes {
  return sdkTypesOf(readFileSync(CONTEXT_FILE, 'utf8'));
}
