#!/usr/bin/env bash
# chromium.sh makes sure a headless Chromium is installed for the browser
# test (cmd/matchctl/demo_browser_test.go) and prints its path.
#
# CHROMIUM names a browser to use instead; otherwise the first of chromium,
# chromium-browser, google-chrome on the PATH is used. When there is none,
# Debian's (or Ubuntu's) chromium package is installed with apt-get, as root
# or through sudo. Browser tools' own browser downloads are never used.
set -euo pipefail

log() { printf 'chromium: %s\n' "$*" >&2; }

find_browser() {
	if [[ -n ${CHROMIUM:-} ]]; then
		command -v "$CHROMIUM" && return 0
		log "CHROMIUM=$CHROMIUM is not an executable"
		exit 1
	fi
	local name
	for name in chromium chromium-browser google-chrome; do
		command -v "$name" && return 0
	done
	return 1
}

if find_browser; then
	exit 0
fi

if ! command -v apt-get >/dev/null; then
	log "no Chromium found and no apt-get to install one; install Chromium and set CHROMIUM to its path"
	exit 1
fi
sudo=()
if ((EUID != 0)); then
	if ! command -v sudo >/dev/null; then
		log "no Chromium found; run as root (or with sudo) to install Debian's chromium package"
		exit 1
	fi
	sudo=(sudo)
fi
log "installing Debian's chromium package (apt-get)"
export DEBIAN_FRONTEND=noninteractive
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium; } >"$out" 2>&1; then
	cat "$out" >&2
	log "apt-get could not install chromium (above)"
	exit 1
fi
find_browser || {
	log "apt-get installed chromium, but no browser is on the PATH"
	exit 1
}
