/**
 * The bare baseline of the SFTP file pickup bench: one ssh2-sftp-client session in its own
 * process that lists a folder, gets each file whole and renames it into done/, until the folder
 * holds no more. Prints `ELAPSED <ms> <files>` for the loop alone (after connecting).
 *   node --import tsx bench/peers/sftp-pickup-bare.ts <host> <port> <user> <password> <folder>
 */
import SftpClient from 'ssh2-sftp-client';

const [host, port, username, password, folder] = process.argv.slice(2) as [string, string, string, string, string];
const client = new SftpClient();
await client.connect({ host, port: Number(port), username, password });
await client.mkdir(`${folder}/done`, true);
const started = performance.now();
let handled = 0;
for (;;) {
  const files = (await client.list(folder)).filter((f) => f.type === '-');
  if (files.length === 0) break;
  for (const f of files) {
    const body = (await client.get(`${folder}/${f.name}`)) as Buffer;
    if (body.length !== f.size) throw new Error(`${f.name} changed`);
    await client.rename(`${folder}/${f.name}`, `${folder}/done/${f.name}`);
    handled++;
  }
}
console.log(`ELAPSED ${performance.now() - started} ${handled}`);
await client.end();
