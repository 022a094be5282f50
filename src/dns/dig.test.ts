// The real `dig` (BIND 9, Debian dnsutils) against our server on loopback, over UDP and TCP,
// for every record kind the server makes: A, AAAA, SRV (ClusterIP and headless), endpoint
// hostnames, PTR (ClusterIP and endpoint), ExternalName CNAME chased in-zone, the
// dns-version TXT, pod A, SOA and NS at the apex, NXDOMAIN and NODATA. Skips when dig is not
// installed (`apt-get install -y dnsutils`). The `dig +search` walk with a pod resolv.conf
// needs a private mount namespace and lives in test/integration/dns-dig-search.test.ts.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RealExecer } from '../os/exec.js';
import { RecordIndex } from './record-index.js';
import { DEFAULT_RESOLVER_CONFIG } from './resolve.js';
import { DnsHandler, DnsServer } from './server.js';
import { clusterFixture } from './testdata/cluster.js';

const execer = new RealExecer();

async function digAvailable(): Promise<boolean> {
  try {
    return (await execer.run({ cmd: 'dig', args: ['-v'], timeoutMs: 5000 })).code === 0;
  } catch {
    return false;
  }
}

interface DigResult {
  status: string;
  flags: string[];
  answer: string[];
  authority: string[];
  additional: string[];
}

/** Parses dig's default output: the status line, flags and the record sections. */
export function parseDig(out: string): DigResult {
  const status = /status: ([A-Z]+)/.exec(out)?.[1] ?? '';
  const flags = (/;; flags: ([a-z ]+);/.exec(out)?.[1] ?? '').trim().split(/\s+/);
  const sections: Record<string, string[]> = { ANSWER: [], AUTHORITY: [], ADDITIONAL: [] };
  let current: string | undefined;
  for (const line of out.split('\n')) {
    const m = /^;; (ANSWER|AUTHORITY|ADDITIONAL) SECTION:/.exec(line);
    if (m) {
      current = m[1];
      continue;
    }
    if (line.trim() === '' || line.startsWith(';')) {
      if (line.trim() === '') current = undefined;
      continue;
    }
    if (current) sections[current]?.push(line.replace(/\s+/g, ' ').trim());
  }
  return {
    status,
    flags,
    answer: sections.ANSWER ?? [],
    authority: sections.AUTHORITY ?? [],
    additional: sections.ADDITIONAL ?? [],
  };
}

const available = await digAvailable();

