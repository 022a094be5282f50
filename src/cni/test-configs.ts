// Network configurations for the CNI unit tests: the kindnet-style ptp config every test
// starts from (host-local IPAM on 10.244.1.0/24, a default route) as a plain JSON object that
// tests spread and override. Test support only; nothing in production imports it.

/** The kindnet-style network config (`cniVersion` and the IPAM `dataDir` vary per test). */
export function kindnetConfig(cniVersion: string, dataDir: string) {
  return {
    cniVersion,
    name: 'kindnet',
    type: 'svcnet-cni',
    ipam: {
      type: 'host-local',
      ranges: [[{ subnet: '10.244.1.0/24' }]],
      routes: [{ dst: '0.0.0.0/0' }],
      dataDir,
    },
  };
}
