// The VM test tier's runner: boots Debian's kernel (which has ip_vs, unlike this machine's)
// under qemu TCG with the initramfs of build-initramfs.sh, the host's root read-only over 9p,
// no network device, and runs one command inside, in the project directory, as root in a
// throwaway kernel. The guest's console streams to stdout; the exit status is the command's.
// KVM is never used: /dev/kvm hangs at boot on the machine this was built on.
//
//   node --import tsx scripts/vm/run.ts [--timeout SECONDS] -- COMMAND [ARG...]
//   node --import tsx scripts/vm/run.ts --tests [FILTER...]   every test/vm/*.test.ts, one boot
//
// Environment: SVCNET_VM_KERNEL (kernel version, default the newest with /boot/vmlinuz-*),
// SVCNET_VM_CACHE (initramfs cache, default ~/.cache/svcnet-vm), SVCNET_VM_SMP (default 2),
// SVCNET_VM_MEM (MiB, default 1024), SVCNET_VM_TIMEOUT (seconds, default 900).

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

const project = resolve(import.meta.dirname, '..', '..');
// init.sh's last line; a command's output without a final newline may precede it on the line.
const EXIT_MARKER = /SVCNET-VM-EXIT (\d+)$/;
// The firmware's terminal resets and cursor moves, which would garble a log.
// eslint-disable-next-line no-control-regex
const ESCAPES = /\x1bc|\x1b\[[0-9;?]*[a-zA-Z]/g;

const PASSED_ENV = ['CI', 'VERBOSE', 'SVCNET_FIXTURES'];

export interface VmOptions {
  /** Seconds before qemu is killed; the run then fails with status 124. */
  timeoutSeconds?: number;
  /** Directory the command starts in (inside the VM it is the same path, over 9p). */
  cwd?: string;
  /** Called with each console line (without the exit marker); default: print it. */
  onLine?: (line: string) => void;
}

/** The kernel version to boot: SVCNET_VM_KERNEL, else the newest with modules and a vmlinuz. */
export function kernelVersion(): string | undefined {
  const wanted = process.env.SVCNET_VM_KERNEL;
  if (wanted !== undefined && wanted !== '') return wanted;
  if (!existsSync('/lib/modules')) return undefined;
  const versions = readdirSync('/lib/modules')
    .filter((v) => existsSync(`/boot/vmlinuz-${v}`))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  return versions.at(-1);
}

/** Installs the tier's packages when missing (as the other tiers do); throws if still missing. */
export function ensureTools(): void {
  const r = spawnSync('bash', [join(project, 'scripts', 'install-deps.sh'), 'vm'], {
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error('vm: missing tools (see above)');
}

/** Builds (or reuses) the initramfs for `kver`; returns its path. */
export function initramfs(kver: string): string {
  const cache = process.env.SVCNET_VM_CACHE ?? join(homedir(), '.cache', 'svcnet-vm');
  const r = spawnSync(
    'bash',
    [join(project, 'scripts', 'vm', 'build-initramfs.sh'), kver, join(cache, kver)],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const path = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || path === '') throw new Error('vm: building the initramfs failed');
  return path;
}

function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** Folders the guest covers with a tmpfs (init.sh); the host's files there are hidden. */
const GUEST_TMPFS = /^\/(tmp|run|var\/tmp)\//;

/**
 * qemu's arguments: TCG only, no NIC, the host's root as 9p tag "host". `keep` is a host
 * folder under /tmp, /run or /var/tmp (a checkout there) that init.sh binds back over the
 * guest's tmpfs, read-only like the rest of the host.
 */
export function qemuArgs(kver: string, image: string, script: string, keep?: string): string[] {
  const append = `console=ttyS0 quiet loglevel=3 panic=-1 svcnet.run=${script}`;
  return [
    ...['-accel', 'tcg', '-cpu', 'max', '-smp', process.env.SVCNET_VM_SMP ?? '2'],
    ...['-m', process.env.SVCNET_VM_MEM ?? '1024', '-nographic', '-no-reboot', '-nic', 'none'],
    ...['-kernel', `/boot/vmlinuz-${kver}`, '-initrd', image],
    ...['-append', keep === undefined ? append : `${append} svcnet.keep=${keep}`],
    '-virtfs',
    'local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap',
  ];
}

/**
 * Boots the VM once and runs `command` inside (in `opts.cwd`, default the project); resolves
 * with the command's exit status (124 on timeout, 125 if the VM ended without reporting one).
 */
export async function runInVm(command: readonly string[], opts: VmOptions = {}): Promise<number> {
  const kver = kernelVersion();
  if (kver === undefined)
    throw new Error('vm: no kernel with /boot/vmlinuz-*; apt-get install linux-image-amd64');
  const image = initramfs(kver);
  // The script lives beside the initramfs, not in /tmp: the guest mounts a tmpfs over /tmp.
  const script = join(image, '..', `run-${process.pid}.sh`);
  if (/\s/.test(script) || GUEST_TMPFS.test(script))
    throw new Error(`vm: the cache ${image} must be outside /tmp, /run and /var/tmp, no spaces`);
  const cwd = opts.cwd ?? project;
  // A checkout under /tmp (a CI clone, say) is bound back over the guest's tmpfs.
  if (GUEST_TMPFS.test(`${project}/`) && /\s/.test(project))
    throw new Error(`vm: the project folder ${project} has a space; the guest cannot keep it`);
  const keep = GUEST_TMPFS.test(`${project}/`) ? project : undefined;
  // The guest starts with an empty environment; these few pass through.
  const env = PASSED_ENV.filter((k) => process.env[k] !== undefined).map(
    (k) => `export ${k}=${shellQuote(process.env[k] ?? '')}\n`,
  );
  writeFileSync(
    script,
    `${env.join('')}cd ${shellQuote(cwd)} || exit 2\nexec ${command.map(shellQuote).join(' ')}\n`,
  );
  const print = opts.onLine ?? ((line: string) => process.stdout.write(`${line}\n`));
  try {
    return await boot(qemuArgs(kver, image, script, keep), opts.timeoutSeconds ?? 900, print);
  } finally {
    rmSync(script, { force: true });
  }
}

function boot(args: string[], timeoutSeconds: number, print: (line: string) => void) {
  return new Promise<number>((done, fail) => {
    const qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let status: number | undefined;
    let timedOut = false;
    let rest = '';
    const online = (raw: string) => {
      const line = raw.replace(/\r$/, '').replace(ESCAPES, '');
      const marker = EXIT_MARKER.exec(line);
      if (marker !== null) status = Number(marker[1]);
      const text = marker === null ? line : line.slice(0, marker.index);
      if (marker === null || text !== '') print(text);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      print(`vm: timed out after ${timeoutSeconds} s; stopping qemu (pid ${qemu.pid})`);
      qemu.kill('SIGKILL');
    }, timeoutSeconds * 1000);
    // The VM dies with the runner: a stopped test run must not leave qemu spinning.
    const stop = () => qemu.kill('SIGKILL');
    process.once('SIGINT', stop).once('SIGTERM', stop);
    qemu.stdout.setEncoding('utf8');
    qemu.stdout.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const raw of lines) online(raw);
    });
    qemu.on('error', (err) => {
      clearTimeout(timer);
      fail(err);
    });
    qemu.on('close', () => {
      clearTimeout(timer);
      process.off('SIGINT', stop).off('SIGTERM', stop);
      if (rest !== '') online(rest);
      done(timedOut ? 124 : (status ?? 125));
    });
  });
}

