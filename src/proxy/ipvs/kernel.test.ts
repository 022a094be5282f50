// RealIpvsKernel.readConnections against a scripted Execer: a few virtual servers are listed
// one `ipvsadm -L -n -t|-u VS` each, more than PER_SERVICE_LIST_LIMIT with one `ipvsadm -L -n`;
// the counters come back per real server.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IptablesBackend } from '../../netfilter/iptables/backend.js';
import type { VirtualServerId } from '../../netfilter/ipvs/model.js';
import { FakeExecer } from '../../os/exec.js';
import { PER_SERVICE_LIST_LIMIT, RealIpvsKernel, serviceArgs } from './kernel.js';

/** Never called: readConnections does not touch iptables. */
const NO_IPTABLES = {} as IptablesBackend;

const HEAD = `Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
`;

function listing(address: string, port: number, conns: number): string {
  return `TCP  ${address}:${port} rr
  -> 10.244.0.1:8080              Masq    0      ${conns}          1
`;
}

test('a few virtual servers are listed one by one, with their counters', async () => {
  const execer = new FakeExecer().expect(
    {
      cmd: 'ipvsadm',
      args: ['-L', '-n', '-t', '10.96.0.10:80'],
      result: { stdout: HEAD + listing('10.96.0.10', 80, 3) },
    },
    { cmd: 'ipvsadm', args: ['-L', '-n', '-u', '10.96.0.53:53'], result: { stdout: HEAD } },
  );
  const k = new RealIpvsKernel(execer, 'IPv4', NO_IPTABLES);
  const ids: VirtualServerId[] = [{ protocol: 'tcp', address: '10.96.0.10', port: 80 }];
  const got = await k.readConnections(ids);
  assert.deepEqual(
    got.map((s) => s.realServers.map((r) => [r.address, r.activeConn, r.inactConn])),
    [[['10.244.0.1', 3, 1]]],
  );
  // A missing virtual server fails (the partial sync's base was wrong: the retry is full).
  await assert.rejects(
    k.readConnections([{ protocol: 'udp', address: '10.96.0.53', port: 53 }]),
    /no IPVS virtual server udp\/10.96.0.53:53/,
  );
  execer.verify();
  assert.deepEqual(serviceArgs({ protocol: 'sctp', address: 'fd00::1', port: 9 }), [
    '--sctp-service',
    '[fd00::1]:9',
  ]);
});

test('more than PER_SERVICE_LIST_LIMIT virtual servers: one listing of the table', async () => {
  const ids: VirtualServerId[] = Array.from({ length: PER_SERVICE_LIST_LIMIT + 1 }, (_, i) => ({
    protocol: 'tcp',
    address: `10.96.0.${i}`,
    port: 80,
  }));
  const text = HEAD + ids.map((id, i) => listing(id.address, 80, i)).join('');
  const execer = new FakeExecer().expect({
    cmd: 'ipvsadm',
    args: ['-L', '-n'],
    result: { stdout: `IP Virtual Server version 1.2.1 (size=4096)\n${text}` },
  });
  const k = new RealIpvsKernel(execer, 'IPv4', NO_IPTABLES);
  const got = await k.readConnections(ids);
  assert.deepEqual(
    got.map((s) => s.realServers[0]?.activeConn),
    ids.map((_, i) => i),
  );
  execer.verify();
});

test('readIpvs: one `ipvsadm -L -n`, this family only, with persistence and counters', async () => {
  const text = [
    'IP Virtual Server version 1.2.1 (size=4096)',
    HEAD.trimEnd(),
    'TCP  10.96.0.10:80 rr persistent 10800',
    '  -> 10.244.0.1:8080              Masq    1      2          3',
    'UDP  [fd00::10]:53 rr',
    '  -> [fd00::1]:53                 Masq    1      0          0',
    '',
  ].join('\n');
  const execer = new FakeExecer().expect({
    cmd: 'ipvsadm',
    args: ['-L', '-n'],
    result: { stdout: text },
  });
  const got = await new RealIpvsKernel(execer, 'IPv4', NO_IPTABLES).readIpvs();
  assert.deepEqual(got, [
    {
      virtualServer: {
        protocol: 'tcp',
        address: '10.96.0.10',
        port: 80,
        scheduler: 'rr',
        flags: ['persistent'],
        timeoutSeconds: 10800,
      },
      realServers: [
        {
          address: '10.244.0.1',
          port: 8080,
          forward: 'Masq',
          weight: 1,
          activeConn: 2,
          inactConn: 3,
        },
      ],
    },
  ]);
  execer.verify();
});
