// Package catalog builds the school catalogue: it reads U.S. Department of
// Education College Scorecard institution files into domain.School records.
// It does no I/O beyond the reader it is given; loading into PostgreSQL is
// the caller's job.
package catalog

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
)

// UnitIDNamespace is the UUIDv5 namespace of school ids: a school's id is
// UUIDv5(UnitIDNamespace, decimal UNITID), so it is the same in every import
// and every file. Never change it: swipes and client caches refer to these ids.
var UnitIDNamespace = uuid.MustParse("9b1d107d-a29f-483d-9e1b-bf9395b38a81")

// SchoolID is the stable school UUID of an IPEDS UNITID.
func SchoolID(unitID int32) string {
	return uuid.NewSHA1(UnitIDNamespace, []byte(strconv.FormatInt(int64(unitID), 10))).String()
}

// SourceScorecard is the School.Source of schools loaded from Scorecard files.
const SourceScorecard = "scorecard"

// Scheme is the column-naming scheme of a Scorecard file.
type Scheme string

const (
	// SchemeBulk is the bulk download (Most-Recent-Cohorts-Institution.csv)
	// and IPEDS variable names: UNITID, INSTNM, STABBR, ADM_RATE, PCIP11, ...
	SchemeBulk Scheme = "bulk"
	// SchemeAPI is the Scorecard API's dotted field names: id, school.name,
	// admissions.admission_rate.overall, ...; a "latest." prefix is ignored.
	SchemeAPI Scheme = "api"
	// SchemeExtract is a processed API extract with snake_case names: id,
	// school_name, admit_rate, net_price_pub, ...
	SchemeExtract Scheme = "extract"
)

// Reasons a row is skipped.
const (
	SkipBadUnitID    = "missing or invalid UNITID"
	SkipNoName       = "no name"
	SkipState        = "state not one of the 50 states and DC"
	SkipNotOperating = "not operating"
	SkipDuplicate    = "duplicate UNITID in file"
	SkipMalformed    = "malformed row"
)

// Report says what a read did. Read counts data rows; every row is either
// loaded or skipped for one reason. DroppedValues counts values that were
// present but invalid or out of range, by school field; such a value is
// left unknown and the rest of the row is kept.
type Report struct {
	Scheme    Scheme
	Delimiter rune
	// Supplement is true for a file without school names (for example an
	// IPEDS ADM admissions file): its rows can only add to schools already
	// in the catalogue.
	Supplement    bool
	Read          int
	Loaded        int
	Skipped       map[string]int
	DroppedValues map[string]int
	// Closed lists the ids of schools the file says are no longer operating.
	Closed []string
}

// SkippedTotal is the number of skipped rows.
func (r Report) SkippedTotal() int { return totalCount(r.Skipped) }

// DroppedTotal is the number of dropped values.
func (r Report) DroppedTotal() int { return totalCount(r.DroppedValues) }

func totalCount(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Reader streams schools out of a Scorecard CSV or TSV file.
type Reader struct {
	csv   *csv.Reader
	width int
	cols  scorecardColumns
	seen  map[int32]bool
	rep   Report
}

// NewReader reads the header line, detects the delimiter (tab or comma) and
// the naming scheme, and returns a Reader positioned at the first data row.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	headerLine, err := br.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && headerLine != "") {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file: no header line")
		}
		return nil, fmt.Errorf("read header: %w", err)
	}
	headerLine = strings.TrimPrefix(headerLine, "\ufeff")
	delim := detectDelimiter(headerLine)
	cr := csv.NewReader(io.MultiReader(strings.NewReader(headerLine), br))
	cr.Comma = delim
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	idx := make(map[string]int, len(header))
	for i, h := range header {
		k := normaliseHeader(h)
		if _, dup := idx[k]; !dup && k != "" {
			idx[k] = i
		}
	}
	var sp *scorecardSpec
	switch {
	case hasColumn(idx, "unitid"):
		sp = &bulkSpec
	case hasColumn(idx, "id") && hasColumn(idx, "school.name"):
		sp = &apiSpec
	case hasColumn(idx, "id") && hasColumn(idx, "school_name"):
		sp = &extractSpec
	default:
		return nil, errors.New("unrecognised header: expected UNITID (Scorecard bulk download), " +
			"id and school.name (Scorecard API) or id and school_name (processed extract)")
	}
	rd := &Reader{
		csv:   cr,
		width: len(header),
		cols:  sp.resolve(idx),
		seen:  map[int32]bool{},
		rep: Report{
			Scheme: sp.scheme, Delimiter: delim,
			Skipped: map[string]int{}, DroppedValues: map[string]int{},
		},
	}
	rd.rep.Supplement = len(rd.cols.name) == 0
	if !rd.rep.Supplement && len(rd.cols.state) == 0 {
		return nil, errors.New("the header has school names but no state column")
	}
	return rd, nil
}

