package catalog_test

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
)

func readFixture(t *testing.T, name string) ([]domain.School, catalog.Report) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	schools, rep, err := catalog.ReadAll(f)
	require.NoError(t, err)
	return schools, rep
}

func byUnitID(t *testing.T, schools []domain.School, unitID int32) domain.School {
	t.Helper()
	for _, s := range schools {
		if s.UnitID != nil && *s.UnitID == unitID {
			return s
		}
	}
	require.Failf(t, "school not loaded", "UNITID %d", unitID)
	return domain.School{}
}

func ptr[T any](v T) *T { return &v }

func TestReadBulkCSV(t *testing.T) {
	schools, rep := readFixture(t, "bulk.csv")

	assert.Equal(t, catalog.SchemeBulk, rep.Scheme)
	assert.Equal(t, ',', rep.Delimiter)
	assert.False(t, rep.Supplement)
	assert.Equal(t, 12, rep.Read)
	assert.Equal(t, 5, rep.Loaded)
	assert.Len(t, schools, 5)
	assert.Equal(t, map[string]int{
		catalog.SkipBadUnitID:    2,
		catalog.SkipNoName:       1,
		catalog.SkipState:        1,
		catalog.SkipNotOperating: 1,
		catalog.SkipDuplicate:    1,
		catalog.SkipMalformed:    1,
	}, rep.Skipped)
	assert.Equal(t, rep.Read, rep.Loaded+rep.SkippedTotal(), "every row is loaded or skipped")
	assert.Equal(t, map[string]int{
		"admission_rate": 1, "sat25": 1, "act25": 1, "pell_rate": 1, "lat/lon": 1, "locale": 1, "control": 1, "zip": 1,
	}, rep.DroppedValues)
	assert.Equal(t, []string{catalog.SchoolID(900005)}, rep.Closed)

	lake := byUnitID(t, schools, 900001)
	assert.Equal(t, catalog.SchoolID(900001), lake.ID)
	assert.Equal(t, "Lakeview State University", lake.Name, "the first of two rows with one UNITID wins")
	assert.Equal(t, "Lakeview", lake.City)
	assert.Equal(t, "OH", lake.State)
	assert.Equal(t, domain.RegionMidwest, lake.Region)
	assert.Equal(t, "43210-1234", lake.Zip)
	assert.Equal(t, "www.lakeview.example.edu", lake.URL)
	assert.Equal(t, ptr(40.0012), lake.Lat)
	assert.Equal(t, ptr(-83.0155), lake.Lon)
	assert.Equal(t, domain.ControlPublic, lake.Control)
	assert.Equal(t, ptr(int16(12)), lake.Locale)
	assert.Equal(t, ptr(int16(3)), lake.PredDegree)
	assert.Equal(t, ptr(int32(25000)), lake.Size)
	assert.Equal(t, ptr(0.55), lake.AdmissionRate)
	assert.Equal(t, ptr(int16(520+530)), lake.SAT25, "combined SAT is reading + math")
	assert.Equal(t, ptr(int16(620+650)), lake.SAT75)
	assert.Equal(t, ptr(int16(22)), lake.ACT25)
	assert.Equal(t, ptr(int16(28)), lake.ACT75)
	assert.Equal(t, ptr(int32(11000)), lake.TuitionIn)
	assert.Equal(t, ptr(int32(32000)), lake.TuitionOut)
	assert.Equal(t, ptr(int32(15000)), lake.AvgNetPrice)
	assert.Equal(t, [domain.IncomeBands]*int32{ptr(int32(9000)), ptr(int32(11000)), ptr(int32(14000)), ptr(int32(18000)), ptr(int32(21000))}, lake.NetPriceByBand)
	assert.Equal(t, ptr(0.31), lake.PellRate)
	assert.Equal(t, ptr(0.45), lake.LoanRate)
	assert.Equal(t, ptr(int32(21000)), lake.MedianDebt)
	assert.Equal(t, ptr(0.78), lake.GradRate)
	assert.Equal(t, ptr(0.86), lake.RetentionRate)
	assert.Equal(t, ptr(int32(41000)), lake.Earnings6yr)
	assert.Equal(t, ptr(int32(55000)), lake.Earnings10yr)
	assert.Equal(t, map[domain.Major]float64{"computer": 0.12, "engineering": 0.08, "business_marketing": 0.2}, lake.ProgramShares)
	assert.True(t, lake.Active)
	assert.Equal(t, catalog.SourceScorecard, lake.Source)

	// NULL, PrivacySuppressed, PS and empty cells are unknown, never zero.
	hill := byUnitID(t, schools, 900002)
	assert.Equal(t, "Hillcrest College, Arts & Sciences", hill.Name, "quoted field with a comma")
	assert.Equal(t, "05401", hill.Zip, "leading zero restored")
	assert.Equal(t, domain.ControlNonprofit, hill.Control)
	assert.Equal(t, domain.RegionNortheast, hill.Region)
	assert.Nil(t, hill.AdmissionRate)
	assert.Nil(t, hill.SAT25)
	assert.Nil(t, hill.ACT25)
	assert.Nil(t, hill.PellRate)
	assert.Nil(t, hill.MedianDebt)
	assert.Nil(t, hill.Earnings6yr)
	assert.Equal(t, ptr(int32(60000)), hill.Earnings10yr)
	assert.Equal(t, ptr(int32(28000)), hill.AvgNetPrice, "NPT4_PRIV when NPT4_PUB is NULL")
	assert.Equal(t, ptr(int32(31000)), hill.NetPriceByBand[domain.IncomeBand75to110k])
	assert.Equal(t, ptr(0.64), hill.GradRate)
	assert.Equal(t, 0.0, hill.ProgramShares["engineering"], "a 0 share is a value")
	assert.Contains(t, hill.ProgramShares, domain.Major("engineering"))

	harbor := byUnitID(t, schools, 900003)
	assert.Equal(t, ptr(0.32), harbor.GradRate, "C150_L4 when C150_4 is NULL")
	assert.Nil(t, harbor.AdmissionRate, "NA is missing")
	assert.Equal(t, "", harbor.URL)

	// Out-of-range values are dropped, the row is kept.
	odd := byUnitID(t, schools, 900010)
	assert.Equal(t, "Out Of Range University", odd.Name)
	assert.Nil(t, odd.AdmissionRate)
	assert.Nil(t, odd.SAT25)
	assert.Equal(t, ptr(int16(700+790)), odd.SAT75)
	assert.Nil(t, odd.ACT25)
	assert.Equal(t, ptr(int16(33)), odd.ACT75)
	assert.Nil(t, odd.PellRate)
	assert.Nil(t, odd.Lat)
	assert.Nil(t, odd.Lon)
	assert.Nil(t, odd.Locale)
	assert.Equal(t, domain.ControlUnknown, odd.Control)
	assert.Equal(t, ptr(int32(30000)), odd.Size)

	// Numbers printed as floats, lower-case state.
	dc := byUnitID(t, schools, 900012)
	assert.Equal(t, "DC", dc.State)
	assert.Equal(t, domain.RegionSouth, dc.Region)
	assert.Equal(t, "", dc.Zip, "a six-digit ZIP is dropped")
	assert.Equal(t, ptr(int16(11)), dc.Locale)
	assert.Equal(t, ptr(int32(1234)), dc.Size)
	assert.Equal(t, ptr(int16(1370)), dc.SAT25)
	assert.Equal(t, ptr(int16(1530)), dc.SAT75)
	assert.Equal(t, ptr(int32(30500)), dc.AvgNetPrice)
	assert.Equal(t, ptr(0.931235), dc.GradRate, "shares are kept to six decimals")
}

