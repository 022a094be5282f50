// The client configuration of every svcnet process that talks to an API server: a kubeconfig
// file (or several, merged as kubectl merges $KUBECONFIG) or the in-cluster ServiceAccount,
// reduced to what a request needs: the server, the TLS material to trust it and to present,
// and the credential to send. Ours rather than @kubernetes/client-node's: loading client-node
// cost every lab process 0.55 s of CPU and 68 MiB (its generated models cannot be left out of
// a bundle), for the dozen requests a daemon makes.
//
// What a kubeconfig user may hold: token, tokenFile (re-read once its copy is a minute old, as
// client-go's cached file token source does, so a rotated projected token takes effect),
// client certificate and key (data or files), username/password, and an `exec` credential
// plugin (client.authentication.k8s.io v1 or v1beta1 ExecCredential, cached until it
// expires). The legacy `auth-provider` and a cluster's `proxy-url` are refused by name.
// Files named in a kubeconfig are read relative to it; CA, certificate and key files are
// re-read per connection pool, so a rotated file takes effect.

import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { SvcnetError } from '../errors.js';
import {
  hasInClusterEnv,
  readInClusterConfig,
  SERVICE_ACCOUNT_DIR,
  type InClusterConfig,
} from './in-cluster.js';

/** One source of bytes: inline (base64 in the file) or a file read when needed. */
type Material = { readonly data: Buffer } | { readonly file: string };

export interface ExecPlugin {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly apiVersion: string;
}

export interface ClusterConfig {
  readonly name: string;
  readonly server: string;
  readonly ca?: Material;
  readonly insecureSkipTLSVerify: boolean;
  readonly tlsServerName?: string;
}

export interface UserConfig {
  readonly name: string;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly cert?: Material;
  readonly key?: Material;
  readonly username?: string;
  readonly password?: string;
  readonly exec?: ExecPlugin;
}

/** What a request needs to reach the API server: an agent and the headers to send. */
export interface Transport {
  readonly agent: HttpAgent;
  readonly headers: Readonly<Record<string, string>>;
}

/** How long a token read from a file is used before the file is read again. */
const TOKEN_FILE_TTL_MS = 60_000;
/** An exec credential is renewed this long before it expires. */
const EXEC_EXPIRY_SLACK_MS = 10_000;

function read(m: Material): Buffer {
  return 'data' in m ? m.data : readFileSync(m.file);
}

/** A resolved client configuration: one cluster, one user, and where they came from. */
export class KubeConfig {
  readonly cluster: ClusterConfig;
  readonly user: UserConfig;
  readonly contextName: string;
  readonly namespace: string | undefined;
  /** e.g. `--kubeconfig /x`, `$KUBECONFIG /x`, `in-cluster config` (for error hints). */
  readonly source: string;
  private readonly agents = new Map<string, HttpAgent>();
  private fileToken: { value: string; readAt: number } | undefined;
  private execCredential:
    { token?: string; cert?: Buffer; key?: Buffer; expiresAt: number } | undefined;
  private execRunning: Promise<void> | undefined;

  constructor(
    cluster: ClusterConfig,
    user: UserConfig,
    contextName: string,
    namespace: string | undefined,
    source: string,
  ) {
    this.cluster = cluster;
    this.user = user;
    this.contextName = contextName;
    this.namespace = namespace;
    this.source = source;
  }

  get server(): string {
    return this.cluster.server;
  }

  /** client-node-shaped accessors, for the few callers that print where they connect. */
  getCurrentCluster(): { name: string; server: string } {
    return { name: this.cluster.name, server: this.cluster.server };
  }

  getCurrentUser(): { name: string; token?: string } {
    return {
      name: this.user.name,
      ...(this.user.token !== undefined ? { token: this.user.token } : {}),
    };
  }

  /**
   * The agent and headers for the next request: one keep-alive agent per TLS material (as
   * client-go keeps one transport), so lists, watches and writes reuse connections.
   */
  async transport(): Promise<Transport> {
    if (this.user.exec !== undefined) await this.refreshExec();
    const headers: Record<string, string> = {};
    const token = this.bearer();
    if (token !== undefined) headers.Authorization = `Bearer ${token}`;
    else if (this.user.username !== undefined)
      headers.Authorization = `Basic ${Buffer.from(`${this.user.username}:${this.user.password ?? ''}`).toString('base64')}`;
    return { agent: this.agent(), headers };
  }

  private bearer(): string | undefined {
    if (this.execCredential?.token !== undefined) return this.execCredential.token;
    if (this.user.token !== undefined && this.user.token !== '') return this.user.token;
    const file = this.user.tokenFile;
    if (file === undefined) return undefined;
    const now = Date.now();
    if (this.fileToken === undefined || now - this.fileToken.readAt >= TOKEN_FILE_TTL_MS)
      this.fileToken = { value: readFileSync(file, 'utf8').trim(), readAt: now };
    return this.fileToken.value;
  }

