// `dig +search` against svcnet dns with a pod-style resolv.conf (search
// <ns>.svc.cluster.local svc.cluster.local cluster.local, ndots:5): dig reads only
// /etc/resolv.conf, so each dig runs in a private mount namespace (`unshare --mount`) where
// that file is bind-mounted from a temp dir; the machine's own file is never touched. Needs
// root, unshare and dig; skips with the reason otherwise.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealExecer } from '../../src/os/exec.js';
import { RecordIndex } from '../../src/dns/record-index.js';
import { DEFAULT_RESOLVER_CONFIG } from '../../src/dns/resolve.js';
import { DnsHandler, DnsServer } from '../../src/dns/server.js';
import { clusterFixture } from '../../src/dns/testdata/cluster.js';
import { skipOrFail } from './lib/prereq.js';

const execer = new RealExecer();

async function why(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'needs root (unshare --mount)';
  try {
    if ((await execer.run({ cmd: 'dig', args: ['-v'], timeoutMs: 5000 })).code !== 0)
      return 'dig not installed (Debian package dnsutils; install: bash scripts/install-deps.sh)';
    if (
      (await execer.run({ cmd: 'unshare', args: ['--mount', 'true'], timeoutMs: 5000 })).code !== 0
    )
      return 'unshare --mount not permitted';
  } catch (e) {
    return `tools missing: ${e instanceof Error ? e.message : String(e)}`;
  }
  return undefined;
}

const skip = skipOrFail(await why());

describe('dig +search with a pod resolv.conf', { skip }, () => {
  let server: DnsServer;
  let dir: string;
  before(async () => {
    const index = new RecordIndex();
    clusterFixture(index);
    const handler = new DnsHandler({
      index,
      config: DEFAULT_RESOLVER_CONFIG,
      isSynced: () => true,
    });
    server = new DnsServer(handler, { host: '127.0.0.1', port: 0 });
    await server.listen();
    dir = mkdtempSync(join(tmpdir(), `svcnet-t${process.pid}-dns-`));
    writeFileSync(
      join(dir, 'resolv.conf'),
      'nameserver 127.0.0.1\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n',
    );
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const digSearch = async (name: string, type: string): Promise<string> => {
    const script = `mount --bind "$1" /etc/resolv.conf && exec dig -p "$2" +search +showsearch +time=2 +tries=1 "$3" "$4"`;
    const res = await execer.run({
      cmd: 'unshare',
      args: [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        script,
        'sh',
        join(dir, 'resolv.conf'),
        String(server.port),
        name,
        type,
      ],
      timeoutMs: 20_000,
    });
    assert.equal(res.code, 0, res.stderr);
    return res.stdout;
  };

  test('a bare Service name resolves through the first search domain', async () => {
    const out = await digSearch('web', 'A');
    assert.match(out, /web\.default\.svc\.cluster\.local\.\s+5\s+IN\s+A\s+10\.96\.0\.10/);
  });

  test('<svc>.<ns> walks past one NXDOMAIN to svc.cluster.local', async () => {
    const out = await digSearch('db.default', 'A');
    assert.match(
      out,
      /status: NXDOMAIN[^\n]*\n[\s\S]*?;db\.default\.default\.svc\.cluster\.local\.\s+IN\s+A/,
    );
    assert.match(out, /db\.default\.svc\.cluster\.local\.\s+5\s+IN\s+A\s+10\.244\.1\.5/);
  });

  test('a StatefulSet pod name and an SRV name resolve relative to the namespace', async () => {
    assert.match(
      await digSearch('db-1.db', 'A'),
      /db-1\.db\.default\.svc\.cluster\.local\.\s+5\s+IN\s+A\s+10\.244\.2\.6/,
    );
    assert.match(
      await digSearch('_http._tcp.web', 'SRV'),
      /_http\._tcp\.web\.default\.svc\.cluster\.local\.\s+5\s+IN\s+SRV\s+0 100 80 web\.default\.svc\.cluster\.local\./,
    );
  });
});