// toTSV rewrites a CSV file with tabs, the way a spreadsheet export would.
func toTSV(t *testing.T, csvPath string) []byte {
	t.Helper()
	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	require.NoError(t, err)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Comma = '\t'
	require.NoError(t, w.WriteAll(recs))
	return buf.Bytes()
}

func TestCSVAndTSVReadTheSame(t *testing.T) {
	fromCSV, csvRep := readFixture(t, "bulk.csv")
	fromTSV, tsvRep, err := catalog.ReadAll(bytes.NewReader(toTSV(t, filepath.Join("testdata", "bulk.csv"))))
	require.NoError(t, err)
	assert.Equal(t, '\t', tsvRep.Delimiter)
	assert.Equal(t, fromCSV, fromTSV)
	csvRep.Delimiter = '\t'
	assert.Equal(t, csvRep, tsvRep)
}

func TestReadAPITSV(t *testing.T) {
	schools, rep := readFixture(t, "api.tsv")

	assert.Equal(t, catalog.SchemeAPI, rep.Scheme)
	assert.Equal(t, '\t', rep.Delimiter)
	assert.Equal(t, 5, rep.Read)
	assert.Equal(t, 3, rep.Loaded)
	assert.Equal(t, map[string]int{catalog.SkipNotOperating: 1, catalog.SkipState: 1}, rep.Skipped)
	assert.Empty(t, rep.DroppedValues)
	assert.Equal(t, []string{catalog.SchoolID(910004)}, rep.Closed)

	river := byUnitID(t, schools, 910001)
	assert.Equal(t, "Riverbend University", river.Name, "school.name, not the joined name column")
	assert.Equal(t, "MN", river.State, "school.state, not the joined state column")
	assert.Equal(t, domain.RegionMidwest, river.Region)
	assert.Equal(t, "55455-0213", river.Zip)
	assert.Equal(t, domain.ControlPublic, river.Control, "from the type column")
	assert.Equal(t, ptr(0.7301), river.AdmissionRate)
	assert.Equal(t, ptr(int16(1200)), river.SAT25)
	assert.Equal(t, ptr(int16(1420)), river.SAT75)
	assert.Equal(t, ptr(int16(25)), river.ACT25)
	assert.Equal(t, ptr(int16(31)), river.ACT75)
	assert.Equal(t, ptr(int32(31000)), river.Size)
	assert.Equal(t, ptr(int32(16500)), river.AvgNetPrice)
	assert.Equal(t, [domain.IncomeBands]*int32{ptr(int32(11000)), ptr(int32(12500)), ptr(int32(15500)), ptr(int32(19500)), ptr(int32(23000))},
		river.NetPriceByBand, `the 75-110k band comes from the misspelt "750001-111000" key`)
	assert.Equal(t, ptr(0.2212), river.PellRate)
	assert.Equal(t, ptr(0.3901), river.LoanRate)
	assert.Equal(t, ptr(int32(23250)), river.MedianDebt)
	assert.Equal(t, ptr(0.8312), river.GradRate)
	assert.Equal(t, ptr(int32(44500)), river.Earnings6yr)
	assert.Equal(t, ptr(int32(61200)), river.Earnings10yr)
	assert.Equal(t, map[domain.Major]float64{"computer": 0.0987, "engineering": 0.1203, "history": 0.0151}, river.ProgramShares)
	assert.Equal(t, ptr(int16(3)), river.PredDegree)

	maple := byUnitID(t, schools, 910002)
	assert.Equal(t, domain.ControlNonprofit, maple.Control)
	assert.Nil(t, maple.AdmissionRate, "empty cell")
	assert.Nil(t, maple.SAT25, "reading without math gives no combined score")
	assert.Nil(t, maple.SAT75)
	assert.Nil(t, maple.NetPriceByBand[domain.IncomeBand30to48k])
	assert.Equal(t, ptr(int32(45000)), maple.NetPriceByBand[domain.IncomeBand110kPlus])

	sun := byUnitID(t, schools, 910003)
	assert.Equal(t, domain.ControlForProfit, sun.Control)
	assert.Equal(t, "85004-9999", sun.Zip)
	assert.Nil(t, sun.Lat)
	assert.True(t, sun.Active, "an empty operating flag does not mean closed")
}

