/** The challenge a Basic Auth 401 carries (RFC 7617). */
export const BASIC_CHALLENGE: Readonly<Record<string, string>> = Object.freeze({ 'WWW-Authenticate': 'Basic realm="svc"' });
