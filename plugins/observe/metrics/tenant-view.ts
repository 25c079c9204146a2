/**
 * A tenant's view of the Prometheus text (control op `metrics.show`, admin API): only the samples
 * of its own things, those with `tenant="<tenant>"` or a label naming one of its resources
 * (`channel="acme/orders"`, `service="acme/orders"`), each family's HELP and TYPE kept above its
 * first kept sample. Platform series (the process, the platform's channels, other tenants') are
 * left out whole.
 */
export function tenantView(text: string, tenant: string): string {
  const mine = new RegExp(`(^|[{,])[a-zA-Z_][a-zA-Z0-9_]*="(${tenant}|${tenant}/[^"]*)"`);
  const out: string[] = [];
  let header: string[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('# HELP ')) {
      header = [line];
      continue;
    }
    if (line.startsWith('#')) {
      header.push(line);
      continue;
    }
    const brace = line.indexOf('{');
    if (brace < 0) continue;
    const labels = line.slice(brace, line.lastIndexOf('}') + 1);
    if (!mine.test(labels)) continue;
    out.push(...header, line);
    header = [];
  }
  return out.length ? out.join('\n') + '\n' : '';
}