  private agent(): HttpAgent {
    const url = new URL(this.cluster.server);
    if (url.protocol === 'http:') {
      let a = this.agents.get('http');
      if (a === undefined) {
        a = new HttpAgent({ keepAlive: true });
        this.agents.set('http', a);
      }
      return a;
    }
    const ca = this.cluster.ca !== undefined ? read(this.cluster.ca) : undefined;
    const cert =
      this.execCredential?.cert ??
      (this.user.cert !== undefined ? read(this.user.cert) : undefined);
    const key =
      this.execCredential?.key ?? (this.user.key !== undefined ? read(this.user.key) : undefined);
    const b64 = (b: Buffer | undefined): string => b?.toString('base64') ?? '';
    const id = [b64(ca), b64(cert), b64(key)].join('|');
    let a = this.agents.get(id);
    if (a === undefined) {
      a = new HttpsAgent({
        keepAlive: true,
        ...(ca !== undefined ? { ca } : {}),
        ...(cert !== undefined ? { cert } : {}),
        ...(key !== undefined ? { key } : {}),
        rejectUnauthorized: !this.cluster.insecureSkipTLSVerify,
        ...(this.cluster.tlsServerName !== undefined
          ? { servername: this.cluster.tlsServerName }
          : {}),
      });
      // The material changed (a rotated file): the old pool closes as its sockets go idle.
      for (const [k, old] of this.agents) {
        if (k !== 'http') {
          old.destroy();
          this.agents.delete(k);
        }
      }
      this.agents.set(id, a);
    }
    return a;
  }

  /** Runs the exec plugin when there is no credential or it is about to expire. */
  private async refreshExec(): Promise<void> {
    const c = this.execCredential;
    if (c !== undefined && Date.now() < c.expiresAt - EXEC_EXPIRY_SLACK_MS) return;
    this.execRunning ??= this.runExec().finally(() => (this.execRunning = undefined));
    await this.execRunning;
  }

  private async runExec(): Promise<void> {
    const plugin = this.user.exec;
    if (plugin === undefined) return;
    const info = {
      apiVersion: plugin.apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: false },
    };
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        plugin.command,
        [...plugin.args],
        {
          env: { ...process.env, ...plugin.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) },
          timeout: 60_000,
          maxBuffer: 1 << 20,
        },
        (err, out, errOut) => {
          if (err)
            reject(
              new SvcnetError(
                'INVALID_INPUT',
                `user ${this.user.name} in ${this.source}: exec plugin ${plugin.command} failed: ${(errOut || err.message).trim().split('\n')[0] ?? ''}`,
                { cause: err },
              ),
            );
          else resolve(out);
        },
      );
    });
    let status: Record<string, unknown>;
    try {
      status = (JSON.parse(stdout) as { status?: Record<string, unknown> }).status ?? {};
    } catch (e) {
      throw new SvcnetError(
        'INVALID_INPUT',
        `user ${this.user.name} in ${this.source}: exec plugin ${plugin.command} printed no ExecCredential JSON`,
        { cause: e },
      );
    }
    const str = (k: string): string | undefined =>
      typeof status[k] === 'string' ? status[k] : undefined;
    const expires = str('expirationTimestamp');
    const token = str('token');
    const cert = str('clientCertificateData');
    const key = str('clientKeyData');
    this.execCredential = {
      ...(token !== undefined ? { token } : {}),
      ...(cert !== undefined ? { cert: Buffer.from(cert) } : {}),
      ...(key !== undefined ? { key: Buffer.from(key) } : {}),
      expiresAt: expires !== undefined ? Date.parse(expires) : Number.POSITIVE_INFINITY,
    };
  }

  /** Closes idle pooled connections (a CLI that is done). */
  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }
}

type Plain = Record<string, unknown>;

function plain(v: unknown): Plain {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Plain) : {};
}

