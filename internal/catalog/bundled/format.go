package bundled

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
)

// The compact file is a gzip-compressed CSV: one header line naming the
// columns below, in this order, then one row per school ordered by UNITID.
// An empty cell is a value the sources do not have. Numbers are printed so
// that they read back exactly (shortest round-trip form), so a school read
// from the file equals the school that was written.
//
// The school's id is not stored: it is UUIDv5 of the UNITID
// (catalog.SchoolID), as for every imported school. Region follows from the
// state; program shares are the columns named pcip_<major key>.

// column is one column of the compact file: how a school's field is
// written and read.
type column struct {
	name string
	get  func(s *domain.School) string
	set  func(s *domain.School, v string) error
}

func textColumn(name string, f func(s *domain.School) *string) column {
	return column{name: name,
		get: func(s *domain.School) string { return *f(s) },
		set: func(s *domain.School, v string) error { *f(s) = v; return nil }}
}

func floatColumn(name string, f func(s *domain.School) **float64) column {
	return column{name: name,
		get: func(s *domain.School) string {
			if p := *f(s); p != nil {
				return strconv.FormatFloat(*p, 'f', -1, 64)
			}
			return ""
		},
		set: func(s *domain.School, v string) error {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("not a number: %q", v)
			}
			*f(s) = &x
			return nil
		}}
}

// intColumn is a column of whole numbers that must fit T.
func intColumn[T int16 | int32](name string, f func(s *domain.School) **T) column {
	bits := int(unsafe.Sizeof(T(0))) * 8
	return column{name: name,
		get: func(s *domain.School) string {
			if p := *f(s); p != nil {
				return strconv.Itoa(int(*p))
			}
			return ""
		},
		set: func(s *domain.School, v string) error {
			x, err := strconv.ParseInt(v, 10, bits)
			if err != nil {
				return fmt.Errorf("not a %d-bit integer: %q", bits, v)
			}
			y := T(x)
			*f(s) = &y
			return nil
		}}
}

// columns are the columns of the compact file, in order. The README next to
// this file says which Scorecard or IPEDS variable each one comes from.
var columns = func() []column {
	cols := []column{
		intColumn("unitid", func(s *domain.School) **int32 { return &s.UnitID }),
		textColumn("name", func(s *domain.School) *string { return &s.Name }),
		textColumn("city", func(s *domain.School) *string { return &s.City }),
		textColumn("state", func(s *domain.School) *string { return &s.State }),
		textColumn("zip", func(s *domain.School) *string { return &s.Zip }),
		textColumn("url", func(s *domain.School) *string { return &s.URL }),
		floatColumn("lat", func(s *domain.School) **float64 { return &s.Lat }),
		floatColumn("lon", func(s *domain.School) **float64 { return &s.Lon }),
		{name: "control",
			get: func(s *domain.School) string {
				if s.Control == domain.ControlUnknown {
					return ""
				}
				return strconv.Itoa(int(s.Control))
			},
			set: func(s *domain.School, v string) error {
				x, err := strconv.Atoi(v)
				if err != nil || x < 1 || x > 3 {
					return fmt.Errorf("not a control code 1-3: %q", v)
				}
				s.Control = domain.Control(x)
				return nil
			}},
		intColumn("locale", func(s *domain.School) **int16 { return &s.Locale }),
		intColumn("pred_degree", func(s *domain.School) **int16 { return &s.PredDegree }),
		intColumn("size", func(s *domain.School) **int32 { return &s.Size }),
		floatColumn("admission_rate", func(s *domain.School) **float64 { return &s.AdmissionRate }),
		intColumn("sat25", func(s *domain.School) **int16 { return &s.SAT25 }),
		intColumn("sat75", func(s *domain.School) **int16 { return &s.SAT75 }),
		intColumn("act25", func(s *domain.School) **int16 { return &s.ACT25 }),
		intColumn("act75", func(s *domain.School) **int16 { return &s.ACT75 }),
		intColumn("tuition_in", func(s *domain.School) **int32 { return &s.TuitionIn }),
		intColumn("tuition_out", func(s *domain.School) **int32 { return &s.TuitionOut }),
		intColumn("avg_net_price", func(s *domain.School) **int32 { return &s.AvgNetPrice }),
	}
	for b, name := range []string{"net_price_0_30k", "net_price_30_48k", "net_price_48_75k", "net_price_75_110k", "net_price_110k_plus"} {
		cols = append(cols, intColumn(name, func(s *domain.School) **int32 { return &s.NetPriceByBand[b] }))
	}
	cols = append(cols,
		floatColumn("pell_rate", func(s *domain.School) **float64 { return &s.PellRate }),
		floatColumn("loan_rate", func(s *domain.School) **float64 { return &s.LoanRate }),
		intColumn("median_debt", func(s *domain.School) **int32 { return &s.MedianDebt }),
		floatColumn("grad_rate", func(s *domain.School) **float64 { return &s.GradRate }),
		floatColumn("retention_rate", func(s *domain.School) **float64 { return &s.RetentionRate }),
		intColumn("earnings_6yr", func(s *domain.School) **int32 { return &s.Earnings6yr }),
		intColumn("earnings_10yr", func(s *domain.School) **int32 { return &s.Earnings10yr }),
	)
	for _, m := range domain.Majors {
		cols = append(cols, column{name: "pcip_" + string(m.Key),
			get: func(s *domain.School) string {
				if v, ok := s.ProgramShares[m.Key]; ok {
					return strconv.FormatFloat(v, 'f', -1, 64)
				}
				return ""
			},
			set: func(s *domain.School, v string) error {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || !(x >= 0 && x <= 1) {
					return fmt.Errorf("not a share 0-1: %q", v)
				}
				if s.ProgramShares == nil {
					s.ProgramShares = map[domain.Major]float64{}
				}
				s.ProgramShares[m.Key] = x
				return nil
			}})
	}
	return cols
}()

