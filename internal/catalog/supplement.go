package catalog

import (
	"strings"
	"unicode"

	"github.com/collegematch/matching/internal/domain"
)

// A Supplement fills the values a main file lacks for its schools from
// another file's records of the same schools: `matchctl import-scorecard
// FILE SUPPLEMENT...` reads, for example, a Scorecard file without LOCALE
// and takes each school's LOCALE from a pull that has it. A supplement never
// replaces a value the main file has and never adds a school of its own.
//
// A main-file school is matched to the supplement's record with its UNITID;
// failing that, to the one supplement record with its normalised name, city
// and state (PlaceKey), provided that record's UNITID is not one the main
// file lists (it is then another school's record) and that no other school
// of the main file left unmatched by UNITID has the same name, city and
// state. A name shared by two records on either side matches neither: a
// wrong match would be worse than none.
type Supplement struct {
	schools  []domain.School
	byUnitID map[int32]int
	byPlace  map[string][]int
}

// NewSupplement indexes a supplementary file's schools (as read by Reader;
// a file without school names can only match by UNITID).
func NewSupplement(schools []domain.School) *Supplement {
	sp := &Supplement{
		schools:  schools,
		byUnitID: make(map[int32]int, len(schools)),
		byPlace:  make(map[string][]int, len(schools)),
	}
	for i, s := range schools {
		if s.UnitID != nil {
			if _, dup := sp.byUnitID[*s.UnitID]; !dup {
				sp.byUnitID[*s.UnitID] = i
			}
		}
		if k := PlaceKey(s.Name, s.City, s.State); k != "" {
			sp.byPlace[k] = append(sp.byPlace[k], i)
		}
	}
	return sp
}

// SupplementReport says what a Fill did.
type SupplementReport struct {
	// Schools is the number of records the supplement holds.
	Schools int
	// ByUnitID and ByPlace count the main file's schools matched by UNITID
	// and by name, city and state; Unmatched those without a match.
	ByUnitID, ByPlace, Unmatched int
	// NotAdded counts the supplement's records that matched no school of
	// the main file: they are left out.
	NotAdded int
	// Filled counts, per field, the schools whose value came from the
	// supplement (field names as in Report.DroppedValues; "sat" and "act"
	// are the 25th/75th percentile pairs).
	Filled map[string]int
}

// Fill returns schools, in order, each with the values it lacks taken from
// its match in the supplement (FillSchool). Schools without a match are
// returned as they are; no school is added. Neither schools nor the
// supplement's records are modified.
func (sp *Supplement) Fill(schools []domain.School) ([]domain.School, SupplementReport) {
	rep := SupplementReport{Schools: len(sp.schools), Filled: map[string]int{}}

	listed := make(map[int32]bool, len(schools))
	for _, s := range schools {
		if s.UnitID != nil {
			listed[*s.UnitID] = true
		}
	}
	match := make([]int, len(schools))
	unmatchedPlaces := map[string]int{}
	for i, s := range schools {
		match[i] = -1
		if s.UnitID != nil {
			if j, ok := sp.byUnitID[*s.UnitID]; ok {
				match[i] = j
				continue
			}
		}
		if k := PlaceKey(s.Name, s.City, s.State); k != "" {
			unmatchedPlaces[k]++
		}
	}
	for i, s := range schools {
		if match[i] >= 0 {
			continue
		}
		k := PlaceKey(s.Name, s.City, s.State)
		if k == "" || unmatchedPlaces[k] != 1 {
			continue
		}
		var candidates []int
		for _, j := range sp.byPlace[k] {
			if u := sp.schools[j].UnitID; u == nil || !listed[*u] {
				candidates = append(candidates, j)
			}
		}
		if len(candidates) == 1 {
			match[i] = candidates[0]
		}
	}

	used := make([]bool, len(sp.schools))
	out := make([]domain.School, len(schools))
	for i, s := range schools {
		j := match[i]
		if j < 0 {
			rep.Unmatched++
			out[i] = s
			continue
		}
		if sp.schools[j].UnitID != nil && s.UnitID != nil && *sp.schools[j].UnitID == *s.UnitID {
			rep.ByUnitID++
		} else {
			rep.ByPlace++
		}
		used[j] = true
		var filled []string
		out[i], filled = FillSchool(s, sp.schools[j])
		for _, f := range filled {
			rep.Filled[f]++
		}
	}
	for _, u := range used {
		if !u {
			rep.NotAdded++
		}
	}
	return out, rep
}

