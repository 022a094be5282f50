import { test } from 'node:test';
import assert from 'node:assert/strict';
import { multipartFile } from './netexec-upload.js';

/** Encodes a form with the platform's own multipart writer, so the reader meets real input. */
async function encode(form: FormData): Promise<{ type: string; body: Buffer }> {
  const r = new Response(form);
  return {
    type: r.headers.get('content-type') ?? '',
    body: Buffer.from(await r.arrayBuffer()),
  };
}

test('multipartFile finds the `file` part among others, byte for byte', async () => {
  const form = new FormData();
  form.append('other', 'x');
  form.append('file', new Blob([new Uint8Array([0, 13, 10, 45, 45, 255])]), 'b.bin');
  const { type, body } = await encode(form);
  assert.deepEqual(multipartFile(type, body), new Uint8Array([0, 13, 10, 45, 45, 255]));
});

test('multipartFile answers nothing without a file part or a multipart type', async () => {
  const form = new FormData();
  form.append('files', 'nope');
  const { type, body } = await encode(form);
  assert.equal(multipartFile(type, body), undefined);
  assert.equal(multipartFile('text/plain', Buffer.from('file')), undefined);
  assert.equal(
    multipartFile('multipart/form-data; boundary=x', Buffer.from('--x--\r\n')),
    undefined,
  );
});
