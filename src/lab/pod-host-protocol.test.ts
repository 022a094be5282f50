import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseHostMessage, parseHostRequest } from './pod-host-protocol.js';

const container = {
  id: 'pod-1a2b',
  netns: '/run/netns/pod-1a2b',
  hostname: 'web-0',
  httpPort: 8080,
  udpPort: -1,
  extraPorts: [{ port: 9000, protocol: 'udp' }],
  delayShutdownSeconds: 5,
  stdout: '/s/0.log.stdout',
  stderr: '/s/0.log.stderr',
};

test('a start request is read field by field', () => {
  const r = parseHostRequest(JSON.stringify({ op: 'start', seq: 4, container }));
  assert.deepEqual(r, { op: 'start', seq: 4, container });
});

test('bad requests are refused naming the field', () => {
  assert.throws(
    () =>
      parseHostRequest(
        JSON.stringify({ op: 'start', seq: 1, container: { ...container, httpPort: 70000 } }),
      ),
    /pod host request 1: container: httpPort: must be -1 or a port, got 70000/,
  );
  assert.throws(
    () =>
      parseHostRequest(
        JSON.stringify({
          op: 'start',
          seq: 2,
          container: { ...container, extraPorts: [{ port: 1, protocol: 'sctp' }] },
        }),
      ),
    /extraPorts\[0\]: protocol: must be tcp or udp, got "sctp"/,
  );
  assert.throws(
    () =>
      parseHostRequest(JSON.stringify({ op: 'signal', seq: 3, id: 'x', run: 1, signal: 'SIGHUP' })),
    /pod host request 3: signal: must be SIGTERM or SIGKILL, got "SIGHUP"/,
  );
  assert.throws(() => parseHostRequest('{"op":"nope","seq":5}'), /op: unknown "nope"/);
  assert.throws(() => parseHostRequest('{"op":"list"}'), /seq: must be a number/);
  assert.throws(() => parseHostRequest('not json'), /pod host request: not JSON/);
});

test('messages from the host: replies and exited events', () => {
  assert.deepEqual(parseHostMessage('{"event":"exited","id":"a","run":2,"exitCode":137}'), {
    event: 'exited',
    id: 'a',
    run: 2,
    exitCode: 137,
  });
  assert.deepEqual(parseHostMessage('{"seq":9,"ok":false,"error":"boom"}'), {
    seq: 9,
    ok: false,
    error: 'boom',
  });
  assert.deepEqual(parseHostMessage('{"seq":9,"ok":true,"run":3}'), { seq: 9, ok: true, run: 3 });
  assert.throws(
    () => parseHostMessage('{"event":"exited","id":"a","run":"2","exitCode":0}'),
    /run/,
  );
});
