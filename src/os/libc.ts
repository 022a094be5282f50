// The few libc calls Node does not offer, bound once through koffi (an FFI package with
// prebuilt binaries and no install script): setns and unshare for network namespaces, mount
// and umount2 for the /run/netns files that name them, socket/ioctl/close for bringing a
// device up, send/recv/if_nametoindex for rtnetlink (netlink.ts), mkfifo for container logs. Loaded on first use, so commands that need none of
// them never pay for it. Callers check the return value and read errno() at once (koffi keeps
// the errno of the last call made through it). Not a general libc binding: only what src/os
// needs, each with the C signature from its man page.

import { createRequire } from 'node:module';

interface KoffiFunctions {
  func(signature: string): (...args: unknown[]) => number;
}

interface Koffi {
  load(lib: string): KoffiFunctions;
  errno(): number;
}

export interface Libc {
  setns(fd: number, nstype: number): number;
  unshare(flags: number): number;
  mount(
    source: string | null,
    target: string,
    fstype: string | null,
    flags: number,
    data: null,
  ): number;
  umount2(target: string, flags: number): number;
  mkfifo(path: string, mode: number): number;
  socket(domain: number, type: number, protocol: number): number;
  /** ioctl with a pointer argument (the buffer is read and written in place). */
  ioctl(fd: number, request: number, arg: Buffer): number;
  close(fd: number): number;
  send(fd: number, buf: Buffer, len: number, flags: number): number;
  recv(fd: number, buf: Buffer, len: number, flags: number): number;
  /** 0 when no device has that name in the calling thread's namespace. */
  if_nametoindex(name: string): number;
  /** errno of the last call made through this binding. */
  errno(): number;
}

let bound: Libc | null | undefined;

/** libc through koffi; throws when koffi cannot be loaded. */
export function libc(): Libc {
  if (bound === undefined || bound === null) {
    const koffi = createRequire(import.meta.url)('koffi') as Koffi;
    const lib = koffi.load('libc.so.6');
    // Each signature below is the type its field declares.
    const f = (signature: string): never => lib.func(signature) as never;
    bound = {
      setns: f('int setns(int fd, int nstype)'),
      unshare: f('int unshare(int flags)'),
      mount: f(
        'int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const void *data)',
      ),
      umount2: f('int umount2(const char *target, int flags)'),
      mkfifo: f('int mkfifo(const char *path, uint32_t mode)'),
      socket: f('int socket(int domain, int type, int protocol)'),
      ioctl: f('int ioctl(int fd, unsigned long request, void *arg)'),
      close: f('int close(int fd)'),
      send: f('long send(int fd, const void *buf, size_t len, int flags)'),
      recv: f('long recv(int fd, void *buf, size_t len, int flags)'),
      if_nametoindex: f('unsigned int if_nametoindex(const char *name)'),
      errno: () => koffi.errno(),
    };
  }
  return bound;
}

/** libc through koffi, or null when koffi is not installed (callers fall back to a command). */
export function libcOrNull(): Libc | null {
  if (bound === undefined) {
    try {
      return libc();
    } catch {
      bound = null;
    }
  }
  return bound;
}

/** <sys/socket.h> values the callers share. */
export const SOCK = {
  AF_INET: 2,
  AF_INET6: 10,
  AF_NETLINK: 16,
  DGRAM: 2,
  RAW: 3,
  CLOEXEC: 0o2000000,
} as const;

/** Linux errno values the callers tell apart. */
export const ERRNO = { ENOENT: 2, EEXIST: 17, EINVAL: 22 } as const;
