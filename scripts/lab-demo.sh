#!/usr/bin/env bash
# The README's first command: installs what is missing, brings the lab up (1 control plane +
# 2 workers in network namespaces) with the walkthrough manifests of examples/lab, and shows
# from a Pod that `curl nginx-svc:3000/hostname` is answered by different nginx Pods and that
# the cluster DNS resolves the Service. The lab keeps running afterwards; `lab down` removes it.
#
# Needs Linux, root (it creates network namespaces) and about 1 GB of free memory. Run as
# another user, it runs itself again through sudo when there is sudo, else says what to run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    echo "svcnet lab: needs root (it creates network namespaces): running it through sudo" >&2
    # sudo resets PATH; keep ours so the same node and npm are found.
    exec sudo env "PATH=$PATH" bash "$PWD/scripts/lab-demo.sh" "$@"
  fi
  echo "svcnet lab: needs root (it creates network namespaces) and there is no sudo; as root run:" >&2
  echo "  bash $PWD/scripts/lab-demo.sh" >&2
  exit 2
fi
bash scripts/install-deps.sh lab
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run -s svcnet -- lab down >/dev/null 2>&1 || true
npm run -s svcnet -- lab up -f examples/lab
svcnet() { node build/lab/main.mjs "$@"; } # the bundle `lab up` just built: fast to start
echo
echo '$ svcnet lab exec client -- curl -s nginx-svc:3000/hostname   # six times'
for _ in 1 2 3 4 5 6; do
  svcnet lab exec client -- curl -s -m 3 nginx-svc:3000/hostname
  echo
done
echo
echo '$ svcnet lab exec client -- dig +short nginx-svc.default.svc.cluster.local'
svcnet lab exec client -- dig +short +time=3 nginx-svc.default.svc.cluster.local
echo
echo "The lab is still up: svcnet lab status | lab exec POD -- CMD | lab kubeconfig | lab down"
echo "(here svcnet is \`npm run -s svcnet --\`, or \`node build/lab/main.mjs\`: quicker to start)"