async function main(argv: string[]): Promise<number> {
  let timeout = Number(process.env.SVCNET_VM_TIMEOUT ?? '900');
  if (argv[0] === '--timeout') {
    timeout = Number(argv[1]);
    argv = argv.slice(2);
  }
  let command: string[];
  if (argv[0] === '--tests') {
    const filters = argv.slice(1);
    const files = readdirSync(join(project, 'test', 'vm'))
      .filter((f) => f.endsWith('.test.ts'))
      .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
      .sort()
      .map((f) => join('test', 'vm', f));
    if (files.length === 0) {
      console.error('vm: no test/vm/*.test.ts files match');
      return 1;
    }
    command = [
      ...['node', '--import', 'tsx', '--test', '--test-reporter=spec'],
      ...['--test-concurrency=1', '--test-force-exit', '--test-timeout=600000', ...files],
    ];
  } else {
    command = argv[0] === '--' ? argv.slice(1) : argv;
  }
  if (command.length === 0) {
    console.error('usage: run.ts [--timeout SECONDS] -- COMMAND [ARG...] | --tests [FILTER...]');
    return 2;
  }
  ensureTools();
  const started = Date.now();
  const status = await runInVm(command, { timeoutSeconds: timeout });
  console.log(`vm: exit ${status}, ${((Date.now() - started) / 1000).toFixed(1)} s wall`);
  return status;
}

if (import.meta.filename === process.argv[1])
  main(process.argv.slice(2)).then(
    (status) => process.exit(status),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exit(1);
    },
  );
