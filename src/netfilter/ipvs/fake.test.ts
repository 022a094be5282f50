import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcnetError } from '../../errors.js';
import { FakeIpvs, IpvsError } from './fake.js';
import { fromKubeProxyFlagNames, toKubeProxyFlagNames, type VirtualServer } from './model.js';

const VS: VirtualServer = {
  protocol: 'tcp',
  address: '10.102.97.154',
  port: 80,
  scheduler: 'rr',
  flags: [],
};
const RS = { address: '192.168.76.141', port: 80, weight: 1, forward: 'Masq' } as const;

function code(fn: () => void): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof IpvsError && err instanceof SvcnetError);
    return err.code;
  }
  return 'no error';
}

test('add, edit and delete virtual and real servers', () => {
  const ipvs = new FakeIpvs();
  ipvs.addVirtualServer(VS);
  ipvs.addRealServer(VS, RS);
  ipvs.addRealServer(VS, { ...RS, address: '10.0.0.9' });
  assert.deepEqual(
    ipvs.getRealServers(VS).map((r) => r.address),
    ['10.0.0.9', '192.168.76.141'],
  );
  ipvs.updateVirtualServer({ ...VS, flags: ['persistent'], timeoutSeconds: 10800 });
  ipvs.updateRealServer(VS, { ...RS, weight: 0 });
  assert.equal(
    ipvs.save(),
    '-A -t 10.102.97.154:80 -s rr -p 10800\n' +
      '-a -t 10.102.97.154:80 -r 10.0.0.9:80 -m -w 1\n' +
      '-a -t 10.102.97.154:80 -r 192.168.76.141:80 -m -w 0\n',
  );
  ipvs.deleteRealServer(VS, RS);
  assert.equal(ipvs.getRealServers(VS).length, 1);
  ipvs.deleteVirtualServer(VS);
  assert.deepEqual(ipvs.getVirtualServers(), []);
});

test('kernel-like refusals: duplicate, missing, bad scheduler', () => {
  const ipvs = new FakeIpvs();
  ipvs.addVirtualServer(VS);
  assert.equal(
    code(() => {
      ipvs.addVirtualServer(VS);
    }),
    'CONFLICT',
  );
  assert.equal(
    code(() => {
      ipvs.deleteVirtualServer({ ...VS, port: 81 });
    }),
    'NOT_FOUND',
  );
  assert.equal(
    code(() => {
      ipvs.updateVirtualServer({ ...VS, port: 81 });
    }),
    'NOT_FOUND',
  );
  assert.equal(
    code(() => {
      ipvs.addVirtualServer({ ...VS, port: 81, scheduler: 'nope' });
    }),
    'INVALID_INPUT',
  );
  ipvs.addRealServer(VS, RS);
  assert.equal(
    code(() => {
      ipvs.addRealServer(VS, RS);
    }),
    'CONFLICT',
  );
  assert.equal(
    code(() => {
      ipvs.deleteRealServer(VS, { address: '1.1.1.1', port: 80 });
    }),
    'NOT_FOUND',
  );
  assert.equal(
    code(() => {
      ipvs.updateRealServer(VS, { ...RS, port: 81 });
    }),
    'NOT_FOUND',
  );
  assert.equal(
    code(() => {
      ipvs.addRealServer({ ...VS, protocol: 'udp' }, RS);
    }),
    'NOT_FOUND',
  );
  assert.equal(
    code(() => {
      ipvs.getRealServers({ ...VS, protocol: 'udp' });
    }),
    'NOT_FOUND',
  );
});

test('a restore script applies atomically: a failing line leaves the table untouched', () => {
  const ipvs = new FakeIpvs();
  ipvs.restore('-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.1.0.1:80 -m -w 1\n');
  const before = ipvs.save();
  assert.throws(
    () => {
      ipvs.restore('-A -u 10.0.0.1:53 -s rr\n-A -t 10.0.0.1:80 -s rr\n');
    },
    (err: unknown) =>
      err instanceof IpvsError &&
      err.index === 1 &&
      /line 2 .*Service already exists/.test(err.message),
  );
  assert.equal(ipvs.save(), before);
  ipvs.restore(
    '-D -t 10.0.0.1:80\n-A -t [fd00::1]:80 -s sh -b sh-port\n-a -t [fd00::1]:80 -r [fd00::2]:8080 -m -w 2\n',
  );
  assert.equal(
    ipvs.save(),
    '-A -t [fd00::1]:80 -s sh -b sh-port\n-a -t [fd00::1]:80 -r [fd00::2]:8080 -m -w 2\n',
  );
  ipvs.restore('-C\n');
  assert.equal(ipvs.save(), '');
});

test('list() prints ipvsadm -L -n with zero counters', () => {
  const ipvs = new FakeIpvs();
  ipvs.addVirtualServer({ ...VS, protocol: 'sctp' });
  ipvs.addRealServer({ ...VS, protocol: 'sctp' }, RS);
  assert.equal(
    ipvs.list({ header: false }),
    'Prot LocalAddress:Port Scheduler Flags\n' +
      '  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n' +
      'SCTP 10.102.97.154:80 rr\n' +
      '  -> 192.168.76.141:80            Masq    1      0          0         \n',
  );
});

test('kube-proxy flag names map to model flags and back', () => {
  assert.deepEqual(fromKubeProxyFlagNames(['sourceHash', 'persistent']), [
    'persistent',
    'schedFlag2',
  ]);
  assert.deepEqual(toKubeProxyFlagNames(['persistent', 'hashed', 'schedFlag2']), [
    'persistent',
    'sourceHash',
  ]);
  assert.throws(() => fromKubeProxyFlagNames(['nope']), /unknown kube-proxy IPVS flag/);
});