// normaliseHeader lower-cases a column name and drops the API's "latest."
// prefix, so INSTNM and instnm, latest.school.name and school.name match.
func normaliseHeader(h string) string {
	k := strings.ToLower(strings.TrimSpace(h))
	return strings.TrimPrefix(k, "latest.")
}

func hasColumn(idx map[string]int, k string) bool { _, ok := idx[k]; return ok }

// Report returns the counts so far; after Next returned io.EOF they are final.
func (r *Reader) Report() Report {
	rep := r.rep
	rep.Skipped = cloneCounts(r.rep.Skipped)
	rep.DroppedValues = cloneCounts(r.rep.DroppedValues)
	rep.Closed = append([]string(nil), r.rep.Closed...)
	return rep
}

func cloneCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Next returns the next loadable school, skipping (and counting) rows that
// cannot be loaded. It returns io.EOF after the last row.
func (r *Reader) Next() (domain.School, error) {
	for {
		rec, err := r.csv.Read()
		if errors.Is(err, io.EOF) {
			return domain.School{}, io.EOF
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			r.rep.Read++
			r.rep.Skipped[SkipMalformed]++
			continue
		}
		if err != nil {
			return domain.School{}, fmt.Errorf("read row %d: %w", r.rep.Read+1, err)
		}
		r.rep.Read++
		if len(rec) != r.width {
			r.rep.Skipped[SkipMalformed]++
			continue
		}
		s, reason := r.parse(rec)
		if reason != "" {
			r.rep.Skipped[reason]++
			continue
		}
		r.rep.Loaded++
		return s, nil
	}
}

// ReadAll reads a whole file; for tests and small files.
func ReadAll(in io.Reader) ([]domain.School, Report, error) {
	rd, err := NewReader(in)
	if err != nil {
		return nil, Report{}, err
	}
	var out []domain.School
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, rd.Report(), nil
		}
		if err != nil {
			return out, rd.Report(), err
		}
		out = append(out, s)
	}
}

// scorecardSpec names the columns each school field may come from, per scheme. Where
// several are listed, the first one with a value in the row wins.
type scorecardSpec struct {
	scheme Scheme

	unitID, name, city, state, zip, url, lat, lon []string
	control, controlText, publicText              []string
	locale, predDegree, size, operating           []string
	admRate, applicants, admitted                 []string
	satRead25, satRead75, satMath25, satMath75    []string
	act25, act75                                  []string
	tuitionIn, tuitionOut, netPrice               []string
	bands                                         [domain.IncomeBands][]string
	pell, loan, debt, grad, retention             []string
	earnings6, earnings10                         []string
	program                                       func(key domain.Major, pcip string) string
}