func TestReadAPILatestPrefixedCSV(t *testing.T) {
	schools, rep := readFixture(t, "api-latest.csv")

	assert.Equal(t, catalog.SchemeAPI, rep.Scheme)
	assert.Equal(t, ',', rep.Delimiter)
	assert.Equal(t, 2, rep.Loaded)
	assert.Empty(t, rep.Skipped)

	north := byUnitID(t, schools, 930001)
	assert.Equal(t, "Northfield Public University", north.Name, "byte order mark and latest. prefix are ignored")
	assert.Equal(t, domain.ControlPublic, north.Control, "from school.ownership")
	assert.Equal(t, ptr(int16(13)), north.Locale)
	assert.Equal(t, ptr(int32(14000)), north.AvgNetPrice)
	assert.Equal(t, ptr(int32(8000)), north.NetPriceByBand[domain.IncomeBand0to30k])
	assert.Equal(t, ptr(int32(17000)), north.NetPriceByBand[domain.IncomeBand75to110k])
	assert.Equal(t, ptr(0.88), north.RetentionRate)

	south := byUnitID(t, schools, 930002)
	assert.Equal(t, domain.ControlNonprofit, south.Control)
	assert.Equal(t, ptr(int32(29000)), south.AvgNetPrice, "private figure when the public one is NULL")
	assert.Equal(t, ptr(int32(21000)), south.NetPriceByBand[domain.IncomeBand0to30k])
	assert.Equal(t, ptr(int32(30000)), south.NetPriceByBand[domain.IncomeBand75to110k])
	assert.Nil(t, south.AdmissionRate)
}

