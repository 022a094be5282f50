#!/usr/bin/env bash
# Installs the Debian packages svcnet's lab, daemons and tests use, when missing (needs root;
# as another user it only says what is missing). Shared by .ci/run and scripts/lab-demo.sh.
set -euo pipefail
need=()
for pair in iptables-restore:iptables nft:nftables ip:iproute2 conntrack:conntrack unshare:util-linux \
  nsenter:util-linux dig:dnsutils curl:curl nfacct:nfacct /usr/lib/cni/ptp:containernetworking-plugins; do
  tool=${pair%%:*}
  if [ "${tool#/}" != "$tool" ]; then [ -e "$tool" ] || need+=("${pair#*:}"); continue; fi
  command -v "$tool" >/dev/null 2>&1 || need+=("${pair#*:}")
done
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "svcnet: missing packages (install as root): ${need[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