// header is the first line of the compact file.
func header() []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = c.name
	}
	return out
}

// Encode writes schools as the compact file (gzip, best compression, no
// name or time in the gzip header, so the same schools give the same
// bytes). Schools are written in UNITID order; each must have a UNITID.
func Encode(w io.Writer, schools []domain.School) error {
	sorted := slices.Clone(schools)
	for _, s := range sorted {
		if s.UnitID == nil {
			return fmt.Errorf("school %q has no UNITID", s.Name)
		}
	}
	slices.SortFunc(sorted, func(a, b domain.School) int { return int(*a.UnitID) - int(*b.UnitID) })
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(zw)
	if err := cw.Write(header()); err != nil {
		return err
	}
	row := make([]string, len(columns))
	for i := range sorted {
		for k, c := range columns {
			row[k] = c.get(&sorted[i])
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return zw.Close()
}

// Decode reads a compact file back into schools: active, source
// "scorecard", id UUIDv5 of the UNITID, region from the state. Any cell
// that does not parse is an error naming its row and column: the file is
// built by this package, so a bad cell means a broken build.
func Decode(r io.Reader) ([]domain.School, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("bundled catalogue: %w", err)
	}
	defer zr.Close()
	cr := csv.NewReader(bufio.NewReader(zr))
	cr.FieldsPerRecord = len(columns)
	got, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("bundled catalogue: header: %w", err)
	}
	if want := header(); !slices.Equal(got, want) {
		return nil, fmt.Errorf("bundled catalogue: header %q, want %q", strings.Join(got, ","), strings.Join(want, ","))
	}
	var out []domain.School
	seen := map[int32]bool{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bundled catalogue: %w", err)
		}
		s := domain.School{Active: true, Source: catalog.SourceScorecard}
		for k, c := range columns {
			if rec[k] == "" {
				continue
			}
			if err := c.set(&s, rec[k]); err != nil {
				return nil, fmt.Errorf("bundled catalogue: line %d, column %s: %w", line, c.name, err)
			}
		}
		if s.UnitID == nil || s.Name == "" {
			return nil, fmt.Errorf("bundled catalogue: line %d: a school needs a unitid and a name", line)
		}
		if seen[*s.UnitID] {
			return nil, fmt.Errorf("bundled catalogue: line %d: UNITID %d repeated", line, *s.UnitID)
		}
		seen[*s.UnitID] = true
		st, ok := domain.LookupState(s.State)
		if !ok {
			return nil, fmt.Errorf("bundled catalogue: line %d: state %q is not one of the 50 states and DC", line, s.State)
		}
		s.Region = st.Region
		s.ID = catalog.SchoolID(*s.UnitID)
		out = append(out, s)
	}
}
