#!/usr/bin/env bash
# api-compat.sh fails when api/openapi.yaml breaks clients of the released
# contract, api/released/openapi.yaml (make api-compat; CI runs it).
#
# The rule: a breaking change (oasdiff's error level: a path, operation,
# response field or enum value gone, a request field newly required, a type
# narrowed, ...) fails unless the same commit bumps the major of info.version
# and makes the new contract the baseline. So:
#
#   1. the majors of info.version in api/openapi.yaml and in the baseline are
#      the same (a new major ships with its baseline, and a baseline of a new
#      major with the bumped document);
#   2. `oasdiff breaking` from the baseline to api/openapi.yaml reports no
#      error;
#   3. every change of the baseline in the git history (and an uncommitted
#      one) that oasdiff finds breaking raises its major: the baseline cannot
#      be overwritten with a breaking contract of the same major.
#
# Warnings (changes that may break some clients) are printed and do not fail.
#
#   OASDIFF  an oasdiff binary to use; otherwise oasdiff OASDIFF_VERSION is
#            built from the Go module proxy into bin/tools/ once.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

OASDIFF_VERSION=v1.37.0
DOC=api/openapi.yaml
BASELINE=api/released/openapi.yaml

log() { printf 'api-compat: %s\n' "$*" >&2; }

if [[ -z ${OASDIFF:-} ]]; then
	dir="bin/tools/oasdiff-$OASDIFF_VERSION"
	OASDIFF="$PWD/$dir/oasdiff"
	for try in 1 2 3; do # a few tries, in case of a network blip
		[[ -x $OASDIFF ]] && break
		mkdir -p "$dir"
		GOBIN="$PWD/$dir" go install "github.com/oasdiff/oasdiff@$OASDIFF_VERSION" && break
		((try < 3)) || {
			log "could not build oasdiff $OASDIFF_VERSION from the Go module proxy"
			exit 1
		}
		sleep $((try * 5))
	done
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# major FILE prints the major of the document's info.version.
major() {
	local v
	v=$(awk '
		/^info:/ { inside = 1; next }
		inside && /^[^ \t#]/ { exit }
		inside && /^[ \t]+version:/ { sub(/^[ \t]+version:[ \t]*/, ""); gsub(/["\047]/, ""); print; exit }
	' "$1")
	if [[ ! $v =~ ^([0-9]+)\. ]]; then
		log "$1: info.version '$v' is not MAJOR.MINOR.PATCH"
		return 1
	fi
	printf '%s\n' "${BASH_REMATCH[1]}"
}

# breaking OLD NEW prints oasdiff's breaking changes from OLD to NEW and
# returns 1 when there is an error-level one.
breaking() {
	"$OASDIFF" breaking "$1" "$2" --fail-on ERR --allow-external-refs=false --color never
}

failed=0

# 1. The document and its baseline are of one major.
doc_major=$(major "$DOC")
base_major=$(major "$BASELINE")
if ((doc_major != base_major)); then
	log "$DOC is of major $doc_major (info.version) but the released contract $BASELINE is of major $base_major:"
	log "  a new major ships with its baseline: in the same commit, copy $DOC to $BASELINE"
	failed=1
fi

# 2. Nothing breaks the released contract.
if ! breaking "$BASELINE" "$DOC" >"$tmp/out" 2>&1; then
	cat "$tmp/out" >&2
	log "$DOC breaks clients of the released contract $BASELINE (the errors above). Either keep the"
	log "  old contract working (add, deprecate, then remove in a later major), or, in one commit, bump the"
	log "  major of info.version, copy $DOC to $BASELINE and give clients/typescript/package.json that major"
	failed=1
elif grep -qE '^(warning|error)' "$tmp/out"; then
	sed 's/^/  /' "$tmp/out" >&2
fi

# 3. The baseline only ever broke with a new major.
check_baseline_change() { # what OLD NEW
	local what=$1 old=$2 new=$3 old_major new_major
	cmp -s "$old" "$new" && return 0
	old_major=$(major "$old") || return 1
	new_major=$(major "$new") || return 1
	if ((new_major < old_major)); then
		log "$what: $BASELINE went back from major $old_major to $new_major"
		return 1
	fi
	if ((new_major == old_major)) && ! breaking "$old" "$new" >"$tmp/base-out" 2>&1; then
		cat "$tmp/base-out" >&2
		log "$what: $BASELINE was changed in a breaking way (above) without a new major: the released"
		log "  contract only breaks with a bump of info.version's major"
		return 1
	fi
}

if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && git rev-parse -q --verify HEAD >/dev/null; then
	if git cat-file -e "HEAD:$BASELINE" 2>/dev/null; then
		git show "HEAD:$BASELINE" >"$tmp/head.yaml"
		check_baseline_change "uncommitted change" "$tmp/head.yaml" "$BASELINE" || failed=1
	fi
	while read -r commit; do
		if ! git cat-file -e "$commit^:$BASELINE" 2>/dev/null; then
			continue # where the baseline was added (or history is shallow)
		fi
		git show "$commit^:$BASELINE" >"$tmp/old.yaml"
		git show "$commit:$BASELINE" >"$tmp/new.yaml"
		check_baseline_change "commit $(git rev-parse --short "$commit")" "$tmp/old.yaml" "$tmp/new.yaml" || failed=1
	done < <(git log --format=%H -- "$BASELINE")
else
	log "not a git work tree: the baseline's history is not checked"
fi

if ((failed)); then
	exit 1
fi
log "$DOC (major $doc_major) keeps the released contract $BASELINE"
