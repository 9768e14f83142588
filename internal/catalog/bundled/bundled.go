// Package bundled is the school catalogue the service ships: a compact
// extract of public U.S. Department of Education College Scorecard and
// IPEDS files, embedded in the binaries, that `matchctl seed` loads into an
// empty catalogue. README.md in this directory names the source files,
// their years and the columns kept; Build makes the extract from the
// source files and `make catalogue` writes it.
//
// The schools are the ones `matchctl import-scorecard` would load from the
// same files imported in the order of Steps, with the same ids (UUIDv5 of
// the UNITID) and values, so a later import of fuller or newer files
// merges into them.
package bundled

import (
	"bytes"
	_ "embed"

	"github.com/collegematch/matching/internal/domain"
)

// File is the name of the compact file in this package's directory.
const File = "schools.csv.gz"

//go:embed schools.csv.gz
var compact []byte

// Description says what the bundled catalogue is, for command output.
const Description = "College Scorecard extract: Scorecard API snapshot 2023-05-24, " +
	"Scorecard API pull 2026-02-27, IPEDS ADM2022 (U.S. Department of Education, public domain)"

// Schools decodes the embedded catalogue: active schools with source
// "scorecard", in UNITID order.
func Schools() ([]domain.School, error) { return Decode(bytes.NewReader(compact)) }

// Size is the size of the embedded compact file in bytes.
func Size() int { return len(compact) }
