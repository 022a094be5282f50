import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createDeflate, constants as zc, inflateSync, type Deflate } from 'node:zlib';
import {
  decodeHeaderBlock,
  decodeSpdyFrames,
  encodeControl,
  encodeData,
  encodeHeaderBlock,
  FLAG_FIN,
  GOAWAY,
  HeaderDeflater,
  HeaderInflater,
  PING,
  RST_STREAM,
  SETTINGS,
  SPDY3_DICTIONARY,
  SpdySession,
  SYN_REPLY,
  SYN_STREAM,
  WINDOW_UPDATE,
  type SpdyFrame,
  type SpdyStream,
} from './spdy.js';

/** What a spdystream client sends: one zlib stream with the dictionary, sync-flushed per block. */
function clientCompressor(): { deflate: Deflate; block(h: Map<string, string>): Promise<Buffer> } {
  const deflate = createDeflate({ dictionary: SPDY3_DICTIONARY });
  return {
    deflate,
    block: (h) =>
      new Promise((resolve) => {
        const chunks: Buffer[] = [];
        const onData = (c: Buffer): void => {
          chunks.push(c);
        };
        deflate.on('data', onData);
        deflate.write(encodeHeaderBlock(h));
        deflate.flush(zc.Z_SYNC_FLUSH, () => {
          setImmediate(() => {
            deflate.off('data', onData);
            resolve(Buffer.concat(chunks));
          });
        });
      }),
  };
}

function synStream(id: number, compressed: Buffer, flags = 0): Buffer {
  const head = Buffer.alloc(10);
  head.writeUInt32BE(id, 0);
  return encodeControl(SYN_STREAM, flags, Buffer.concat([head, compressed]));
}

describe('SPDY/3 header compression', () => {
  test('the dictionary is the spec one (1423 bytes)', () => {
    assert.equal(SPDY3_DICTIONARY.length, 1423);
    assert.equal(
      createHash('sha256').update(SPDY3_DICTIONARY).digest('hex'),
      '51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02',
    );
  });

  test('blocks a real dictionary compressor wrote inflate one after another', async () => {
    const c = clientCompressor();
    const inflater = new HeaderInflater();
    const blocks = [
      new Map([
        ['streamtype', 'error'],
        ['port', '3000'],
        ['requestid', '0'],
      ]),
      new Map([
        ['streamtype', 'data'],
        ['port', '3000'],
        ['requestid', '0'],
      ]),
      new Map([
        ['streamtype', 'error'],
        ['port', '80'],
        ['requestid', '1'],
      ]),
    ];
    for (const h of blocks)
      assert.deepEqual(decodeHeaderBlock(inflater.decompress(await c.block(h))), h);
    c.deflate.close();
  });

  test('our stored blocks are one zlib stream any inflater reads', () => {
    const d = new HeaderDeflater();
    const a = encodeHeaderBlock(new Map([['status', '200']]));
    const b = encodeHeaderBlock(new Map());
    const wire = Buffer.concat([d.compress(a), d.compress(b)]);
    const plain = inflateSync(wire, { dictionary: SPDY3_DICTIONARY, finishFlush: zc.Z_SYNC_FLUSH });
    assert.deepEqual(plain, Buffer.concat([a, b]));
    // Each block ends as a sync flush does, so a reader that reads past the data (Go's
    // compress/flate in kubectl) stops at the frame's end instead of failing on the next.
    assert.deepEqual(d.compress(b).subarray(-5), Buffer.from([0, 0, 0, 0xff, 0xff]));
  });

  test('header names are lowercased; a truncated block throws', () => {
    const block = encodeHeaderBlock(new Map([['StreamType', 'data']]));
    assert.deepEqual(decodeHeaderBlock(block), new Map([['streamtype', 'data']]));
    assert.throws(() => decodeHeaderBlock(block.subarray(0, block.length - 1)), /truncated/);
  });
});