var bulkSpec = scorecardSpec{
	scheme: SchemeBulk,
	unitID: columnNames("UNITID"), name: columnNames("INSTNM"), city: columnNames("CITY"), state: columnNames("STABBR"),
	zip: columnNames("ZIP"), url: columnNames("INSTURL"), lat: columnNames("LATITUDE"), lon: columnNames("LONGITUDE"),
	control: columnNames("CONTROL"), locale: columnNames("LOCALE"), predDegree: columnNames("PREDDEG"),
	size: columnNames("UGDS"), operating: columnNames("CURROPER"),
	admRate: columnNames("ADM_RATE", "ADM_RATE_ALL"), applicants: columnNames("APPLCN"), admitted: columnNames("ADMSSN"),
	satRead25: columnNames("SATVR25"), satRead75: columnNames("SATVR75"),
	satMath25: columnNames("SATMT25"), satMath75: columnNames("SATMT75"),
	act25: columnNames("ACTCM25"), act75: columnNames("ACTCM75"),
	tuitionIn: columnNames("TUITIONFEE_IN"), tuitionOut: columnNames("TUITIONFEE_OUT"),
	netPrice: columnNames("NPT4_PUB", "NPT4_PRIV"),
	bands: [domain.IncomeBands][]string{
		columnNames("NPT41_PUB", "NPT41_PRIV"), columnNames("NPT42_PUB", "NPT42_PRIV"), columnNames("NPT43_PUB", "NPT43_PRIV"),
		columnNames("NPT44_PUB", "NPT44_PRIV"), columnNames("NPT45_PUB", "NPT45_PRIV"),
	},
	pell: columnNames("PCTPELL"), loan: columnNames("PCTFLOAN"), debt: columnNames("GRAD_DEBT_MDN"),
	grad:      columnNames("C150_4", "C150_4_POOLED_SUPP", "C150_L4", "C150_L4_POOLED_SUPP"),
	retention: columnNames("RET_FT4", "RET_FTL4"),
	earnings6: columnNames("MD_EARN_WNE_P6"), earnings10: columnNames("MD_EARN_WNE_P10"),
	program: func(_ domain.Major, pcip string) string { return pcip },
}

// apiBandNames lists the API names of one net-price income band: the
// consumer-facing figure first, then the public and private variants.
func apiBandNames(ranges ...string) []string {
	var out []string
	for _, kind := range []string{"consumer", "public", "private"} {
		for _, r := range ranges {
			out = append(out, "cost.net_price."+kind+".by_income_level."+r)
		}
	}
	return columnNames(out...)
}

var apiSpec = scorecardSpec{
	scheme: SchemeAPI,
	unitID: columnNames("id"), name: columnNames("school.name"), city: columnNames("school.city"), state: columnNames("school.state"),
	zip: columnNames("school.zip"), url: columnNames("school.school_url"), lat: columnNames("location.lat"), lon: columnNames("location.lon"),
	// school.ownership is CONTROL; files joined with Opportunity Insights
	// data carry its text columns "type" and "public" instead.
	control: columnNames("school.ownership"), controlText: columnNames("type"), publicText: columnNames("public"),
	locale: columnNames("school.locale"), predDegree: columnNames("school.degrees_awarded.predominant"),
	size: columnNames("student.size"), operating: columnNames("school.operating"),
	admRate:   columnNames("admissions.admission_rate.overall"),
	satRead25: columnNames("admissions.sat_scores.25th_percentile.critical_reading"),
	satRead75: columnNames("admissions.sat_scores.75th_percentile.critical_reading"),
	satMath25: columnNames("admissions.sat_scores.25th_percentile.math"),
	satMath75: columnNames("admissions.sat_scores.75th_percentile.math"),
	act25:     columnNames("admissions.act_scores.25th_percentile.cumulative"),
	act75:     columnNames("admissions.act_scores.75th_percentile.cumulative"),
	tuitionIn: columnNames("cost.tuition.in_state"), tuitionOut: columnNames("cost.tuition.out_of_state"),
	netPrice: columnNames("cost.avg_net_price.overall", "cost.avg_net_price.public", "cost.avg_net_price.private"),
	bands: [domain.IncomeBands][]string{
		apiBandNames("0-30000"),
		apiBandNames("30001-48000"),
		apiBandNames("48001-75000"),
		// "750001-111000" is a misspelt key some API snapshots carry for 75001-110000.
		apiBandNames("75001-110000", "750001-111000"),
		apiBandNames("110001-plus"),
	},
	pell: columnNames("aid.pell_grant_rate"), loan: columnNames("aid.students_with_any_loan", "aid.federal_loan_rate"),
	debt: columnNames("aid.median_debt.completers.overall"),
	grad: columnNames("completion.rate_suppressed.four_year", "completion.completion_rate_4yr_150nt",
		"completion.rate_suppressed.less_than_four_year", "completion.completion_rate_less_than_4yr_150nt"),
	retention:  columnNames("student.retention_rate.four_year.full_time", "student.retention_rate.lt_four_year.full_time"),
	earnings6:  columnNames("earnings.6_yrs_after_entry.median"),
	earnings10: columnNames("earnings.10_yrs_after_entry.median"),
	program: func(key domain.Major, _ string) string {
		return "academics.program_percentage." + string(key)
	},
}

