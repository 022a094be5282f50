import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  canonicalHeaderKey,
  cleanRequestPath,
  goAtoi,
  goJson,
  goTimeString,
  headerMap,
  joinHostPort,
  redirectBody,
  redirectLocation,
} from './netexec-go.js';
import { parseGoDuration } from '../util/duration.js';
import { checkDialQuery, dialBody } from './netexec-dial.js';

test('goAtoi takes what strconv.Atoi takes, with its error text', () => {
  assert.deepEqual(goAtoi('30'), { ok: true, value: 30 });
  assert.deepEqual(goAtoi('+7'), { ok: true, value: 7 });
  assert.deepEqual(goAtoi('-1'), { ok: true, value: -1 });
  assert.deepEqual(goAtoi('007'), { ok: true, value: 7 });
  assert.deepEqual(goAtoi('1.5'), {
    ok: false,
    error: 'strconv.Atoi: parsing "1.5": invalid syntax',
  });
  assert.equal(goAtoi(' 1').ok, false);
  assert.deepEqual(goAtoi('99999999999999999999'), {
    ok: false,
    error: 'strconv.Atoi: parsing "99999999999999999999": value out of range',
  });
});

test('parseGoDuration reads Go durations in ms and rejects what Go rejects', () => {
  assert.deepEqual(parseGoDuration('0'), { ok: true, value: 0 });
  assert.deepEqual(parseGoDuration('1s'), { ok: true, value: 1000 });
  assert.deepEqual(parseGoDuration('1m30s'), { ok: true, value: 90_000 });
  assert.deepEqual(parseGoDuration('1.5h'), { ok: true, value: 5_400_000 });
  assert.deepEqual(parseGoDuration('-250ms'), { ok: true, value: -250 });
  assert.deepEqual(parseGoDuration('.5s'), { ok: true, value: 500 });
  assert.deepEqual(parseGoDuration('500us'), { ok: true, value: 0.5 });
  assert.deepEqual(parseGoDuration('5'), {
    ok: false,
    error: 'time: missing unit in duration "5"',
  });
  assert.deepEqual(parseGoDuration('5d'), {
    ok: false,
    error: 'time: unknown unit "d" in duration "5d"',
  });
  assert.deepEqual(parseGoDuration('abc'), { ok: false, error: 'time: invalid duration "abc"' });
  assert.equal(parseGoDuration('').ok, false);
});

test('header keys, peers and JSON come out as Go writes them', () => {
  assert.equal(canonicalHeaderKey('x-forwarded-for'), 'X-Forwarded-For');
  assert.equal(canonicalHeaderKey('USER-AGENT'), 'User-Agent');
  assert.equal(canonicalHeaderKey('x_y'), 'X_y');
  assert.equal(canonicalHeaderKey('bad key'), 'bad key');
  assert.deepEqual(headerMap(['host', 'a', 'x-a', '1', 'X-A', '2', 'accept', '*/*']), {
    'X-A': ['1', '2'],
    Accept: ['*/*'],
  });
  assert.equal(joinHostPort('::ffff:10.0.0.1', 80), '10.0.0.1:80');
  assert.equal(joinHostPort('fd00::1', 80), '[fd00::1]:80');
  assert.equal(
    goJson({ b: ['<&>'], a: { d: 1, c: 2 } }),
    '{"a":{"c":2,"d":1},"b":["\\u003c\\u0026\\u003e"]}',
  );
  assert.match(
    goTimeString(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 120))),
    /^2024-01-02 03:04:05\.12 \+0000 UTC$/,
  );
});

test('paths are cleaned as ServeMux does and redirects resolve as http.Redirect', () => {
  assert.equal(cleanRequestPath('//hostname'), '/hostname');
  assert.equal(cleanRequestPath('/a/./b/../c/'), '/a/c/');
  assert.equal(cleanRequestPath('/hostname'), '/hostname');
  assert.equal(redirectLocation('/echo?msg=foobar', '/redirect'), '/echo?msg=foobar');
  assert.equal(redirectLocation('hostname', '/x/redirect'), '/x/hostname');
  assert.equal(redirectLocation('../a/', '/x/y/redirect'), '/x/a/');
  assert.equal(redirectLocation('', '/redirect'), '/');
  assert.equal(
    redirectLocation('http://example.test/a/../b', '/redirect'),
    'http://example.test/a/../b',
  );
  assert.equal(redirectBody('/a?x=1&y=2', 302), '<a href="/a?x=1&amp;y=2">Found</a>.\n\n');
});

test('/dial parameters are checked in agnhost order with its 400 texts', () => {
  const check = (qs: string): ReturnType<typeof checkDialQuery> =>
    checkDialQuery(new URLSearchParams(qs));
  assert.deepEqual(check('host=10.0.0.1&port=80&request=hostname&tries=30'), {
    ok: true,
    params: { host: '10.0.0.1', port: 80, request: 'hostname', protocol: 'http', tries: 30 },
  });
  assert.deepEqual(check('host=h&port=53&request=hostname&protocol=UDP'), {
    ok: true,
    params: { host: 'h', port: 53, request: 'hostname', protocol: 'udp', tries: 1 },
  });
  assert.deepEqual(check('tries=x&request='), {
    ok: false,
    message: 'tries parameter is invalid. strconv.Atoi: parsing "x": invalid syntax',
  });
  assert.deepEqual(check('host=h&port=80'), {
    ok: false,
    message: 'request parameter not specified. <nil>',
  });
  assert.deepEqual(check('host=h&port=80&request=x&protocol=sctp'), {
    ok: false,
    message: 'unsupported protocol. sctp',
  });
  assert.deepEqual(check('host=h&port=99999&request=x'), {
    ok: false,
    message: 'host and/or port param are invalid. address 99999: invalid port',
  });
  assert.equal(check('host=h&request=x&tries=-2').ok, true);
});

test('/dial bodies leave out empty lists, and responses when the last try failed', () => {
  assert.equal(dialBody(['a', 'b'], [], 'b'), '{"responses":["a","b"]}');
  assert.equal(dialBody(['a'], ['boom'], 'a'), '{"errors":["boom"],"responses":["a"]}');
  assert.equal(dialBody(['a'], ['boom'], ''), '{"errors":["boom"]}');
  assert.equal(dialBody([], [], ''), '{}');
});
