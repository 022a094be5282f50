// A TCP port on 127.0.0.1 that nothing listens on right now: the kernel picks one for a
// throwaway listener, which is closed again. For tests and benches that start a daemon on its
// own ports (another process may take the port before the daemon binds it; they retry or fail
// with the address named).

import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      s.close(() => {
        resolve(port);
      });
    });
  });
}
