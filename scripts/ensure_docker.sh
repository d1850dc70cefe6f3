#!/usr/bin/env bash
# Make sure a Docker daemon answers. As root on a machine without one, install docker.io
# and start dockerd (no iptables, no bridge: sandbox containers run with --network none).
# Without root and without a daemon, say so and carry on: coopcode falls back to its
# process sandbox, and the Docker tests skip with that reason.
set -uo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
    echo "ensure_docker: no Docker daemon answers and we are not root; Docker tests will skip" >&2
    exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
    echo "ensure_docker: installing docker.io"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq docker.io >/dev/null
fi
if ! pgrep -x dockerd >/dev/null; then
    echo "ensure_docker: starting dockerd"
    nohup dockerd --iptables=false --ip-forward=false --bridge=none >/var/log/dockerd.log 2>&1 &
fi
for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && exit 0
    sleep 1
done
echo "ensure_docker: dockerd did not answer within 60 s (see /var/log/dockerd.log)" >&2
exit 1
