package catalog_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
)

// A main file without LOCALE (API column names) and a supplement with it
// (extract column names): the supplement fills what the main file lacks, for
// the main file's schools only, matched by UNITID and, failing that, by name,
// city and state.
func TestSupplementFillsWhatTheFileLacks(t *testing.T) {
	file, fileRep := readFixture(t, "supplement-main.tsv")
	require.Equal(t, catalog.SchemeAPI, fileRep.Scheme)
	extra, extraRep := readFixture(t, "supplement-extra.csv")
	require.Equal(t, catalog.SchemeExtract, extraRep.Scheme)
	require.Len(t, file, 3)
	for _, s := range file {
		require.Nil(t, s.Locale, "the main file has no LOCALE")
	}

	got, rep := catalog.NewSupplement(extra).Fill(file)
	require.Len(t, got, 3, "no school is added")
	assert.Equal(t, []string{catalog.SchoolID(910001), catalog.SchoolID(910002), catalog.SchoolID(910003)},
		[]string{got[0].ID, got[1].ID, got[2].ID}, "the main file's schools, in its order")
	assert.Equal(t, catalog.SupplementReport{
		Schools: 3, ByUnitID: 1, ByPlace: 1, Unmatched: 1, NotAdded: 1,
		Filled: map[string]int{
			"locale": 2, "pred_degree": 2, "pell_rate": 2, "grad_rate": 2,
			"zip": 1, "lat/lon": 1, "admission_rate": 1, "avg_net_price": 1,
		},
	}, rep)

	harbor := byUnitID(t, got, 910001)
	assert.Equal(t, ptr(int16(21)), harbor.Locale, "filled: the main file lacks the column")
	assert.Equal(t, ptr(0.31), harbor.PellRate, "filled: the main file leaves it empty")
	assert.Equal(t, ptr(0.71), harbor.GradRate)
	assert.Equal(t, ptr(0.62), harbor.AdmissionRate, "the main file's value is not overwritten")
	assert.Equal(t, ptr(int32(18000)), harbor.AvgNetPrice, "not overwritten")
	assert.Equal(t, ptr(43.6591), harbor.Lat, "not overwritten")
	assert.Equal(t, ptr(-70.2568), harbor.Lon)
	assert.Equal(t, ptr(int32(8000)), harbor.Size, "the supplement has none: kept")

	// St. John's has another UNITID in the supplement (919002): matched by
	// name, city and state, it keeps its own identity.
	john := byUnitID(t, got, 910002)
	assert.Equal(t, catalog.SchoolID(910002), john.ID)
	assert.Equal(t, "St. John's College of Music & Art", john.Name, "not overwritten")
	assert.Equal(t, ptr(int16(33)), john.Locale)
	assert.Equal(t, ptr(43.0247), john.Lat)
	assert.Equal(t, ptr(-108.3801), john.Lon)
	assert.Equal(t, "82501", john.Zip)
	assert.Equal(t, ptr(0.8), john.AdmissionRate)
	assert.Equal(t, ptr(int32(21000)), john.AvgNetPrice)
	assert.Equal(t, domain.ControlNonprofit, john.Control)
	assert.Equal(t, catalog.SourceScorecard, john.Source)
	assert.True(t, john.Active)

	mesa := byUnitID(t, got, 910003)
	assert.Equal(t, file[2], mesa, "no match: unchanged")
	assert.Nil(t, mesa.Locale)

	for _, s := range got {
		assert.NotEqual(t, "Canyon Ridge College", s.Name, "a supplement school FILE does not list is not added")
	}
	again, _ := catalog.NewSupplement(extra).Fill(file)
	assert.Equal(t, got, again, "deterministic, inputs unmodified")
	assert.Nil(t, file[0].Locale, "the main file's records are not modified")
}

