import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import {
  acceptKey,
  chooseProtocol,
  decodeFrames,
  encodeFrame,
  handshakeResponse,
  OP_BINARY,
  OP_CLOSE,
  OP_CONTINUATION,
  OP_PING,
  OP_PONG,
  OP_TEXT,
  WebSocketConnection,
} from './websocket.js';

const MASK = Buffer.from([0x37, 0xfa, 0x21, 0x3d]);

function request(headers: Record<string, string>): IncomingMessage {
  return { headers } as unknown as IncomingMessage;
}

describe('WebSocket handshake', () => {
  test('Sec-WebSocket-Accept is RFC 6455 §1.3 example', () => {
    assert.equal(acceptKey('dGhlIHNhbXBsZSBub25jZQ=='), 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
  });

  test('the server picks its own first preference the client offered', () => {
    const offered = ['v4.channel.k8s.io', 'v5.channel.k8s.io'];
    assert.equal(
      chooseProtocol(offered, ['v5.channel.k8s.io', 'v4.channel.k8s.io']),
      'v5.channel.k8s.io',
    );
    assert.equal(chooseProtocol(['channel.k8s.io'], ['v5.channel.k8s.io']), undefined);
  });

  test('101 answer names the protocol; a missing key or wrong version is refused', () => {
    const ok = handshakeResponse(
      request({ 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' }),
      'v5.channel.k8s.io',
    );
    assert.ok(ok.ok);
    assert.match(ok.response, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.match(ok.response, /\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n/);
    assert.match(ok.response, /\r\nSec-WebSocket-Protocol: v5\.channel\.k8s\.io\r\n\r\n$/);
    const old = handshakeResponse(
      request({ 'sec-websocket-key': 'x', 'sec-websocket-version': '8' }),
      'p',
    );
    assert.deepEqual(old, { ok: false, error: 'unsupported Sec-WebSocket-Version 8' });
    assert.equal(handshakeResponse(request({}), 'p').ok, false);
  });
});

describe('WebSocket frames', () => {
  test('round trip of masked client frames at every length encoding', () => {
    for (const len of [0, 1, 125, 126, 65535, 65536, 70_000]) {
      const payload = Buffer.alloc(len, 0xab);
      const wire = encodeFrame(OP_BINARY, payload, true, MASK);
      const { frames, rest } = decodeFrames(wire);
      assert.equal(rest.length, 0);
      assert.equal(frames.length, 1);
      assert.deepEqual(frames[0], { fin: true, opcode: OP_BINARY, payload, masked: true });
    }
  });

  test('masking follows RFC 6455 §5.7 ("Hello", masked)', () => {
    const wire = encodeFrame(OP_TEXT, Buffer.from('Hello'), true, MASK);
    assert.deepEqual(
      wire,
      Buffer.from([0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]),
    );
    assert.deepEqual(
      encodeFrame(OP_TEXT, Buffer.from('Hello')),
      Buffer.from([0x81, 0x05, ...Buffer.from('Hello')]),
    );
  });

  test('an incomplete frame stays in rest until the remaining bytes arrive', () => {
    const wire = Buffer.concat([
      encodeFrame(OP_BINARY, Buffer.from('ab'), true, MASK),
      encodeFrame(OP_BINARY, Buffer.alloc(300), true, MASK),
    ]);
    const first = decodeFrames(wire.subarray(0, 20));
    assert.equal(first.frames.length, 1);
    const second = decodeFrames(Buffer.concat([first.rest, wire.subarray(20)]));
    assert.equal(second.frames.length, 1);
    assert.equal(second.frames[0]?.payload.length, 300);
  });
});

/** A connection over a pair of pipes: what the server writes, and a way to feed it. */
function connection(): {
  messages: { data: string; binary: boolean }[];
  closes: number[];
  written: () => ReturnType<typeof decodeFrames>['frames'];
  feed: (b: Buffer) => void;
  ws: WebSocketConnection;
} {
  const socket = new PassThrough();
  const out: Buffer[] = [];
  socket.write = ((chunk: Buffer) => {
    out.push(chunk);
    return true;
  }) as typeof socket.write;
  socket.end = ((chunk?: Buffer) => {
    if (chunk !== undefined) out.push(chunk);
    return socket;
  }) as typeof socket.end;
  const messages: { data: string; binary: boolean }[] = [];
  const closes: number[] = [];
  const ws = new WebSocketConnection(socket, {
    onMessage: (d, binary) => messages.push({ data: d.toString(), binary }),
    onClose: (code) => closes.push(code),
  });
  return {
    messages,
    closes,
    written: () => decodeFrames(Buffer.concat(out)).frames,
    feed: (b) => socket.emit('data', b),
    ws,
  };
}

describe('WebSocketConnection', () => {
  test('reassembles a fragmented message with a ping between its fragments', () => {
    const c = connection();
    c.feed(encodeFrame(OP_BINARY, Buffer.from('hel'), false, MASK));
    c.feed(encodeFrame(OP_PING, Buffer.from('p1'), true, MASK));
    c.feed(encodeFrame(OP_CONTINUATION, Buffer.from('lo '), false, MASK));
    c.feed(encodeFrame(OP_CONTINUATION, Buffer.from('world'), true, MASK));
    assert.deepEqual(c.messages, [{ data: 'hello world', binary: true }]);
    assert.deepEqual(c.written(), [
      { fin: true, opcode: OP_PONG, payload: Buffer.from('p1'), masked: false },
    ]);
  });

  test('server frames go out unmasked; a close is answered and reported once', () => {
    const c = connection();
    c.ws.send(Buffer.from([1, 0x41]));
    const close = Buffer.from([0x03, 0xe8]);
    c.feed(encodeFrame(OP_CLOSE, close, true, MASK));
    c.ws.send(Buffer.from('after close'));
    const frames = c.written();
    assert.deepEqual(
      frames.map((f) => [f.opcode, f.masked, [...f.payload]]),
      [
        [OP_BINARY, false, [1, 0x41]],
        [OP_CLOSE, false, [0x03, 0xe8]],
      ],
    );
    assert.deepEqual(c.closes, [1000]);
  });

  test('an unmasked client frame closes the connection with 1002', () => {
    const c = connection();
    c.feed(encodeFrame(OP_BINARY, Buffer.from('x')));
    assert.deepEqual(c.closes, [1002]);
    assert.equal(c.messages.length, 0);
  });
});