function str(o: Plain, k: string): string | undefined {
  const v = o[k];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** A parsed kubeconfig file: its named entries, each remembering the file it came from. */
interface KubeconfigFile {
  readonly clusters: Map<string, { v: Plain; dir: string }>;
  readonly users: Map<string, { v: Plain; dir: string }>;
  readonly contexts: Map<string, Plain>;
  currentContext: string | undefined;
}

function named(
  list: unknown,
  field: string,
  dir: string,
  into: Map<string, { v: Plain; dir: string }>,
): void {
  if (!Array.isArray(list)) return;
  for (const e of list) {
    const name = str(plain(e), 'name');
    // The first file to define a name wins, as kubectl merges $KUBECONFIG.
    if (name !== undefined && !into.has(name)) into.set(name, { v: plain(plain(e)[field]), dir });
  }
}

function readKubeconfigFile(path: string, into: KubeconfigFile): void {
  const doc = plain(parseYaml(readFileSync(path, 'utf8')));
  const dir = dirname(path);
  named(doc.clusters, 'cluster', dir, into.clusters);
  named(doc.users, 'user', dir, into.users);
  const ctx = new Map<string, { v: Plain; dir: string }>();
  named(doc.contexts, 'context', dir, ctx);
  for (const [k, { v }] of ctx) if (!into.contexts.has(k)) into.contexts.set(k, v);
  into.currentContext ??= str(doc, 'current-context');
}

function material(o: Plain, dataKey: string, fileKey: string, dir: string): Material | undefined {
  const data = str(o, dataKey);
  if (data !== undefined) return { data: Buffer.from(data, 'base64') };
  const file = str(o, fileKey);
  return file !== undefined ? { file: isAbsolute(file) ? file : join(dir, file) } : undefined;
}

/** The config a merged kubeconfig's current context names; `source` is for messages. */
function fromFile(f: KubeconfigFile, source: string, useContext?: string): KubeConfig {
  const contextName = useContext ?? f.currentContext;
  if (contextName === undefined) throw new Error('no current-context');
  const context = f.contexts.get(contextName);
  if (context === undefined)
    throw new Error(
      useContext !== undefined
        ? `no context ${JSON.stringify(useContext)}`
        : `current-context ${JSON.stringify(contextName)} is not among its contexts`,
    );
  const clusterName = str(context, 'cluster') ?? '';
  const c = f.clusters.get(clusterName);
  const server = c !== undefined ? str(c.v, 'server') : undefined;
  if (c === undefined || server === undefined)
    throw new Error(`context ${JSON.stringify(contextName)} names no cluster with a server`);
  try {
    new URL(server);
  } catch {
    throw new Error(`cluster ${clusterName}: server ${JSON.stringify(server)} is not a URL`);
  }
  if (str(c.v, 'proxy-url') !== undefined)
    throw new Error(`cluster ${clusterName}: proxy-url is not supported`);
  const ca = material(c.v, 'certificate-authority-data', 'certificate-authority', c.dir);
  const tlsServerName = str(c.v, 'tls-server-name');
  const cluster: ClusterConfig = {
    name: clusterName,
    server,
    ...(ca !== undefined ? { ca } : {}),
    insecureSkipTLSVerify: c.v['insecure-skip-tls-verify'] === true,
    ...(tlsServerName !== undefined ? { tlsServerName } : {}),
  };
  const userName = str(context, 'user') ?? '';
  const u = f.users.get(userName) ?? { v: {}, dir: '' };
  if (u.v['auth-provider'] !== undefined)
    throw new Error(
      `user ${userName}: auth-provider is not supported (use an exec credential plugin, as kubectl 1.26+ requires)`,
    );
  const token = str(u.v, 'token');
  const tokenFileName = str(u.v, 'tokenFile');
  const cert = material(u.v, 'client-certificate-data', 'client-certificate', u.dir);
  const key = material(u.v, 'client-key-data', 'client-key', u.dir);
  const username = str(u.v, 'username');
  const password = str(u.v, 'password');
  const execV = plain(u.v.exec);
  let exec: ExecPlugin | undefined;
  if (u.v.exec !== undefined) {
    const command = str(execV, 'command');
    if (command === undefined) throw new Error(`user ${userName}: exec has no command`);
    const env: Record<string, string> = {};
    if (Array.isArray(execV.env))
      for (const e of execV.env) {
        const n = str(plain(e), 'name');
        const value = plain(e).value;
        if (n !== undefined) env[n] = typeof value === 'string' ? value : '';
      }
    exec = {
      command: isAbsolute(command) || !command.includes('/') ? command : join(u.dir, command),
      args: Array.isArray(execV.args) ? execV.args.map(String) : [],
      env,
      apiVersion: str(execV, 'apiVersion') ?? 'client.authentication.k8s.io/v1',
    };
  }
  const user: UserConfig = {
    name: userName,
    ...(token !== undefined ? { token } : {}),
    ...(tokenFileName !== undefined
      ? { tokenFile: isAbsolute(tokenFileName) ? tokenFileName : join(u.dir, tokenFileName) }
      : {}),
    ...(cert !== undefined ? { cert } : {}),
    ...(key !== undefined ? { key } : {}),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(exec !== undefined ? { exec } : {}),
  };
  return new KubeConfig(cluster, user, contextName, str(context, 'namespace'), source);
}

/**
 * Reads and merges kubeconfig files in order (the first to set a value wins); `context`, when
 * given, is used instead of the current context.
 */
export function kubeConfigFromFiles(
  paths: readonly string[],
  source: string,
  context?: string,
): KubeConfig {
  const f: KubeconfigFile = {
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: undefined,
  };
  for (const p of paths) readKubeconfigFile(p, f);
  return fromFile(f, source, context);
}

/** The config for a process in a Pod (see in-cluster.ts): CA and token from their files. */
export function inClusterKubeConfig(cfg: InClusterConfig): KubeConfig {
  return new KubeConfig(
    {
      name: 'inCluster',
      server: cfg.server,
      ca: { file: cfg.caFile },
      insecureSkipTLSVerify: false,
    },
    { name: 'inClusterUser', tokenFile: cfg.tokenFile },
    'inClusterContext',
    cfg.namespace,
    'in-cluster config',
  );
}

/** Loads a kubeconfig file, or else the one `$KUBECONFIG` or ~/.kube/config names. */
export function loadKubeConfig(path?: string): KubeConfig {
  if (path !== undefined) return kubeConfigFromFiles([path], `kubeconfig ${path}`);
  return resolveKubeConfig(undefined, {
    ...process.env,
    KUBECONFIG: process.env.KUBECONFIG ?? join(process.env.HOME ?? '/root', '.kube', 'config'),
  });
}

export interface KubeConfigEnv {
  readonly KUBECONFIG?: string | undefined;
  readonly KUBERNETES_SERVICE_HOST?: string | undefined;
  readonly KUBERNETES_SERVICE_PORT?: string | undefined;
}

/**
 * The client configuration as client-go's daemons find it: `--kubeconfig` when given, else
 * the file(s) in `$KUBECONFIG`, else the in-cluster ServiceAccount config (a Pod with
 * KUBERNETES_SERVICE_HOST/PORT and a mounted token, in-cluster.ts). A file that is missing, is
 * not YAML, or has no current context with a server is one INVALID_INPUT error naming it (CLI
 * exit 2), never a retry loop; so is finding none of the three. `context` picks a context of
 * the `--kubeconfig` file other than its current one.
 */
export function resolveKubeConfig(
  flag: string | undefined,
  env: KubeConfigEnv = process.env,
  serviceAccountDir = SERVICE_ACCOUNT_DIR,
  context?: string,
): KubeConfig {
  let source: string;
  try {
    if (flag !== undefined && flag !== '') {
      source = `--kubeconfig ${flag}`;
      if (!existsSync(flag)) throw new Error('no such file');
      return kubeConfigFromFiles([flag], source, context);
    }
    if (env.KUBECONFIG !== undefined && env.KUBECONFIG !== '') {
      source = `$KUBECONFIG ${env.KUBECONFIG}`;
      const files = env.KUBECONFIG.split(':').filter((f) => f !== '' && existsSync(f));
      if (files.length === 0) throw new Error('no such file');
      return kubeConfigFromFiles(files, source);
    }
    if (hasInClusterEnv(env))
      return inClusterKubeConfig(readInClusterConfig(env, serviceAccountDir));
  } catch (e) {
    if (e instanceof SvcnetError) throw e;
    const msg = (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
    throw new SvcnetError(
      'INVALID_INPUT',
      `${describeSource(flag, env)}: not a usable kubeconfig (${msg})`,
      { cause: e },
    );
  }
  throw new SvcnetError(
    'INVALID_INPUT',
    `no kubeconfig: give --kubeconfig FILE, set $KUBECONFIG, or run in a Pod (with $KUBERNETES_SERVICE_HOST, $KUBERNETES_SERVICE_PORT and a ServiceAccount token in ${serviceAccountDir})`,
  );
}

function describeSource(flag: string | undefined, env: KubeConfigEnv): string {
  if (flag !== undefined && flag !== '') return `--kubeconfig ${flag}`;
  if (env.KUBECONFIG !== undefined && env.KUBECONFIG !== '') return `$KUBECONFIG ${env.KUBECONFIG}`;
  return 'in-cluster config';
}

/** A config for one server and an optional token (tests, and callers that were handed both). */
export function serverKubeConfig(
  server: string,
  opts: { token?: string; caData?: Buffer; insecureSkipTLSVerify?: boolean } = {},
): KubeConfig {
  return new KubeConfig(
    {
      name: 'server',
      server,
      ...(opts.caData !== undefined ? { ca: { data: opts.caData } } : {}),
      insecureSkipTLSVerify: opts.insecureSkipTLSVerify === true,
    },
    { name: 'user', ...(opts.token !== undefined ? { token: opts.token } : {}) },
    'server',
    undefined,
    server,
  );
}