func TestSupplementMatching(t *testing.T) {
	school := func(unitID int32, name, city, state string) domain.School {
		return domain.School{ID: catalog.SchoolID(unitID), UnitID: ptr(unitID), Name: name, City: city, State: state,
			Active: true, Source: catalog.SourceScorecard}
	}
	withLocale := func(s domain.School, l int16) domain.School { s.Locale = ptr(l); return s }
	locales := func(schools []domain.School) []*int16 {
		out := make([]*int16, len(schools))
		for i, s := range schools {
			out[i] = s.Locale
		}
		return out
	}

	t.Run("UNITID first, then name, city and state", func(t *testing.T) {
		file := []domain.School{school(1, "Alpha College", "Aston", "AL"), school(2, "The Beta University", "Bern", "NC")}
		supp := []domain.School{
			withLocale(school(1, "Alpha College (renamed)", "Aston", "AL"), 11),
			withLocale(school(99, "BETA UNIVERSITY", "bern", "nc"), 41),
		}
		got, rep := catalog.NewSupplement(supp).Fill(file)
		assert.Equal(t, []*int16{ptr(int16(11)), ptr(int16(41))}, locales(got))
		assert.Equal(t, 1, rep.ByUnitID)
		assert.Equal(t, 1, rep.ByPlace)
		assert.Equal(t, "Alpha College", got[0].Name, "not overwritten")
	})

	t.Run("a record whose UNITID the file lists is that school's, not a namesake's", func(t *testing.T) {
		file := []domain.School{school(1, "Gamma College", "Gary", "IN"), school(2, "Gamma College", "Gary", "IN")}
		supp := []domain.School{withLocale(school(2, "Gamma College", "Gary", "IN"), 21)}
		got, rep := catalog.NewSupplement(supp).Fill(file)
		assert.Equal(t, []*int16{nil, ptr(int16(21))}, locales(got))
		assert.Equal(t, 1, rep.Unmatched)
	})

	t.Run("a name shared on either side matches nothing", func(t *testing.T) {
		file := []domain.School{school(1, "Delta College", "Dover", "DE"), school(2, "Delta College", "Dover", "DE"),
			school(3, "Echo College", "Eden", "NY")}
		supp := []domain.School{
			withLocale(school(91, "Delta College", "Dover", "DE"), 12),
			withLocale(school(93, "Echo College", "Eden", "NY"), 13),
			withLocale(school(94, "Echo College", "Eden", "NY"), 32),
		}
		got, rep := catalog.NewSupplement(supp).Fill(file)
		assert.Equal(t, []*int16{nil, nil, nil}, locales(got))
		assert.Equal(t, 3, rep.Unmatched)
		assert.Equal(t, 3, rep.NotAdded)
	})

	t.Run("the same name elsewhere is another school", func(t *testing.T) {
		file := []domain.School{school(1, "Fox College", "Fargo", "ND")}
		supp := []domain.School{withLocale(school(91, "Fox College", "Fargo", "MN"), 12),
			withLocale(school(92, "Fox College", "Fairmount", "ND"), 12)}
		got, _ := catalog.NewSupplement(supp).Fill(file)
		assert.Nil(t, got[0].Locale)
	})

	t.Run("a file without names matches by UNITID only", func(t *testing.T) {
		file := []domain.School{{ID: catalog.SchoolID(1), UnitID: ptr(int32(1)), Active: true, Source: catalog.SourceScorecard}}
		supp := []domain.School{withLocale(school(1, "Hotel College", "Hope", "AR"), 43)}
		got, rep := catalog.NewSupplement(supp).Fill(file)
		assert.Equal(t, ptr(int16(43)), got[0].Locale)
		assert.Equal(t, "Hotel College", got[0].Name, "a missing name is a missing value too")
		assert.Equal(t, 1, rep.ByUnitID)
	})
}

func TestPlaceKey(t *testing.T) {
	assert.Equal(t, catalog.PlaceKey("Saint Mary's College of the Arts", "Wilkes-Barre", "pa"),
		catalog.PlaceKey("SAINT MARYS COLLEGE OF THE ARTS", "Wilkes Barre", "PA"))
	assert.Equal(t, catalog.PlaceKey("Texas A & M University", "College Station", "TX"),
		catalog.PlaceKey("The Texas A and M University", "College  Station", "TX"))
	assert.NotEqual(t, catalog.PlaceKey("Union College", "Schenectady", "NY"),
		catalog.PlaceKey("Union College", "Schenectady", "NE"))
	assert.Empty(t, catalog.PlaceKey("Union College", "", "NY"), "no city: no key")
	assert.Empty(t, catalog.PlaceKey("", "Schenectady", "NY"))
}