// extractSpec reads a processed API pull. Its median_earnings column is not
// read: in the extract we know of it holds one value for every school.
var extractSpec = scorecardSpec{
	scheme: SchemeExtract,
	unitID: columnNames("id"), name: columnNames("school_name"), city: columnNames("city"), state: columnNames("state"),
	zip: columnNames("zipcode"), lat: columnNames("latitude"), lon: columnNames("longitude"),
	control: columnNames("control"), locale: columnNames("locale"), predDegree: columnNames("predom_degree_awarded"),
	admRate: columnNames("admit_rate"), pell: columnNames("pell_grant_rate"),
	grad:     columnNames("4yr_completion_rate", "cc_completion_rate"),
	netPrice: columnNames("net_price_pub", "net_price_priv"),
}

func columnNames(n ...string) []string {
	out := make([]string, len(n))
	for i, s := range n {
		out[i] = normaliseHeader(s)
	}
	return out
}

// scorecardColumns is a scorecardSpec resolved against one header: column indexes per field.
type scorecardColumns struct {
	unitID, name, city, state, zip, url, lat, lon []int
	control, controlText, publicText              []int
	locale, predDegree, size, operating           []int
	admRate, applicants, admitted                 []int
	satRead25, satRead75, satMath25, satMath75    []int
	act25, act75                                  []int
	tuitionIn, tuitionOut, netPrice               []int
	bands                                         [domain.IncomeBands][]int
	pell, loan, debt, grad, retention             []int
	earnings6, earnings10                         []int
	programs                                      []scorecardProgramColumn
}

type scorecardProgramColumn struct {
	major domain.Major
	col   int
}

func (sp *scorecardSpec) resolve(idx map[string]int) scorecardColumns {
	find := func(ns []string) []int {
		var out []int
		for _, n := range ns {
			if i, ok := idx[n]; ok {
				out = append(out, i)
			}
		}
		return out
	}
	c := scorecardColumns{
		unitID: find(sp.unitID), name: find(sp.name), city: find(sp.city), state: find(sp.state),
		zip: find(sp.zip), url: find(sp.url), lat: find(sp.lat), lon: find(sp.lon),
		control: find(sp.control), controlText: find(sp.controlText), publicText: find(sp.publicText),
		locale: find(sp.locale), predDegree: find(sp.predDegree), size: find(sp.size),
		operating: find(sp.operating), admRate: find(sp.admRate), applicants: find(sp.applicants),
		admitted: find(sp.admitted), satRead25: find(sp.satRead25), satRead75: find(sp.satRead75),
		satMath25: find(sp.satMath25), satMath75: find(sp.satMath75), act25: find(sp.act25),
		act75: find(sp.act75), tuitionIn: find(sp.tuitionIn), tuitionOut: find(sp.tuitionOut),
		netPrice: find(sp.netPrice), pell: find(sp.pell), loan: find(sp.loan), debt: find(sp.debt),
		grad: find(sp.grad), retention: find(sp.retention), earnings6: find(sp.earnings6),
		earnings10: find(sp.earnings10),
	}
	for b := range c.bands {
		c.bands[b] = find(sp.bands[b])
	}
	if sp.program != nil {
		for _, m := range domain.Majors {
			if i, ok := idx[normaliseHeader(sp.program(m.Key, m.PCIP))]; ok {
				c.programs = append(c.programs, scorecardProgramColumn{major: m.Key, col: i})
			}
		}
	}
	return c
}

// Ranges outside which a value is dropped as implausible. Net prices may be
// negative: the Scorecard reports grant aid above cost that way.
const (
	validMaxSize       = 1_000_000
	validMaxTuition    = 200_000
	validMinNetPrice   = -50_000
	validMaxNetPrice   = 200_000
	validMaxDebt       = 500_000
	validMaxEarnings   = 1_000_000
	validSATSectionMin = 200
	validSATSectionMax = 800
	validSATMin        = 400
	validSATMax        = 1600
	validACTMin        = 1
	validACTMax        = 36
	validLatMin        = 17.0 // Hawaii to Alaska, Maine to the Aleutians
	validLatMax        = 72.0
	validLonMin        = -180.0
	validLonMax        = -64.0
	fractionScale      = 1e6
)

