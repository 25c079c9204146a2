/** File downloads (spec A.9): `Content-Disposition` with an RFC 6266 filename. */
export { contentDisposition, downloadHeaders, type Disposition } from '../plugins/formats/download.ts';
