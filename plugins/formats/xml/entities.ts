/**
 * The entity decoder handed to fast-xml-parser. It knows only what XML itself defines: the five
 * predefined entities and numeric character references. Anything else (entities a DOCTYPE would
 * declare, HTML names) is an error rather than text passed through, and a document may hold at
 * most `maxReferences` references, so a flood of them costs a bounded amount of work.
 */

const PREDEFINED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const REFERENCE = /&([^;&<\s]*);/g;

/** Thrown from inside the parser; the codec turns it into a 400 reason. */
export class XmlRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'XmlRejected';
  }
}

function isXmlChar(cp: number): boolean {
  return cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

export class StrictEntityDecoder {
  private count = 0;
  constructor(private readonly maxReferences: number) {}

  reset(): void {
    this.count = 0;
  }

  // DOCTYPE is refused before parsing; these hooks only exist to satisfy the parser's interface.
  setExternalEntities(): void {}
  setXmlVersion(): void {}
  addInputEntities(): void {
    throw new XmlRejected('entity declarations are not allowed');
  }

  decode(text: string): string {
    if (text.indexOf('&') === -1) return text;
    return text.replace(REFERENCE, (whole: string, name: string) => {
      if (++this.count > this.maxReferences) throw new XmlRejected(`more than ${this.maxReferences} entity and character references`);
      const predefined = PREDEFINED[name];
      if (predefined !== undefined && Object.hasOwn(PREDEFINED, name)) return predefined;
      if (name.charCodeAt(0) === 35 /* # */) {
        const hex = name[1] === 'x';
        const digits = name.slice(hex ? 2 : 1);
        if (!(hex ? /^[0-9A-Fa-f]{1,6}$/ : /^[0-9]{1,7}$/).test(digits)) throw new XmlRejected(`malformed character reference ${whole}`);
        const cp = parseInt(digits, hex ? 16 : 10);
        if (!isXmlChar(cp)) throw new XmlRejected(`character reference ${whole} is not an allowed XML character`);
        return String.fromCodePoint(cp);
      }
      throw new XmlRejected(`undefined entity ${whole}`);
    });
  }
}
