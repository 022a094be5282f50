// Tests of the health-check node port servers and the metrics server on loopback ports.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { ServiceHealthServers } from './healthcheck-nodeports.js';
import { listenHttp, parseBindAddress } from './listen.js';
import { metricsHandler } from './metrics-server.js';
import { ProxyMetrics } from './metrics.js';
import { freePort } from '../util/free-port.js';

test('parseBindAddress accepts IPv4 and bracketed IPv6 and names the field on error', () => {
  assert.deepEqual(parseBindAddress('0.0.0.0:10256', 'healthzBindAddress'), {
    host: '0.0.0.0',
    port: 10256,
  });
  assert.deepEqual(parseBindAddress('[::1]:10249', 'metricsBindAddress'), {
    host: '::1',
    port: 10249,
  });
  assert.throws(
    () => parseBindAddress('10256', 'healthzBindAddress'),
    /healthzBindAddress: must be ADDR:PORT/,
  );
  assert.throws(() => parseBindAddress('1.2.3.4:99999', 'x'), /x: must be ADDR:PORT/);
});

test('health-check node ports answer 200/503 with kube-proxy JSON and follow service changes', async () => {
  let proxyHealthy = true;
  const errors: string[] = [];
  const servers = new ServiceHealthServers({
    addresses: ['127.0.0.1'],
    isProxyHealthy: () => proxyHealthy,
    onError: (svc, port) => errors.push(`${svc}:${port}`),
  });
  const port = await freePort();
  try {
    await servers.syncServices(new Map([['ns1/web', port]]));
    const get = async () => {
      const r = await fetch(`http://127.0.0.1:${port}/`);
      return {
        status: r.status,
        weight: r.headers.get('x-load-balancing-endpoint-weight'),
        body: await r.json(),
      };
    };
    assert.deepEqual(await get(), {
      status: 503,
      weight: '0',
      body: {
        service: { namespace: 'ns1', name: 'web' },
        localEndpoints: 0,
        serviceProxyHealthy: true,
      },
    });
    servers.syncEndpoints(new Map([['ns1/web', 2]]));
    const ok = await get();
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, {
      service: { namespace: 'ns1', name: 'web' },
      localEndpoints: 2,
      serviceProxyHealthy: true,
    });
    proxyHealthy = false;
    assert.equal((await get()).status, 503);
    // A port already in use is reported, not fatal.
    await servers.syncServices(
      new Map([
        ['ns1/web', port],
        ['ns2/clash', port],
      ]),
    );
    assert.deepEqual(errors, [`ns2/clash:${port}`]);
    await servers.syncServices(new Map());
    await assert.rejects(fetch(`http://127.0.0.1:${port}/`));
  } finally {
    await servers.close();
  }
});

test('metrics server serves kube-proxy metric names and the proxy mode', async () => {
  const registry = new Registry();
  const m = new ProxyMetrics(registry);
  m.syncProxyRulesDuration.observe(0.05);
  m.iptablesTotal.set({ table: 'nat', ip_family: 'IPv4' }, 42);
  const srv = await listenHttp(
    { host: '127.0.0.1', port: 0 },
    metricsHandler({ registry, mode: 'iptables' }),
  );
  try {
    const text = await (await fetch(`http://127.0.0.1:${srv.port}/metrics`)).text();
    assert.match(text, /^kubeproxy_sync_proxy_rules_duration_seconds_count 1$/m);
    assert.match(
      text,
      /^kubeproxy_sync_proxy_rules_iptables_total\{table="nat",ip_family="IPv4"\} 42$/m,
    );
    assert.match(text, /kubeproxy_network_programming_duration_seconds/);
    assert.match(text, /kubeproxy_sync_proxy_rules_last_timestamp_seconds/);
    assert.equal(await (await fetch(`http://127.0.0.1:${srv.port}/proxyMode`)).text(), 'iptables');
  } finally {
    await srv.close();
  }
});
