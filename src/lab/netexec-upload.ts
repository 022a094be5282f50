// netexec's /upload: a multipart form's `file` part stored as a new file `uploadNNNN` (mode
// 0700) in the upload directory, answered as agnhost answers: 201 `{"output":"PATH"}`, or 200
// `{"error":"..."}` with agnhost's fixed texts. agnhost writes to /uploads inside its
// container; lab Pods share the host's filesystem, so the directory is a flag instead
// (default under the OS temp directory) and is created on first use. Bodies over 64 MiB are
// refused as an unusable form. The multipart parsing is our own small reader (no dependency).

import type { IncomingMessage } from 'node:http';
import { chmod, mkdir, open } from 'node:fs/promises';
import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import { goJson } from './netexec-go.js';

const MAX_BODY = 64 * 1024 * 1024;

export interface UploadAnswer {
  readonly status: 200 | 201;
  readonly body: string;
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => {
      resolve(size <= MAX_BODY ? Buffer.concat(chunks) : undefined);
    });
    req.on('error', reject);
  });
}

/**
 * The content of the part named `file` in a multipart/form-data body (RFC 7578), if any.
 * Pure; enough of the format for what clients send: a boundary from the Content-Type, parts
 * with a Content-Disposition `name`.
 */
export function multipartFile(contentType: string, body: Buffer): Uint8Array | undefined {
  if (!/^multipart\/form-data\s*;/i.test(contentType)) return undefined;
  const m = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (boundary === undefined) return undefined;
  const delimiter = Buffer.from(`--${boundary}`);
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    const partStart = at + delimiter.length;
    if (body.subarray(partStart, partStart + 2).toString() === '--') return undefined;
    const next = body.indexOf(delimiter, partStart);
    if (next < 0) return undefined;
    const part = body.subarray(partStart, next);
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd >= 0) {
      const headers = part.subarray(0, headerEnd).toString('utf8');
      if (/^content-disposition:[^\r\n]*;\s*name="?file"?(?:;|\s|$)/im.test(headers)) {
        const content = part.subarray(headerEnd + 4);
        // The CRLF before the next delimiter belongs to the delimiter.
        return Uint8Array.from(content.subarray(0, content.length >= 2 ? content.length - 2 : 0));
      }
    }
    at = next;
  }
  return undefined;
}

/** Creates `dir/uploadNNNN` exclusively, as os.CreateTemp(dir, "upload") does. */
async function createUploadFile(
  dir: string,
): Promise<{ path: string; write: (b: Uint8Array) => Promise<void> }> {
  await mkdir(dir, { recursive: true });
  for (;;) {
    const path = join(dir, `upload${String(randomInt(1, 2 ** 32))}`);
    try {
      const fh = await open(path, 'wx', 0o600);
      return {
        path,
        write: async (b) => {
          try {
            await fh.writeFile(b);
          } finally {
            await fh.close();
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

/** Handles one /upload request; never rejects (failures are agnhost's error JSON). */
export async function handleUpload(req: IncomingMessage, dir: string): Promise<UploadAnswer> {
  const failed = (error: string): UploadAnswer => ({ status: 200, body: goJson({ error }) });
  const body = await readBody(req).catch(() => undefined);
  const data =
    body === undefined ? undefined : multipartFile(req.headers['content-type'] ?? '', body);
  if (data === undefined) return failed('Unable to upload file.');
  let file: Awaited<ReturnType<typeof createUploadFile>>;
  try {
    file = await createUploadFile(dir);
  } catch {
    return failed('Unable to open file for write');
  }
  try {
    await file.write(data);
  } catch {
    return failed('Unable to write file.');
  }
  try {
    await chmod(file.path, 0o700);
  } catch {
    return failed('Unable to chmod file.');
  }
  return { status: 201, body: goJson({ output: file.path }) };
}