// Field names used in Report.DroppedValues.
const (
	droppedLatLon        = "lat/lon"
	droppedZip           = "zip"
	droppedControl       = "control"
	droppedLocale        = "locale"
	droppedPredDegree    = "pred_degree"
	droppedSize          = "size"
	droppedOperating     = "operating"
	droppedAdmissionRate = "admission_rate"
	droppedSAT25         = "sat25"
	droppedSAT75         = "sat75"
	droppedACT25         = "act25"
	droppedACT75         = "act75"
	droppedTuitionIn     = "tuition_in"
	droppedTuitionOut    = "tuition_out"
	droppedNetPrice      = "avg_net_price"
	droppedNetPriceBand  = "net_price_by_band"
	droppedPell          = "pell_rate"
	droppedLoan          = "loan_rate"
	droppedDebt          = "median_debt"
	droppedGrad          = "grad_rate"
	droppedRetention     = "retention_rate"
	droppedEarnings6     = "earnings_6yr"
	droppedEarnings10    = "earnings_10yr"
	droppedPrograms      = "program_shares"
)

// parse turns one row into a school, or names why the row is skipped.
func (r *Reader) parse(rec []string) (domain.School, string) {
	p := scorecardRow{rec: rec, dropped: r.rep.DroppedValues}
	c := &r.cols

	unitID, ok := p.unitID(c.unitID)
	if !ok {
		return domain.School{}, SkipBadUnitID
	}
	if r.seen[unitID] {
		return domain.School{}, SkipDuplicate
	}
	r.seen[unitID] = true
	id := SchoolID(unitID)

	s := domain.School{ID: id, UnitID: &unitID, Active: true, Source: SourceScorecard}
	s.Name = p.text(c.name)
	stateCode := strings.ToUpper(p.text(c.state))
	if !r.rep.Supplement {
		if s.Name == "" {
			return domain.School{}, SkipNoName
		}
		st, ok := domain.LookupState(stateCode)
		if !ok {
			return domain.School{}, SkipState
		}
		s.State, s.Region = st.Code, st.Region
	}
	switch op, ok := p.number(droppedOperating, c.operating); {
	case !ok:
	case op == 0:
		r.rep.Closed = append(r.rep.Closed, id)
		return domain.School{}, SkipNotOperating
	case op != 1:
		p.drop(droppedOperating)
	}

	s.City = p.text(c.city)
	s.Zip = p.zip(c.zip)
	s.URL = p.text(c.url)
	s.Lat, s.Lon = p.latLon(c.lat, c.lon)
	s.Control = p.control(c.control, c.controlText, c.publicText)
	s.Locale = p.locale(c.locale)
	s.PredDegree = p.int16In(droppedPredDegree, c.predDegree, 0, 4)
	s.Size = p.int32In(droppedSize, c.size, 0, validMaxSize)

	s.AdmissionRate = p.admissionRate(c.admRate, c.applicants, c.admitted)
	s.SAT25 = p.sat(droppedSAT25, c.satRead25, c.satMath25)
	s.SAT75 = p.sat(droppedSAT75, c.satRead75, c.satMath75)
	s.ACT25 = p.int16In(droppedACT25, c.act25, validACTMin, validACTMax)
	s.ACT75 = p.int16In(droppedACT75, c.act75, validACTMin, validACTMax)

	s.TuitionIn = p.int32In(droppedTuitionIn, c.tuitionIn, 0, validMaxTuition)
	s.TuitionOut = p.int32In(droppedTuitionOut, c.tuitionOut, 0, validMaxTuition)
	s.AvgNetPrice = p.int32In(droppedNetPrice, c.netPrice, validMinNetPrice, validMaxNetPrice)
	for b := range s.NetPriceByBand {
		s.NetPriceByBand[b] = p.int32In(droppedNetPriceBand, c.bands[b], validMinNetPrice, validMaxNetPrice)
	}

	s.PellRate = p.fraction(droppedPell, c.pell)
	s.LoanRate = p.fraction(droppedLoan, c.loan)
	s.MedianDebt = p.int32In(droppedDebt, c.debt, 0, validMaxDebt)
	s.GradRate = p.fraction(droppedGrad, c.grad)
	s.RetentionRate = p.fraction(droppedRetention, c.retention)
	s.Earnings6yr = p.int32In(droppedEarnings6, c.earnings6, 0, validMaxEarnings)
	s.Earnings10yr = p.int32In(droppedEarnings10, c.earnings10, 0, validMaxEarnings)

	for _, pc := range c.programs {
		if v := p.fraction(droppedPrograms, []int{pc.col}); v != nil {
			if s.ProgramShares == nil {
				s.ProgramShares = make(map[domain.Major]float64, len(c.programs))
			}
			s.ProgramShares[pc.major] = *v
		}
	}
	return s, ""
}

