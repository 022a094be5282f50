// One authenticated JSON request to an in-process `startApiServer` (plain HTTP on loopback),
// for integration tests that write objects without a client library. Resolves to the HTTP
// status; the body is read and dropped so the connection is released.

import type { RunningApiServer } from '../../../src/apiserver/daemon.js';

export async function apiRequest(
  api: RunningApiServer,
  method: string,
  path: string,
  body?: unknown,
): Promise<number> {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${api.token}`, 'Content-Type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  await res.text();
  return res.status;
}
