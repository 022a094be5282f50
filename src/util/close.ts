// Promise form of the callback-style close() of sockets and servers (dgram.Socket,
// net.Server, http.Server), tolerating an absent one, so shutdown code reads as one await.

export interface Closable {
  close(callback: () => void): unknown;
}

/** Resolves when `c` has closed; at once when there is nothing to close. */
export function closeQuietly(c: Closable | undefined): Promise<void> {
  return c === undefined
    ? Promise.resolve()
    : new Promise<void>((resolve) => {
        c.close(() => {
          resolve();
        });
      });
}
