#!/usr/bin/env bash
# Install what the sandbox's real node runs besides the kubelet (which build.sh --node builds): containerd,
# runc and the CNI plugins (bridge, host-local, loopback), from Debian's packages. Needs root. Starts nothing:
# the sandbox runs containerd itself, with its own configuration and directories (docs/sandbox.md).
#
# Usage: bash tools/controlplane/install-node.sh     (exits at once when everything is installed)
set -euo pipefail

log() { printf '[node-runtime] %s\n' "$*" >&2; }

have_all() {
  command -v containerd >/dev/null && command -v ctr >/dev/null && command -v runc >/dev/null \
    && [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]]
}

if have_all; then
  log "installed: $(containerd --version | cut -d' ' -f1-3), $(runc --version | head -1), CNI plugins in /usr/lib/cni"
  exit 0
fi
[[ $(id -u) -eq 0 ]] || { log "ERROR: installing containerd needs root (apt-get)"; exit 1; }
command -v apt-get >/dev/null || { log "ERROR: no apt-get; install containerd, runc and the CNI plugins yourself"; exit 1; }

# No service may start on install: the sandbox runs its own containerd. policy-rc.d covers sysv scripts
# (there is no systemd inside these containers).
policy=/usr/sbin/policy-rc.d
made_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod +x "$policy"
  made_policy=1
fi
trap '(( made_policy )) && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends containerd runc containernetworking-plugins >&2; then
  log "apt-get install failed; running apt-get update once and retrying"
  apt-get update >&2
  apt-get install -y --no-install-recommends containerd runc containernetworking-plugins >&2
fi
have_all || { log "ERROR: packages installed but containerd, runc or a CNI plugin is still missing"; exit 1; }
log "installed: $(containerd --version | cut -d' ' -f1-3)"