describe('SPDY/3 frames', () => {
  test('control and data frames round trip, split anywhere', () => {
    const wire = Buffer.concat([
      encodeControl(PING, 0, Buffer.from([0, 0, 0, 1])),
      encodeData(3, Buffer.from('hello'), true),
      encodeControl(WINDOW_UPDATE, 0, Buffer.alloc(8)),
    ]);
    for (let cut = 0; cut <= wire.length; cut++) {
      const a = decodeSpdyFrames(wire.subarray(0, cut));
      const b = decodeSpdyFrames(Buffer.concat([a.rest, wire.subarray(cut)]));
      const frames: SpdyFrame[] = [...a.frames, ...b.frames];
      assert.equal(frames.length, 3);
      assert.deepEqual(frames[1], {
        control: false,
        streamId: 3,
        flags: FLAG_FIN,
        data: Buffer.from('hello'),
      });
    }
    assert.deepEqual(
      encodeControl(PING, 0, Buffer.alloc(4)).subarray(0, 4),
      Buffer.from([0x80, 0x03, 0x00, 0x06]),
    );
  });

  test('a frame of another SPDY version is an error', () => {
    const f = encodeControl(SETTINGS, 0, Buffer.alloc(4));
    f[1] = 2;
    assert.throws(() => decodeSpdyFrames(f), /version 2/);
  });
});

describe('SpdySession', () => {
  test('accepts streams, replies, echoes pings, carries data and FIN both ways', async () => {
    const sent: Buffer[] = [];
    const got: string[] = [];
    const streams: SpdyStream[] = [];
    const s = new SpdySession(
      (b) => sent.push(b),
      (st) => {
        streams.push(st);
        st.onData = (d) => got.push(`${String(st.id)}:${d.toString()}`);
        st.onEnd = () => got.push(`${String(st.id)}:end`);
        return st.headers.get('streamtype') !== 'bogus';
      },
      () => got.push('closed'),
    );
    const c = clientCompressor();
    s.feed(synStream(1, await c.block(new Map([['streamtype', 'error']])), FLAG_FIN));
    s.feed(synStream(3, await c.block(new Map([['streamtype', 'data']]))));
    s.feed(synStream(5, await c.block(new Map([['streamtype', 'bogus']]))));
    s.feed(
      Buffer.concat([
        encodeData(3, Buffer.from('GET /')),
        encodeControl(PING, 0, Buffer.from([0, 0, 0, 7])),
      ]),
    );
    streams[1]?.write(Buffer.from('200'));
    streams[1]?.end();
    s.feed(encodeData(3, Buffer.alloc(0), true));
    assert.equal(s.openStreams, 1); // stream 1: the client's side closed, ours open
    s.feed(encodeControl(GOAWAY, 0, Buffer.alloc(8)));
    c.deflate.close();
    assert.deepEqual(got, ['1:end', '3:GET /', '3:end', 'closed']);
    const frames = decodeSpdyFrames(Buffer.concat(sent)).frames;
    const summary = frames.map((f) =>
      f.control
        ? `${String(f.type)}/${String(f.flags)}`
        : `data ${String(f.streamId)}/${String(f.flags)} ${f.data.toString()}`,
    );
    assert.deepEqual(summary, [
      `${String(SYN_REPLY)}/0`,
      `${String(SYN_REPLY)}/0`,
      `${String(SYN_REPLY)}/${String(FLAG_FIN)}`,
      `${String(PING)}/0`,
      'data 3/0 200',
      `data 3/${String(FLAG_FIN)} `,
    ]);
    const ping = frames[3];
    assert.ok(ping?.control);
    assert.deepEqual(ping.data, Buffer.from([0, 0, 0, 7]));
  });

  test('data on an unknown stream is answered with RST_STREAM', () => {
    const sent: Buffer[] = [];
    const s = new SpdySession(
      (b) => sent.push(b),
      () => true,
      () => undefined,
    );
    s.feed(encodeData(9, Buffer.from('x')));
    const [f] = decodeSpdyFrames(Buffer.concat(sent)).frames;
    assert.ok(f?.control);
    assert.equal(f.type, RST_STREAM);
    assert.equal(f.data.readUInt32BE(0), 9);
  });
});