// FillSchool returns base with every value it lacks (nil, empty, unknown)
// taken from supp, and the names of the fields so filled. A value base has
// is never replaced. Values that only make sense together are filled as a
// whole, as MergeSchool takes them: the coordinates, the SAT and the ACT
// 25th/75th percentiles as pairs, the net price bands and the program
// shares as groups, the region with the state. The identity and status
// (ID, UnitID, Active, Source, UpdatedAt) are base's. Neither argument is
// modified.
func FillSchool(base, supp domain.School) (domain.School, []string) {
	out := MergeSchool(supp, base)
	out.ID, out.UnitID = base.ID, base.UnitID
	out.Active, out.Source, out.UpdatedAt = base.Active, base.Source, base.UpdatedAt
	var filled []string
	for _, f := range schoolFields {
		if !f.has(base) && f.has(out) {
			filled = append(filled, f.name)
		}
	}
	return out, filled
}

// schoolFields are the values of a school a file may carry or lack, with the
// names Report.DroppedValues uses.
var schoolFields = []struct {
	name string
	has  func(domain.School) bool
}{
	{"name", func(s domain.School) bool { return s.Name != "" }},
	{"city", func(s domain.School) bool { return s.City != "" }},
	{"state", func(s domain.School) bool { return s.State != "" }},
	{droppedZip, func(s domain.School) bool { return s.Zip != "" }},
	{"url", func(s domain.School) bool { return s.URL != "" }},
	{droppedLatLon, func(s domain.School) bool { return s.Lat != nil }},
	{droppedControl, func(s domain.School) bool { return s.Control != domain.ControlUnknown }},
	{droppedLocale, func(s domain.School) bool { return s.Locale != nil }},
	{droppedSize, func(s domain.School) bool { return s.Size != nil }},
	{droppedPredDegree, func(s domain.School) bool { return s.PredDegree != nil }},
	{droppedAdmissionRate, func(s domain.School) bool { return s.AdmissionRate != nil }},
	{"sat", func(s domain.School) bool { return s.SAT25 != nil || s.SAT75 != nil }},
	{"act", func(s domain.School) bool { return s.ACT25 != nil || s.ACT75 != nil }},
	{droppedTuitionIn, func(s domain.School) bool { return s.TuitionIn != nil }},
	{droppedTuitionOut, func(s domain.School) bool { return s.TuitionOut != nil }},
	{droppedNetPrice, func(s domain.School) bool { return s.AvgNetPrice != nil }},
	{droppedNetPriceBand, func(s domain.School) bool {
		for _, b := range s.NetPriceByBand {
			if b != nil {
				return true
			}
		}
		return false
	}},
	{droppedPell, func(s domain.School) bool { return s.PellRate != nil }},
	{droppedLoan, func(s domain.School) bool { return s.LoanRate != nil }},
	{droppedDebt, func(s domain.School) bool { return s.MedianDebt != nil }},
	{droppedGrad, func(s domain.School) bool { return s.GradRate != nil }},
	{droppedRetention, func(s domain.School) bool { return s.RetentionRate != nil }},
	{droppedEarnings6, func(s domain.School) bool { return s.Earnings6yr != nil }},
	{droppedEarnings10, func(s domain.School) bool { return s.Earnings10yr != nil }},
	{droppedPrograms, func(s domain.School) bool { return len(s.ProgramShares) > 0 }},
}

// PlaceKey is the key a school is matched by when UNITIDs do not match: its
// name and city lower-cased, "&" read as "and", apostrophes dropped, other
// punctuation as spaces and a leading "the" dropped, with the state code;
// so "Saint Mary's College of the Arts, Wilkes-Barre" and "SAINT MARYS
// COLLEGE OF THE ARTS, Wilkes Barre" match. It is "" unless name, city and
// state are all given.
func PlaceKey(name, city, state string) string {
	n, c, st := normaliseName(name), normaliseName(city), strings.ToUpper(strings.TrimSpace(state))
	if n == "" || c == "" || st == "" {
		return ""
	}
	return n + "|" + c + "|" + st
}

func normaliseName(s string) string {
	s = strings.ToLower(strings.ReplaceAll(s, "&", " and "))
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\'' || r == '\u2019':
			return -1
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			return r
		}
		return ' '
	}, s)
	words := strings.Fields(s)
	if len(words) > 1 && words[0] == "the" {
		words = words[1:]
	}
	return strings.Join(words, " ")
}