// scorecardRow reads typed values out of one row, counting dropped values.
type scorecardRow struct {
	rec     []string
	dropped map[string]int
}

func (p *scorecardRow) drop(field string) { p.dropped[field]++ }

// isMissing reports whether a cell means "no value".
func isMissing(v string) bool {
	switch strings.ToLower(v) {
	case "", "null", "ps", "privacysuppressed", "na", "n/a", "nan", "none":
		return true
	}
	return false
}

// raw is the first cell of cols that has a value.
func (p *scorecardRow) raw(cols []int) (string, bool) {
	for _, i := range cols {
		if v := strings.TrimSpace(p.rec[i]); !isMissing(v) {
			return v, true
		}
	}
	return "", false
}

func (p *scorecardRow) text(cols []int) string {
	v, _ := p.raw(cols)
	return v
}

// number parses the first present value of cols; an unparseable value is
// dropped and counted under field.
func (p *scorecardRow) number(field string, cols []int) (float64, bool) {
	v, ok := p.raw(cols)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		p.drop(field)
		return 0, false
	}
	return f, true
}

func (p *scorecardRow) inRange(field string, cols []int, lo, hi float64) (float64, bool) {
	f, ok := p.number(field, cols)
	if !ok {
		return 0, false
	}
	if f < lo || f > hi {
		p.drop(field)
		return 0, false
	}
	return f, true
}

// integral rejects counts and codes printed with a fraction ("12.5").
func (p *scorecardRow) integral(field string, cols []int, lo, hi float64) (int64, bool) {
	f, ok := p.inRange(field, cols, lo, hi)
	if !ok {
		return 0, false
	}
	if f != math.Trunc(f) {
		p.drop(field)
		return 0, false
	}
	return int64(f), true
}

func (p *scorecardRow) int16In(field string, cols []int, lo, hi float64) *int16 {
	v, ok := p.integral(field, cols, lo, hi)
	if !ok {
		return nil
	}
	x := int16(v)
	return &x
}

// int32In reads a dollar amount or a count; cents are rounded to dollars.
func (p *scorecardRow) int32In(field string, cols []int, lo, hi float64) *int32 {
	f, ok := p.inRange(field, cols, lo, hi)
	if !ok {
		return nil
	}
	x := int32(math.Round(f))
	return &x
}

// fraction reads a share in [0, 1], kept to six decimals: the precision the
// catalogue stores, so a value read back and written again is unchanged.
func (p *scorecardRow) fraction(field string, cols []int) *float64 {
	f, ok := p.inRange(field, cols, 0, 1)
	if !ok {
		return nil
	}
	f = math.Round(f*fractionScale) / fractionScale
	return &f
}

func (p *scorecardRow) unitID(cols []int) (int32, bool) {
	v, ok := p.raw(cols)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
		return 0, false
	}
	return int32(f), true
}