func TestReadProcessedExtract(t *testing.T) {
	schools, rep := readFixture(t, "extract.csv")

	assert.Equal(t, catalog.SchemeExtract, rep.Scheme)
	assert.Equal(t, 4, rep.Read)
	assert.Equal(t, 3, rep.Loaded)
	assert.Equal(t, map[string]int{catalog.SkipState: 1}, rep.Skipped)
	assert.Empty(t, rep.DroppedValues)

	prairie := byUnitID(t, schools, 920001)
	assert.Equal(t, "Prairie State University", prairie.Name)
	assert.Equal(t, ptr(int16(13)), prairie.Locale)
	assert.Equal(t, domain.SettingCity, domain.SettingFromLocale(int(*prairie.Locale)))
	assert.Equal(t, domain.ControlPublic, prairie.Control)
	assert.Equal(t, ptr(0.91), prairie.AdmissionRate)
	assert.Equal(t, ptr(0.2901), prairie.PellRate)
	assert.Equal(t, ptr(0.6204), prairie.GradRate)
	assert.Equal(t, ptr(int32(12500)), prairie.AvgNetPrice)
	assert.Equal(t, ptr(38.9543), prairie.Lat)
	assert.Nil(t, prairie.Earnings6yr, "median_earnings of the extract is not read")
	assert.Nil(t, prairie.Earnings10yr)
	assert.Nil(t, prairie.SAT25)
	assert.Empty(t, prairie.ProgramShares)

	bay := byUnitID(t, schools, 920002)
	assert.Equal(t, ptr(int32(24000)), bay.AvgNetPrice, "net_price_priv")
	assert.Equal(t, domain.ControlNonprofit, bay.Control)

	delta := byUnitID(t, schools, 920003)
	assert.Equal(t, ptr(0.2933), delta.GradRate, "cc_completion_rate when there is no 4-year rate")
	assert.Nil(t, delta.AdmissionRate)
	assert.Equal(t, ptr(int16(2)), delta.PredDegree)
}

