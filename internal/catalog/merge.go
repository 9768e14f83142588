package catalog

import (
	"maps"

	"github.com/collegematch/matching/internal/domain"
)

// MergeSchool lays a newly read record over the stored one, so that a file
// that lacks a field does not erase what an earlier import provided: every
// value new has wins, every value new lacks (nil, empty, unknown) is kept
// from old. Values that only make sense together come from one source: the
// SAT and ACT 25th/75th percentiles and the coordinates are taken as pairs,
// the net price bands and the program shares as a whole. Active, Source and
// UpdatedAt are new's. Neither argument is modified.
func MergeSchool(old, new domain.School) domain.School {
	out := old
	out.ID = mergeString(new.ID, old.ID)
	out.UnitID = mergePtr(new.UnitID, old.UnitID)
	out.Name = mergeString(new.Name, old.Name)
	out.City = mergeString(new.City, old.City)
	out.State = mergeString(new.State, old.State)
	out.Zip = mergeString(new.Zip, old.Zip)
	out.URL = mergeString(new.URL, old.URL)
	if new.Lat != nil || new.Lon != nil {
		out.Lat, out.Lon = new.Lat, new.Lon
	}
	if new.Region != "" {
		out.Region = new.Region
	}
	if new.Control != domain.ControlUnknown {
		out.Control = new.Control
	}
	out.Locale = mergePtr(new.Locale, old.Locale)
	out.Size = mergePtr(new.Size, old.Size)
	out.PredDegree = mergePtr(new.PredDegree, old.PredDegree)

	out.AdmissionRate = mergePtr(new.AdmissionRate, old.AdmissionRate)
	if new.SAT25 != nil || new.SAT75 != nil {
		out.SAT25, out.SAT75 = new.SAT25, new.SAT75
	}
	if new.ACT25 != nil || new.ACT75 != nil {
		out.ACT25, out.ACT75 = new.ACT25, new.ACT75
	}

	out.TuitionIn = mergePtr(new.TuitionIn, old.TuitionIn)
	out.TuitionOut = mergePtr(new.TuitionOut, old.TuitionOut)
	out.AvgNetPrice = mergePtr(new.AvgNetPrice, old.AvgNetPrice)
	for _, b := range new.NetPriceByBand {
		if b != nil {
			out.NetPriceByBand = new.NetPriceByBand
			break
		}
	}

	out.PellRate = mergePtr(new.PellRate, old.PellRate)
	out.LoanRate = mergePtr(new.LoanRate, old.LoanRate)
	out.MedianDebt = mergePtr(new.MedianDebt, old.MedianDebt)
	out.GradRate = mergePtr(new.GradRate, old.GradRate)
	out.RetentionRate = mergePtr(new.RetentionRate, old.RetentionRate)
	out.Earnings6yr = mergePtr(new.Earnings6yr, old.Earnings6yr)
	out.Earnings10yr = mergePtr(new.Earnings10yr, old.Earnings10yr)

	if len(new.ProgramShares) > 0 {
		out.ProgramShares = maps.Clone(new.ProgramShares)
	} else {
		out.ProgramShares = maps.Clone(old.ProgramShares)
	}

	out.Active = new.Active
	out.Source = mergeString(new.Source, old.Source)
	if !new.UpdatedAt.IsZero() {
		out.UpdatedAt = new.UpdatedAt
	}
	return out
}

func mergeString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func mergePtr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}