// fullSchool has a value in every field.
func fullSchool(unitID int32) domain.School {
	return domain.School{
		ID: catalog.SchoolID(unitID), UnitID: ptr(unitID), Name: "Full College", City: "Fulton", State: "MO",
		Zip: "65251", URL: "full.example.edu", Lat: ptr(38.8), Lon: ptr(-91.9), Region: domain.RegionMidwest,
		Control: domain.ControlNonprofit, Locale: ptr(int16(32)), Size: ptr(int32(900)), PredDegree: ptr(int16(3)),
		AdmissionRate: ptr(0.6), SAT25: ptr(int16(1000)), SAT75: ptr(int16(1200)), ACT25: ptr(int16(20)), ACT75: ptr(int16(26)),
		TuitionIn: ptr(int32(30000)), TuitionOut: ptr(int32(30000)), AvgNetPrice: ptr(int32(20000)),
		NetPriceByBand: [domain.IncomeBands]*int32{ptr(int32(1)), ptr(int32(2)), ptr(int32(3)), ptr(int32(4)), ptr(int32(5))},
		PellRate:       ptr(0.3), LoanRate: ptr(0.5), MedianDebt: ptr(int32(20000)), GradRate: ptr(0.6),
		RetentionRate: ptr(0.8), Earnings6yr: ptr(int32(35000)), Earnings10yr: ptr(int32(45000)),
		ProgramShares: map[domain.Major]float64{"history": 0.2},
		Active:        true, Source: catalog.SourceScorecard,
	}
}

func TestFillSchool(t *testing.T) {
	t.Run("every field the base lacks is filled; identity and status stay the base's", func(t *testing.T) {
		base := domain.School{ID: catalog.SchoolID(7), UnitID: ptr(int32(7)), Active: true, Source: catalog.SourceScorecard}
		supp := fullSchool(8)
		supp.Active, supp.Source = false, "other"
		got, filled := catalog.FillSchool(base, supp)
		assert.Equal(t, base.ID, got.ID)
		assert.Equal(t, base.UnitID, got.UnitID)
		assert.True(t, got.Active)
		assert.Equal(t, catalog.SourceScorecard, got.Source)
		v := reflect.ValueOf(got)
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if name == "UpdatedAt" {
				continue
			}
			assert.False(t, v.Field(i).IsZero(), "field %s is filled", name)
		}
		assert.Len(t, filled, 25, "every field is counted: %v", filled)
	})

	t.Run("a value the base has is never replaced", func(t *testing.T) {
		base := fullSchool(7)
		got, filled := catalog.FillSchool(base, fullSchool(8))
		want := fullSchool(7)
		assert.Equal(t, want, got)
		assert.Empty(t, filled)
	})

	t.Run("pairs and groups are filled whole or not at all", func(t *testing.T) {
		base := domain.School{ID: catalog.SchoolID(7), SAT25: ptr(int16(1100)), Lat: ptr(40.0), Lon: ptr(-80.0),
			NetPriceByBand: [domain.IncomeBands]*int32{nil, ptr(int32(9))}}
		got, filled := catalog.FillSchool(base, fullSchool(8))
		assert.Equal(t, ptr(int16(1100)), got.SAT25)
		assert.Nil(t, got.SAT75, "a 75th percentile is not paired with another file's 25th")
		assert.Equal(t, ptr(40.0), got.Lat)
		assert.Equal(t, [domain.IncomeBands]*int32{nil, ptr(int32(9))}, got.NetPriceByBand)
		assert.Equal(t, ptr(int16(20)), got.ACT25)
		assert.Equal(t, ptr(int16(26)), got.ACT75)
		assert.NotContains(t, filled, "sat")
		assert.Contains(t, filled, "act")
	})

	t.Run("inputs are not modified", func(t *testing.T) {
		base := domain.School{ID: catalog.SchoolID(7)}
		supp := fullSchool(8)
		got, _ := catalog.FillSchool(base, supp)
		got.ProgramShares["history"] = 0.9
		assert.Equal(t, domain.School{ID: catalog.SchoolID(7)}, base)
		assert.Equal(t, fullSchool(8), supp)
	})
}