func TestReadAdmissionsSupplement(t *testing.T) {
	schools, rep := readFixture(t, "adm-supplement.csv")

	assert.True(t, rep.Supplement)
	assert.Equal(t, 3, rep.Loaded)
	assert.Equal(t, map[string]int{"admission_rate": 1}, rep.DroppedValues, "150 admitted of 100 applicants")

	lake := byUnitID(t, schools, 900001)
	assert.Equal(t, "", lake.Name)
	assert.Equal(t, ptr(0.45), lake.AdmissionRate, "admitted / applicants")
	assert.Equal(t, ptr(int16(1070)), lake.SAT25)
	assert.Equal(t, ptr(int16(1290)), lake.SAT75)
	assert.Nil(t, byUnitID(t, schools, 900002).AdmissionRate, "no applicants gives no rate")
}

func TestMissingValueSpellings(t *testing.T) {
	for _, cell := range []string{"", "NULL", "null", "PS", "PrivacySuppressed", "NA", "NaN", " NULL "} {
		t.Run(cell, func(t *testing.T) {
			in := "UNITID,INSTNM,STABBR,ADM_RATE,UGDS\n900100,Test College,NY," + cell + "," + cell + "\n"
			schools, rep, err := catalog.ReadAll(strings.NewReader(in))
			require.NoError(t, err)
			require.Len(t, schools, 1)
			assert.Nil(t, schools[0].AdmissionRate)
			assert.Nil(t, schools[0].Size)
			assert.Empty(t, rep.DroppedValues, "a missing value is not a dropped value")
		})
	}
	t.Run("garbage is dropped and counted", func(t *testing.T) {
		in := "UNITID,INSTNM,STABBR,ADM_RATE,UGDS\n900100,Test College,NY,about half,-5\n"
		schools, rep, err := catalog.ReadAll(strings.NewReader(in))
		require.NoError(t, err)
		require.Len(t, schools, 1)
		assert.Nil(t, schools[0].AdmissionRate)
		assert.Nil(t, schools[0].Size)
		assert.Equal(t, map[string]int{"admission_rate": 1, "size": 1}, rep.DroppedValues)
	})
}

func TestReaderRejectsUnknownHeaders(t *testing.T) {
	for name, in := range map[string]string{
		"empty":          "",
		"unknown":        "foo,bar\n1,2\n",
		"names no state": "UNITID,INSTNM\n1,A\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := catalog.NewReader(strings.NewReader(in))
			assert.Error(t, err)
		})
	}
}

func TestSchoolIDIsStable(t *testing.T) {
	// These ids are stored with swipes and cached by clients: they must never change.
	assert.Equal(t, "6d153ac2-af7c-587e-a708-5af5ecc008ca", catalog.SchoolID(100654))
	id, err := uuid.Parse(catalog.SchoolID(100654))
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(5), id.Version())
	assert.NotEqual(t, catalog.SchoolID(100654), catalog.SchoolID(100655))

	// The same UNITID gets the same id whichever file and scheme it comes from.
	bulk, _, err := catalog.ReadAll(strings.NewReader("UNITID,INSTNM,STABBR\n100654,A,AL\n"))
	require.NoError(t, err)
	api, _, err := catalog.ReadAll(strings.NewReader("id\tschool.name\tschool.state\n100654.0\tA\tAL\n"))
	require.NoError(t, err)
	extract, _, err := catalog.ReadAll(strings.NewReader(",id,school_name,state\n0,100654,A,AL\n"))
	require.NoError(t, err)
	for _, got := range [][]domain.School{bulk, api, extract} {
		require.Len(t, got, 1)
		assert.Equal(t, catalog.SchoolID(100654), got[0].ID)
	}
}

