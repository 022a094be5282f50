import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcnetError } from '../../errors.js';
import { parseCommand, parseList, parseNetmask, parseRestore, splitHostPort } from './parse.js';
import { renderRestore, renderSaveService } from './render.js';

test('long options, optional persistence timeout, netmask, ops and edits parse', () => {
  const ops = parseRestore(
    '--add-service --tcp-service 10.0.0.1:80 --scheduler wrr --persistent -M 255.255.255.0 -o\n' +
      '-E -u 10.0.0.2:53 -s rr\n' +
      '-e -u 10.0.0.2:53 -r 10.1.0.1:53 -i -w 3\n' +
      '-d -u 10.0.0.2:53 -r 10.1.0.1:53\n',
  );
  assert.deepEqual(ops[0], {
    verb: 'addService',
    virtualServer: {
      protocol: 'tcp',
      address: '10.0.0.1',
      port: 80,
      scheduler: 'wrr',
      flags: ['persistent', 'onePacket'],
      timeoutSeconds: 300,
      netmask: 24,
    },
  });
  assert.equal(
    renderRestore(ops),
    '-A -t 10.0.0.1:80 -s wrr -p 300 -M 255.255.255.0 -o\n' +
      '-E -u 10.0.0.2:53 -s rr\n' +
      '-e -u 10.0.0.2:53 -r 10.1.0.1:53 -i -w 3\n' +
      '-d -u 10.0.0.2:53 -r 10.1.0.1:53\n',
  );
});

test('IPv6 persistence mask is a prefix length in both forms', () => {
  const op = parseCommand('-A -t [FD00:0::1]:443 -s rr -p 60 -M 64');
  assert.ok(op.verb === 'addService');
  assert.equal(op.virtualServer.address, 'fd00::1');
  assert.equal(renderSaveService(op.virtualServer), '-A -t [fd00::1]:443 -s rr -p 60 -M 64');
  assert.equal(
    parseList('TCP  [fd00::1]:443 rr persistent 60 mask 64\n').services[0]!.virtualServer.netmask,
    64,
  );
});

test('bad input is INVALID_INPUT with the line number', () => {
  for (const [text, re] of [
    ['-A -t 10.0.0.1 -s rr', /line 1: .*not address:port/],
    ['\n-A -t fd00::1:80 -s rr', /line 2: /],
    ['-A -t 10.0.0.1:80 -s rr -b nope', /unknown scheduler flag/],
    ['-X -t 10.0.0.1:80', /unknown command/],
    ['-a -t 10.0.0.1:80 -m', /needs -r/],
    ['-A -s rr', /needs a -t/],
  ] as const) {
    assert.throws(
      () => parseRestore(text),
      (err: unknown) =>
        err instanceof SvcnetError && err.code === 'INVALID_INPUT' && re.test(err.message),
      text,
    );
  }
  assert.throws(() => parseList('garbage\n'), /not an ipvsadm -L -n line/);
  assert.throws(() => parseList('  -> 1.1.1.1:80 Masq 1 0 0\n'), /before any service/);
  assert.throws(() => splitHostPort('10.0.0.1:70000'), /out of range/);
  assert.throws(() => parseNetmask('255.0.255.0'), /bad netmask/);
  assert.equal(parseNetmask('255.255.0.0'), 16);
});
