package bundled

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
)

// Step is one public file the bundled catalogue is built from. Steps are
// merged in order exactly as `matchctl import-scorecard` merges files
// imported one after the other (catalog.MergeSchool: a value the file has
// replaces the one before, a value it lacks keeps it; a file without school
// names only adds to schools already loaded).
type Step struct {
	File   string // name in the data directory
	SHA256 string // hex SHA-256 of the file the committed catalogue was built from
	Why    string // what the step contributes
}

// Steps are the files of the bundled catalogue, oldest data first, so that
// the newest value of each field wins. The 2026 pull is applied twice: first
// so that its schools are in the catalogue when the IPEDS admissions file
// (which has no names and only updates loaded schools) adds their fall-2022
// SAT and ACT ranges, then again so that its admission rates, newer than
// fall 2022, are the ones kept.
var Steps = []Step{
	{File: "scorecard-latest-2023-with-mobility.tsv",
		SHA256: "a21218adf0dec0f5ec0eca4cecbe728ee9ae65136659ef89c8571d63ed46a0ed",
		Why:    "College Scorecard API snapshot of 2023-05-24: every field, for the 2,133 schools of the Opportunity Insights mobility file"},
	{File: "scorecard-api-public-nonprofit-2026pull.csv",
		SHA256: "3b54a09fcebc6e722df4adc7f93d9d621ce2801392c3ad00b46674a22b4a56eb",
		Why:    "College Scorecard API pull of 2026-02-27 (public and nonprofit two- and four-year schools): more schools, LOCALE, newer net price, completion, Pell and admission rates"},
	{File: "ipeds-adm2022-admissions.csv",
		SHA256: "25681ed9231078531c4302754119cfbf238c9de0a85488ea44d14870c347db77",
		Why:    "IPEDS ADM2022 (fall 2022): SAT and ACT 25th/75th percentiles and admission rates of schools already loaded"},
	{File: "scorecard-api-public-nonprofit-2026pull.csv",
		SHA256: "3b54a09fcebc6e722df4adc7f93d9d621ce2801392c3ad00b46674a22b4a56eb",
		Why:    "the 2026 pull again: its admission rates are newer than fall 2022's"},
}

// StepReport is what one step did.
type StepReport struct {
	Step
	Read catalog.Report
	// Added schools were new, Merged were laid over a school loaded before,
	// NotLoaded are rows of a file without names whose school no earlier
	// step loaded, Closed are loaded schools the file says have closed.
	Added, Merged, NotLoaded, Closed int
}

// ErrInputChanged is returned by Build when a file's SHA-256 is not the one
// in Steps: the README next to this file would no longer describe the
// catalogue.
var ErrInputChanged = errors.New("input file differs from the one the bundled catalogue documents")

// Build reads the files of Steps from dir and merges them. It returns the
// active schools in UNITID order and what each step did.
// With checkHashes, a file whose SHA-256 differs from Steps' is an error
// wrapping ErrInputChanged.
func Build(dir string, checkHashes bool) ([]domain.School, []StepReport, error) {
	byID := map[string]domain.School{}
	var reports []StepReport
	for _, step := range Steps {
		rep, err := applyStep(byID, filepath.Join(dir, step.File), step, checkHashes)
		if err != nil {
			return nil, nil, err
		}
		reports = append(reports, rep)
	}
	out := make([]domain.School, 0, len(byID))
	for _, s := range byID {
		if s.Active {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b domain.School) int { return int(*a.UnitID) - int(*b.UnitID) })
	return out, reports, nil
}

func applyStep(byID map[string]domain.School, path string, step Step, checkHashes bool) (StepReport, error) {
	rep := StepReport{Step: step}
	f, err := os.Open(path)
	if err != nil {
		return rep, err
	}
	defer f.Close()
	h := sha256.New()
	in := io.TeeReader(f, h)
	rd, err := catalog.NewReader(in)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	supplement := rd.Report().Supplement
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, fmt.Errorf("%s: %w", path, err)
		}
		old, ok := byID[s.ID]
		switch {
		case ok:
			s = catalog.MergeSchool(old, s)
			rep.Merged++
		case supplement:
			rep.NotLoaded++
			continue
		default:
			rep.Added++
		}
		byID[s.ID] = s
	}
	if _, err := io.Copy(io.Discard, in); err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	rep.Read = rd.Report()
	for _, id := range rep.Read.Closed {
		if s, ok := byID[id]; ok && s.Active {
			s.Active = false
			byID[id] = s
			rep.Closed++
		}
	}
	if sum := hex.EncodeToString(h.Sum(nil)); checkHashes && sum != step.SHA256 {
		return rep, fmt.Errorf("%s: SHA-256 %s, documented %s: %w", path, sum, step.SHA256, ErrInputChanged)
	}
	return rep, nil
}