func TestMergeSchool(t *testing.T) {
	updated := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old := domain.School{
		ID: catalog.SchoolID(1), UnitID: ptr(int32(1)), Name: "Old Name", City: "Oldtown", State: "OH",
		Zip: "43210", URL: "old.example.edu", Lat: ptr(40.0), Lon: ptr(-83.0), Region: domain.RegionMidwest,
		Control: domain.ControlPublic, Size: ptr(int32(1000)), AdmissionRate: ptr(0.5),
		SAT25: ptr(int16(1000)), SAT75: ptr(int16(1200)), ACT25: ptr(int16(20)), ACT75: ptr(int16(26)),
		AvgNetPrice: ptr(int32(15000)), Earnings10yr: ptr(int32(50000)),
		NetPriceByBand: [domain.IncomeBands]*int32{ptr(int32(1)), ptr(int32(2)), ptr(int32(3)), ptr(int32(4)), ptr(int32(5))},
		ProgramShares:  map[domain.Major]float64{"computer": 0.2, "history": 0.1},
		Active:         false, Source: catalog.SourceScorecard, UpdatedAt: updated,
	}

	t.Run("new values win, missing values keep the old ones", func(t *testing.T) {
		nw := domain.School{
			ID: old.ID, UnitID: old.UnitID, Name: "New Name", State: "OH", Region: domain.RegionMidwest,
			Locale: ptr(int16(12)), AdmissionRate: ptr(0.4), GradRate: ptr(0.7),
			Active: true, Source: catalog.SourceScorecard,
		}
		got := catalog.MergeSchool(old, nw)
		assert.Equal(t, "New Name", got.Name)
		assert.Equal(t, "Oldtown", got.City)
		assert.Equal(t, "43210", got.Zip)
		assert.Equal(t, "old.example.edu", got.URL)
		assert.Equal(t, ptr(40.0), got.Lat)
		assert.Equal(t, domain.ControlPublic, got.Control, "unknown control keeps the old one")
		assert.Equal(t, ptr(int16(12)), got.Locale)
		assert.Equal(t, ptr(0.4), got.AdmissionRate)
		assert.Equal(t, ptr(0.7), got.GradRate)
		assert.Equal(t, ptr(int16(1000)), got.SAT25, "a file without SAT keeps the stored SAT")
		assert.Equal(t, ptr(int16(1200)), got.SAT75)
		assert.Equal(t, ptr(int32(15000)), got.AvgNetPrice)
		assert.Equal(t, ptr(int32(50000)), got.Earnings10yr)
		assert.Equal(t, old.NetPriceByBand, got.NetPriceByBand)
		assert.Equal(t, old.ProgramShares, got.ProgramShares)
		assert.True(t, got.Active, "a school found in a file is active again")
		assert.Equal(t, updated, got.UpdatedAt)
	})

	t.Run("pairs and groups come from one source", func(t *testing.T) {
		nw := domain.School{
			ID: old.ID, SAT25: ptr(int16(1100)), ACT75: ptr(int16(30)), Lat: ptr(41.0), Lon: ptr(-84.0),
			NetPriceByBand: [domain.IncomeBands]*int32{nil, ptr(int32(20))},
			ProgramShares:  map[domain.Major]float64{"engineering": 0.3},
		}
		got := catalog.MergeSchool(old, nw)
		assert.Equal(t, ptr(int16(1100)), got.SAT25)
		assert.Nil(t, got.SAT75, "a new 25th percentile is not paired with an old 75th")
		assert.Nil(t, got.ACT25)
		assert.Equal(t, ptr(int16(30)), got.ACT75)
		assert.Equal(t, ptr(41.0), got.Lat)
		assert.Equal(t, ptr(-84.0), got.Lon)
		assert.Equal(t, [domain.IncomeBands]*int32{nil, ptr(int32(20))}, got.NetPriceByBand)
		assert.Equal(t, map[domain.Major]float64{"engineering": 0.3}, got.ProgramShares)
	})

	t.Run("inputs are not modified", func(t *testing.T) {
		nw := domain.School{ID: old.ID, ProgramShares: map[domain.Major]float64{"health": 1}}
		got := catalog.MergeSchool(old, nw)
		got.ProgramShares["computer"] = 0.9
		assert.Equal(t, map[domain.Major]float64{"computer": 0.2, "history": 0.1}, old.ProgramShares)
		assert.Equal(t, map[domain.Major]float64{"health": 1}, nw.ProgramShares)
	})

	t.Run("merging a record with itself changes nothing", func(t *testing.T) {
		assert.Equal(t, old, catalog.MergeSchool(old, old))
	})
}