describe(
  'dig against svcnet dns on loopback',
  { skip: available ? false : 'dig not installed (apt-get install -y dnsutils)' },
  () => {
    let server: DnsServer;
    before(async () => {
      const index = new RecordIndex();
      clusterFixture(index);
      const handler = new DnsHandler({
        index,
        config: {
          ...DEFAULT_RESOLVER_CONFIG,
          zones: ['cluster.local.', 'in-addr.arpa.', 'ip6.arpa.'],
          localIPs: ['127.0.0.1'],
        },
        isSynced: () => true,
      });
      server = new DnsServer(handler, { host: '127.0.0.1', port: 0 });
      await server.listen();
    });
    after(async () => {
      await server.close();
    });

    /** Runs dig against the server with these query options; it must exit 0. */
    const runDig = async (name: string, type: string, options: string[]): Promise<string> => {
      const res = await execer.run({
        cmd: 'dig',
        args: ['@127.0.0.1', '-p', String(server.port), name, type, ...options],
        timeoutMs: 10_000,
      });
      assert.equal(res.code, 0, res.stderr || res.stdout);
      return res.stdout;
    };
    const dig = async (
      name: string,
      type: string,
      transport: '+notcp' | '+tcp',
    ): Promise<DigResult> =>
      parseDig(await runDig(name, type, [transport, '+time=2', '+tries=1', '+nocookie']));

    const cases: {
      name: string;
      type: string;
      status: string;
      answer: string[];
      additional?: string[];
    }[] = [
      {
        name: 'web.default.svc.cluster.local',
        type: 'A',
        status: 'NOERROR',
        answer: ['web.default.svc.cluster.local. 5 IN A 10.96.0.10'],
      },
      {
        name: 'dual.default.svc.cluster.local',
        type: 'AAAA',
        status: 'NOERROR',
        answer: ['dual.default.svc.cluster.local. 5 IN AAAA fd00::10'],
      },
      {
        name: '_http._tcp.web.default.svc.cluster.local',
        type: 'SRV',
        status: 'NOERROR',
        answer: [
          '_http._tcp.web.default.svc.cluster.local. 5 IN SRV 0 100 80 web.default.svc.cluster.local.',
        ],
        additional: ['web.default.svc.cluster.local. 5 IN A 10.96.0.10'],
      },
      {
        name: 'db.default.svc.cluster.local',
        type: 'A',
        status: 'NOERROR',
        answer: [
          'db.default.svc.cluster.local. 5 IN A 10.244.1.5',
          'db.default.svc.cluster.local. 5 IN A 10.244.2.6',
        ],
      },
      {
        name: 'db-0.db.default.svc.cluster.local',
        type: 'A',
        status: 'NOERROR',
        answer: ['db-0.db.default.svc.cluster.local. 5 IN A 10.244.1.5'],
      },
      {
        name: '_pg._tcp.db.default.svc.cluster.local',
        type: 'SRV',
        status: 'NOERROR',
        answer: [
          '_pg._tcp.db.default.svc.cluster.local. 5 IN SRV 0 50 5432 db-0.db.default.svc.cluster.local.',
          '_pg._tcp.db.default.svc.cluster.local. 5 IN SRV 0 50 5432 db-1.db.default.svc.cluster.local.',
        ],
      },
      {
        name: '10.0.96.10.in-addr.arpa',
        type: 'PTR',
        status: 'NOERROR',
        answer: ['10.0.96.10.in-addr.arpa. 5 IN PTR web.default.svc.cluster.local.'],
      },
      {
        name: '5.1.244.10.in-addr.arpa',
        type: 'PTR',
        status: 'NOERROR',
        answer: ['5.1.244.10.in-addr.arpa. 5 IN PTR db-0.db.default.svc.cluster.local.'],
      },
      {
        name: 'alias.default.svc.cluster.local',
        type: 'A',
        status: 'NOERROR',
        answer: [
          'alias.default.svc.cluster.local. 5 IN CNAME web.default.svc.cluster.local.',
          'web.default.svc.cluster.local. 5 IN A 10.96.0.10',
        ],
      },
      {
        name: 'alias.default.svc.cluster.local',
        type: 'CNAME',
        status: 'NOERROR',
        answer: ['alias.default.svc.cluster.local. 5 IN CNAME web.default.svc.cluster.local.'],
      },
      {
        name: 'dns-version.cluster.local',
        type: 'TXT',
        status: 'NOERROR',
        answer: ['dns-version.cluster.local. 28800 IN TXT "1.1.0"'],
      },
      {
        name: '10-244-0-7.default.pod.cluster.local',
        type: 'A',
        status: 'NOERROR',
        answer: ['10-244-0-7.default.pod.cluster.local. 5 IN A 10.244.0.7'],
      },
      {
        name: 'cluster.local',
        type: 'NS',
        status: 'NOERROR',
        answer: ['cluster.local. 5 IN NS ns.dns.cluster.local.'],
        additional: ['ns.dns.cluster.local. 5 IN A 127.0.0.1'],
      },
      { name: 'nope.default.svc.cluster.local', type: 'A', status: 'NXDOMAIN', answer: [] },
      { name: 'web.default.svc.cluster.local', type: 'AAAA', status: 'NOERROR', answer: [] },
    ];

    for (const transport of ['+notcp', '+tcp'] as const) {
      for (const c of cases) {
        test(`${transport} ${c.type} ${c.name} -> ${c.status}`, async () => {
          const r = await dig(c.name, c.type, transport);
          assert.equal(r.status, c.status);
          assert.ok(r.flags.includes('aa'), `authoritative: ${r.flags.join(' ')}`);
          assert.deepEqual([...r.answer].sort(), [...c.answer].sort());
          if (c.additional) assert.deepEqual(r.additional, c.additional);
          if (c.answer.length === 0)
            assert.match(
              r.authority[0] ?? '',
              /^cluster\.local\. 5 IN SOA ns\.dns\.cluster\.local\. hostmaster\.cluster\.local\. \d+ 7200 1800 86400 5$/,
            );
        });
      }
      test(`${transport} SOA at the apex`, async () => {
        const r = await dig('cluster.local', 'SOA', transport);
        assert.equal(r.status, 'NOERROR');
        assert.match(
          r.answer[0] ?? '',
          /^cluster\.local\. 5 IN SOA ns\.dns\.cluster\.local\. hostmaster\.cluster\.local\. \d+ 7200 1800 86400 5$/,
        );
      });
    }

    test('a big headless answer: dig retries over TCP after TC and gets all 100 records', async () => {
      const out = await runDig('many.default.svc.cluster.local', 'A', [
        '+notcp',
        '+bufsize=512',
        '+time=2',
        '+tries=1',
      ]);
      assert.match(out, /Truncated, retrying in TCP mode/);
      assert.equal(parseDig(out).answer.length, 100);
    });
  },
);
