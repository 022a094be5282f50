// Named network namespaces for Pod sandboxes: /run/netns/NAME with lo up, made and removed
// the way `ip netns add|del` does it (iproute2 ipnetns.c), but from inside this process as
// containerd's pkg/netns does, not with two processes per Pod. Starting a process from a
// Node process of 100 MiB costs tens of milliseconds on a small machine (the fork copies its
// page tables), and the lab's node agent made three per Pod. The steps, all synchronous on
// the calling thread:
//   1. /run/netns exists and is a mount point with shared propagation (a bind mount of
//      itself when it is not one), so a namespace mounted there is seen by mount namespaces
//      that share it — iproute2's first step on every `netns add`;
//   2. an empty file /run/netns/NAME, created exclusively (EEXIST names the path);
//   3. unshare(CLONE_NEWNET) on this thread, bind mount /proc/thread-self/ns/net onto the
//      file, bring lo up (SIOCSIFFLAGS on a socket of the new namespace), setns back;
//   4. removal: umount2(MNT_DETACH) then unlink, as `ip netns del`.
// KernelSandboxNamespaces does this through libc (koffi); IpSandboxNamespaces runs `ip` (the
// fallback, and what FakeIp models in tests). Not here: entering a namespace (netns-enter.ts).

import { closeSync, mkdirSync, openSync, unlinkSync } from 'node:fs';
import { linkUp, netnsPath } from '../util/ip-ops.js';
import { IpError, type Ip } from './ip.js';
import { ERRNO, libc, SOCK, type Libc } from './libc.js';
import { RealNetnsEnterer } from './netns-enter.js';

/** A Pod sandbox's network namespace: created with lo up, removed with its name. */
export interface SandboxNamespaces {
  /** A new namespace at netnsPath(name), lo up; throws IpError (File exists) when it exists. */
  create(name: string): Promise<void>;
  /** Unmounts and removes it; false when it did not exist. */
  remove(name: string): Promise<boolean>;
}

/** Through iproute2: `ip netns add NAME`, lo up in one batch, `ip netns del NAME`. */
export class IpSandboxNamespaces implements SandboxNamespaces {
  private readonly ip: Ip;
  constructor(ip: Ip) {
    this.ip = ip;
  }

  async create(name: string): Promise<void> {
    await this.ip.addNetns(name);
    await this.ip.batch(netnsPath(name), [linkUp('lo')]);
  }

  remove(name: string): Promise<boolean> {
    return this.ip.deleteNetns(name);
  }
}

// <sys/mount.h>, <linux/sockios.h>, <net/if.h>
const MS_BIND = 0x1000;
const MS_REC = 0x4000;
const MS_SHARED = 0x100000;
const MNT_DETACH = 2;
const SIOCGIFFLAGS = 0x8913;
const SIOCSIFFLAGS = 0x8914;
const IFF_UP = 0x1;
/** sizeof(struct ifreq) on Linux; ifr_flags (a short) follows the 16-byte name. */
const IFREQ_SIZE = 40;
const IFR_FLAGS_OFFSET = 16;
/** iproute2's NETNS_RUN_DIR: the directory of netnsPath(name). */
const RUN_DIR = '/run/netns';

/** In this process through libc (see the file header). Root only. */
export class KernelSandboxNamespaces implements SandboxNamespaces {
  private readonly libc: Libc;
  private readonly enter: RealNetnsEnterer;
  private runDirReady = false;

  constructor(enter: RealNetnsEnterer = new RealNetnsEnterer()) {
    this.libc = libc();
    this.enter = enter;
  }

  create(name: string): Promise<void> {
    return new Promise((resolve) => {
      this.createSync(name);
      resolve();
    });
  }

  remove(name: string): Promise<boolean> {
    return new Promise((resolve) => {
      resolve(this.removeSync(name));
    });
  }

  private fail(what: string, name: string): IpError {
    const errno = this.libc.errno();
    return new IpError(`netns ${name}: ${what}: errno ${String(errno)}`, `errno ${String(errno)}`);
  }

  /** Step 1: /run/netns as a shared mount point (once per process, as it stays one). */
  private ensureRunDir(): void {
    if (this.runDirReady) return;
    mkdirSync(RUN_DIR, { recursive: true, mode: 0o755 });
    if (this.libc.mount('', RUN_DIR, 'none', MS_SHARED | MS_REC, null) !== 0) {
      if (this.libc.errno() !== ERRNO.EINVAL) throw this.fail(`make ${RUN_DIR} shared`, '');
      // Not a mount point yet: make it one, then shared.
      if (this.libc.mount(RUN_DIR, RUN_DIR, 'none', MS_BIND | MS_REC, null) !== 0)
        throw this.fail(`bind mount ${RUN_DIR}`, '');
      if (this.libc.mount('', RUN_DIR, 'none', MS_SHARED | MS_REC, null) !== 0)
        throw this.fail(`make ${RUN_DIR} shared`, '');
    }
    this.runDirReady = true;
  }

  private createSync(name: string): void {
    if (name === '' || name.includes('/') || name === '.' || name === '..')
      throw new IpError(`netns ${JSON.stringify(name)}: not a valid namespace name`, '');
    this.ensureRunDir();
    const path = netnsPath(name);
    try {
      closeSync(openSync(path, 'wx', 0o000));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new IpError(
        `netns add ${name}: Cannot create namespace file "${path}": ${code === 'EEXIST' ? 'File exists' : String(code)}`,
        code === 'EEXIST' ? 'File exists' : String(code),
      );
    }
    try {
      this.enter.runInNew(() => {
        if (this.libc.mount('/proc/thread-self/ns/net', path, 'none', MS_BIND, null) !== 0)
          throw this.fail(`bind mount onto ${path}`, name);
        this.loUp(name);
      });
    } catch (err) {
      this.libc.umount2(path, MNT_DETACH);
      try {
        unlinkSync(path);
      } catch {
        // already gone
      }
      throw err;
    }
  }

  /** lo up in the namespace the thread is in (inside runInNew's window). */
  private loUp(name: string): void {
    const fd = this.libc.socket(SOCK.AF_INET, SOCK.DGRAM | SOCK.CLOEXEC, 0);
    if (fd < 0) throw this.fail('socket', name);
    try {
      const ifr = Buffer.alloc(IFREQ_SIZE);
      ifr.write('lo', 0, 'latin1');
      if (this.libc.ioctl(fd, SIOCGIFFLAGS, ifr) !== 0) throw this.fail('SIOCGIFFLAGS lo', name);
      ifr.writeUInt16LE(ifr.readUInt16LE(IFR_FLAGS_OFFSET) | IFF_UP, IFR_FLAGS_OFFSET);
      if (this.libc.ioctl(fd, SIOCSIFFLAGS, ifr) !== 0) throw this.fail('lo up', name);
    } finally {
      this.libc.close(fd);
    }
  }

  private removeSync(name: string): boolean {
    const path = netnsPath(name);
    // EINVAL: not mounted (a half-made namespace); the file still goes.
    if (this.libc.umount2(path, MNT_DETACH) !== 0) {
      const errno = this.libc.errno();
      if (errno === ERRNO.ENOENT) return false;
      if (errno !== ERRNO.EINVAL) throw this.fail(`umount ${path}`, name);
    }
    try {
      unlinkSync(path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw new IpError(`netns del ${name}: Cannot remove namespace file "${path}"`, String(err));
    }
  }
}
