#!/usr/bin/env bash
# wrk.sh makes sure wrk (the HTTP load generator the load test can drive its
# swipe scenario with, and the read-side load comparison uses) is installed,
# and prints its path. When it is not on the PATH, Debian's (or Ubuntu's)
# wrk package is installed with apt-get, as root or through sudo.
set -euo pipefail

log() { printf 'wrk: %s\n' "$*" >&2; }

if command -v wrk; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	log "wrk is not installed and there is no apt-get to install it with; install wrk"
	exit 1
fi
sudo=()
if ((EUID != 0)); then
	if ! command -v sudo >/dev/null; then
		log "wrk is not installed; run as root (or with sudo) to install Debian's wrk package"
		exit 1
	fi
	sudo=(sudo -n)
fi
log "installing Debian's wrk package (apt-get)"
"${sudo[@]}" apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends wrk >&2
command -v wrk
