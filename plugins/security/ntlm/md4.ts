/**
 * MD4 (RFC 1320), which the NT hash needs. Node 20's OpenSSL 3 keeps MD4 in its legacy provider,
 * which is not loaded by default (`createHash('md4')` throws ERR_OSSL_EVP_UNSUPPORTED), and NTLM
 * hashes one short password per definition, so a small implementation beats a dependency or a
 * process-wide `--openssl-legacy-provider`. Never use it for anything but the NT hash.
 */
export function md4(input: Uint8Array): Buffer {
  const bitLength = BigInt(input.length) * 8n;
  // Padding: one 0x80 byte, zeros up to 56 mod 64, then the bit length as 64-bit little-endian.
  const padded = Buffer.alloc(Math.ceil((input.length + 9) / 64) * 64);
  padded.set(input);
  padded[input.length] = 0x80;
  padded.writeBigUInt64LE(bitLength & 0xffffffffffffffffn, padded.length - 8);

  let a = 0x67452301;
  let b = 0xefcdab89;
  let c = 0x98badcfe;
  let d = 0x10325476;
  const x = new Array<number>(16);
  for (let block = 0; block < padded.length; block += 64) {
    for (let i = 0; i < 16; i++) x[i] = padded.readUInt32LE(block + i * 4);
    const [aa, bb, cc, dd] = [a, b, c, d];

    for (const i of [0, 4, 8, 12]) {
      a = rotl(a + ((b & c) | (~b & d)) + x[i]!, 3);
      d = rotl(d + ((a & b) | (~a & c)) + x[i + 1]!, 7);
      c = rotl(c + ((d & a) | (~d & b)) + x[i + 2]!, 11);
      b = rotl(b + ((c & d) | (~c & a)) + x[i + 3]!, 19);
    }
    for (const i of [0, 1, 2, 3]) {
      a = rotl(a + majority(b, c, d) + x[i]! + 0x5a827999, 3);
      d = rotl(d + majority(a, b, c) + x[i + 4]! + 0x5a827999, 5);
      c = rotl(c + majority(d, a, b) + x[i + 8]! + 0x5a827999, 9);
      b = rotl(b + majority(c, d, a) + x[i + 12]! + 0x5a827999, 13);
    }
    for (const i of [0, 2, 1, 3]) {
      a = rotl(a + (b ^ c ^ d) + x[i]! + 0x6ed9eba1, 3);
      d = rotl(d + (a ^ b ^ c) + x[i + 8]! + 0x6ed9eba1, 9);
      c = rotl(c + (d ^ a ^ b) + x[i + 4]! + 0x6ed9eba1, 11);
      b = rotl(b + (c ^ d ^ a) + x[i + 12]! + 0x6ed9eba1, 15);
    }

    a = (a + aa) >>> 0;
    b = (b + bb) >>> 0;
    c = (c + cc) >>> 0;
    d = (d + dd) >>> 0;
  }
  const out = Buffer.alloc(16);
  out.writeUInt32LE(a, 0);
  out.writeUInt32LE(b, 4);
  out.writeUInt32LE(c, 8);
  out.writeUInt32LE(d, 12);
  return out;
}

function rotl(value: number, bits: number): number {
  const v = value >>> 0;
  return ((v << bits) | (v >>> (32 - bits))) >>> 0;
}

function majority(x: number, y: number, z: number): number {
  return (x & y) | (x & z) | (y & z);
}