// zip normalises a ZIP code to 5 digits or ZIP+4 ("12345-6789"), restoring
// leading zeros lost by spreadsheets ("2138" is 02138).
func (p *scorecardRow) zip(cols []int) string {
	v, ok := p.raw(cols)
	if !ok {
		return ""
	}
	v = strings.TrimSuffix(v, ".0")
	base, plus4, hasPlus4 := strings.Cut(v, "-")
	if !hasPlus4 && len(base) == 9 {
		base, plus4, hasPlus4 = v[:5], v[5:], true
	}
	if !allDigits(base) || len(base) > 5 || len(base) < 3 || (hasPlus4 && (len(plus4) != 4 || !allDigits(plus4))) {
		p.drop(droppedZip)
		return ""
	}
	base = strings.Repeat("0", 5-len(base)) + base
	if hasPlus4 {
		return base + "-" + plus4
	}
	return base
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// latLon keeps a coordinate pair only when both are present and inside the
// United States' bounding box (a swapped or zero pair is dropped).
func (p *scorecardRow) latLon(latCols, lonCols []int) (*float64, *float64) {
	lat, okLat := p.number(droppedLatLon, latCols)
	lon, okLon := p.number(droppedLatLon, lonCols)
	if !okLat || !okLon {
		return nil, nil
	}
	if lat < validLatMin || lat > validLatMax || lon < validLonMin || lon > validLonMax {
		p.drop(droppedLatLon)
		return nil, nil
	}
	return &lat, &lon
}

func (p *scorecardRow) control(numCols, textCols, publicCols []int) domain.Control {
	if v, ok := p.integral(droppedControl, numCols, -1e9, 1e9); ok {
		if v < 1 || v > 3 {
			p.drop(droppedControl)
			return domain.ControlUnknown
		}
		return domain.Control(v)
	}
	if v, ok := p.raw(textCols); ok {
		switch strings.ToLower(v) {
		case "public":
			return domain.ControlPublic
		case "private non-profit", "private nonprofit", "private not-for-profit":
			return domain.ControlNonprofit
		case "for-profit", "private for-profit":
			return domain.ControlForProfit
		}
		p.drop(droppedControl)
		return domain.ControlUnknown
	}
	// "public" says public or private; private alone does not say which kind.
	if v, ok := p.raw(publicCols); ok && strings.EqualFold(v, "public") {
		return domain.ControlPublic
	}
	return domain.ControlUnknown
}

func (p *scorecardRow) locale(cols []int) *int16 {
	v, ok := p.integral(droppedLocale, cols, -1e9, 1e9)
	if !ok {
		return nil
	}
	if v < 11 || v > 43 || v%10 < 1 || v%10 > 3 {
		p.drop(droppedLocale)
		return nil
	}
	x := int16(v)
	return &x
}

// admissionRate is ADM_RATE when given, else admitted / applicants (IPEDS
// ADM files). A rate of 0 or above 1 is dropped.
func (p *scorecardRow) admissionRate(rateCols, applicantCols, admittedCols []int) *float64 {
	if rate, ok := p.number(droppedAdmissionRate, rateCols); ok {
		if rate <= 0 || rate > 1 {
			p.drop(droppedAdmissionRate)
			return nil
		}
		rate = math.Round(rate*fractionScale) / fractionScale
		return &rate
	}
	applied, okA := p.number(droppedAdmissionRate, applicantCols)
	admitted, okB := p.number(droppedAdmissionRate, admittedCols)
	if !okA || !okB || applied == 0 {
		return nil
	}
	rate := admitted / applied
	if rate <= 0 || rate > 1 {
		p.drop(droppedAdmissionRate)
		return nil
	}
	rate = math.Round(rate*fractionScale) / fractionScale
	return &rate
}

// sat is the combined reading + math percentile, only when both sections
// are present and each is a valid section score (200-800).
func (p *scorecardRow) sat(field string, readCols, mathCols []int) *int16 {
	read, okR := p.number(field, readCols)
	mth, okM := p.number(field, mathCols)
	if !okR || !okM {
		return nil
	}
	if read < validSATSectionMin || read > validSATSectionMax || mth < validSATSectionMin || mth > validSATSectionMax {
		p.drop(field)
		return nil
	}
	total := math.Round(read + mth)
	if total < validSATMin || total > validSATMax {
		p.drop(field)
		return nil
	}
	x := int16(total)
	return &x
}

// detectDelimiter picks tab or comma, whichever separates more header fields.
func detectDelimiter(headerLine string) rune {
	if strings.Count(headerLine, "\t") > strings.Count(headerLine, ",") {
		return '\t'
	}
	return ','
}
