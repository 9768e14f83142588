package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
)

const (
	importBatchSize     = 500
	importProgressEvery = 3 * time.Second
)

// skipNotInCatalogue counts rows of a file without school names (an
// admissions supplement) whose school no earlier import loaded.
const skipNotInCatalogue = "not in catalogue (file has no names)"

func init() {
	register("import-scorecard", command{
		usage: "import-scorecard [--prune] FILE [SUPPLEMENT...]",
		help: "load College Scorecard institution data (CSV or TSV), merged into earlier imports; " +
			"each SUPPLEMENT (another Scorecard or IPEDS file) only fills the values FILE lacks or leaves empty, " +
			"for the schools FILE lists (matched by UNITID, else by name, city and state), and adds no school",
		run: runImportScorecard,
	})
	register("import-zips", command{
		usage: "import-zips FILE",
		help:  "load a ZIP centroid table (CSV with columns zip, lat, lon, state)",
		run:   runImportZips,
	})
}

func runImportScorecard(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("import-scorecard")
	prune := fs.Bool("prune", false, `deactivate "scorecard" schools that are not in FILE`)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("want a FILE")
	}
	path := pos[0]
	supps := make([]*supplementFile, 0, len(pos)-1)
	for _, sp := range pos[1:] {
		sf, err := readSupplement(sp)
		if err != nil {
			return err
		}
		supps = append(supps, sf)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rd, err := catalog.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if *prune && rd.Report().Supplement {
		return usageErr("--prune needs a file that lists whole schools; %s has no school names", path)
	}

	pool, err := store.Open(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	imp := &scorecardImport{st: store.New(pool), rd: rd, supps: supps, stderr: e.stderr, start: time.Now()}
	if err := imp.load(ctx); err != nil {
		return err
	}
	return imp.finish(ctx, e.stdout, path, *prune)
}

// scorecardImport streams a Scorecard file into the catalogue in batches:
// each batch is merged with what is stored and upserted in one transaction,
// so an interrupted import leaves whole batches and can simply be re-run.
type scorecardImport struct {
	st     *store.Store
	rd     *catalog.Reader
	supps  []*supplementFile
	stderr io.Writer
	start  time.Time

	batch        []domain.School
	res          store.UpsertResult
	loadedIDs    []string
	extraSkipped map[string]int
	lastProgress time.Time
}

// supplementFile is a SUPPLEMENT of import-scorecard: read whole before
// FILE, then laid under FILE's schools.
type supplementFile struct {
	path string
	read catalog.Report
	sp   *catalog.Supplement
	fill catalog.SupplementReport
}

func readSupplement(path string) (*supplementFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	schools, rep, err := catalog.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &supplementFile{path: path, read: rep, sp: catalog.NewSupplement(schools)}, nil
}

func (imp *scorecardImport) load(ctx context.Context) error {
	imp.lastProgress = imp.start
	next := imp.rd.Next
	if len(imp.supps) > 0 {
		// Matching by name needs every UNITID FILE lists, so FILE is read
		// whole and filled before its batches are merged and stored.
		schools, err := imp.readFilled()
		if err != nil {
			return err
		}
		next = func() (domain.School, error) {
			if len(schools) == 0 {
				return domain.School{}, io.EOF
			}
			s := schools[0]
			schools = schools[1:]
			return s, nil
		}
	}
	for {
		s, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		imp.batch = append(imp.batch, s)
		if len(imp.batch) >= importBatchSize {
			if err := imp.flush(ctx); err != nil {
				return err
			}
			imp.progress(true)
		} else {
			imp.progress(false)
		}
	}
	if err := imp.flush(ctx); err != nil {
		return err
	}
	imp.progress(true)
	return nil
}

// readFilled reads FILE whole and fills its schools from each supplement in
// turn, so an earlier SUPPLEMENT's value wins over a later one's.
func (imp *scorecardImport) readFilled() ([]domain.School, error) {
	var schools []domain.School
	for {
		s, err := imp.rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		schools = append(schools, s)
		imp.progress(false)
	}
	for _, sf := range imp.supps {
		schools, sf.fill = sf.sp.Fill(schools)
	}
	return schools, nil
}

func (imp *scorecardImport) progress(force bool) {
	now := time.Now()
	if !force && now.Sub(imp.lastProgress) < importProgressEvery {
		return
	}
	imp.lastProgress = now
	rep := imp.rd.Report()
	fmt.Fprintf(imp.stderr, "import-scorecard: %d rows read, %d loaded, %d skipped (%.1fs)\n",
		rep.Read, imp.loaded(), rep.SkippedTotal()+importTotal(imp.extraSkipped), now.Sub(imp.start).Seconds())
}

func (imp *scorecardImport) loaded() int {
	return imp.res.Inserted + imp.res.Updated + imp.res.Unchanged
}

func (imp *scorecardImport) flush(ctx context.Context) error {
	if len(imp.batch) == 0 {
		return nil
	}
	merged, notStored, err := mergeWithStored(ctx, imp.st, imp.batch, imp.rd.Report().Supplement)
	if err != nil {
		return err
	}
	if notStored > 0 {
		if imp.extraSkipped == nil {
			imp.extraSkipped = map[string]int{}
		}
		imp.extraSkipped[skipNotInCatalogue] += notStored
	}
	for _, s := range merged {
		imp.loadedIDs = append(imp.loadedIDs, s.ID)
	}
	res, err := imp.st.UpsertSchools(ctx, merged)
	if err != nil {
		return err
	}
	imp.res.Inserted += res.Inserted
	imp.res.Updated += res.Updated
	imp.res.Unchanged += res.Unchanged
	imp.batch = imp.batch[:0]
	return nil
}

// mergeWithStored lays each school of batch over the stored school with its
// id (catalog.MergeSchool), so a value the batch lacks keeps the stored
// one. With supplement (a file without school names), a school that is not
// stored is left out and counted in notStored; otherwise it is new.
func mergeWithStored(ctx context.Context, st *store.Store, batch []domain.School, supplement bool) (merged []domain.School, notStored int, err error) {
	ids := make([]string, len(batch))
	for i, s := range batch {
		ids[i] = s.ID
	}
	stored, err := st.SchoolsByID(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	merged = make([]domain.School, 0, len(batch))
	for _, s := range batch {
		old, ok := stored[s.ID]
		switch {
		case ok:
			s = catalog.MergeSchool(old, s)
		case supplement:
			notStored++
			continue
		}
		merged = append(merged, s)
	}
	return merged, notStored, nil
}

// finish applies the catalogue-wide consequences of the import and prints
// the summary:
//   - once real schools are loaded, the generated ("seed") catalogue is
//     deactivated, because mixing invented and real schools would mislead
//     students;
//   - schools the file says have closed are deactivated;
//   - with prune, "scorecard" schools missing from the file are deactivated.
//
// Deactivated schools are never served again; their swipes stay.
func (imp *scorecardImport) finish(ctx context.Context, w io.Writer, path string, prune bool) error {
	rep := imp.rd.Report()
	var seedOff, closedOff, pruned int
	var err error
	if imp.loaded() > 0 {
		if seedOff, err = imp.st.DeactivateSchoolsNotIn(ctx, catalog.SourceSeed, []string{}); err != nil {
			return err
		}
	}
	if closedOff, err = imp.st.DeactivateSchools(ctx, catalog.SourceScorecard, rep.Closed); err != nil {
		return err
	}
	if prune {
		if imp.loaded() == 0 {
			return errors.New("--prune refused: the file loaded no schools, pruning would empty the catalogue")
		}
		if pruned, err = imp.st.DeactivateSchoolsNotIn(ctx, catalog.SourceScorecard, imp.loadedIDs); err != nil {
			return err
		}
	}

	skipped := maps.Clone(rep.Skipped)
	for k, v := range imp.extraSkipped {
		skipped[k] += v
	}
	kind := ""
	if rep.Supplement {
		kind = ", no school names: updates known schools only"
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("import-scorecard %s (%s%s)\n", path, describeFile(rep), kind)
	p("  rows read:       %d\n", rep.Read)
	p("  loaded:          %d (inserted %d, updated %d, unchanged %d)\n",
		imp.loaded(), imp.res.Inserted, imp.res.Updated, imp.res.Unchanged)
	p("  skipped:         %d\n", importTotal(skipped))
	printImportCounts(w, skipped)
	p("  values dropped:  %d (invalid or out of range, stored as unknown)\n", rep.DroppedTotal())
	printImportCounts(w, rep.DroppedValues)
	for _, sf := range imp.supps {
		printSupplement(w, sf)
	}
	p("  generated (seed) schools deactivated: %d\n", seedOff)
	p("  closed schools deactivated:           %d\n", closedOff)
	if prune {
		p("  pruned (not in file, deactivated):    %d\n", pruned)
	}
	p("  seconds:         %.2f\n", time.Since(imp.start).Seconds())
	return nil
}

// describeFile names a file's delimiter and column-naming scheme.
func describeFile(rep catalog.Report) string {
	delim := "comma-separated"
	if rep.Delimiter == '\t' {
		delim = "tab-separated"
	}
	return delim + ", " + string(rep.Scheme) + " column names"
}

// printSupplement says what one SUPPLEMENT matched and filled.
func printSupplement(w io.Writer, sf *supplementFile) {
	r := sf.fill
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("  supplement %s (%s)\n", sf.path, describeFile(sf.read))
	p("    rows read:     %d (%d skipped)\n", sf.read.Read, sf.read.SkippedTotal())
	p("    matched:       %d (by UNITID %d, by name, city and state %d)\n", r.ByUnitID+r.ByPlace, r.ByUnitID, r.ByPlace)
	p("    not matched:   %d of FILE's schools\n", r.Unmatched)
	p("    not in FILE:   %d (not added)\n", r.NotAdded)
	p("    values filled: %d (values FILE lacks or leaves empty)\n", importTotal(r.Filled))
	printImportCountsIndent(w, "      ", r.Filled)
}

// printImportCounts lists a reason/field -> count map, largest first.
func printImportCounts(w io.Writer, m map[string]int) { printImportCountsIndent(w, "    ", m) }

func printImportCountsIndent(w io.Writer, indent string, m map[string]int) {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		if m[k] > 0 {
			fmt.Fprintf(w, "%s%-40s %d\n", indent, k, m[k])
		}
	}
}

func importTotal(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func runImportZips(ctx context.Context, e env, args []string) error {
	pos, err := parseArgs(e.flagSet("import-zips"), args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one FILE, got %d arguments", len(pos))
	}
	start := time.Now()
	f, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	zips, rep, err := readZips(f)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	if len(zips) == 0 {
		return fmt.Errorf("%s: no valid rows (%d read, %d skipped)", pos[0], rep.Read, importTotal(rep.Skipped))
	}
	pool, err := store.Open(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := store.New(pool).ReplaceZipCentroids(ctx, zips)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "import-zips %s\n", pos[0])
	fmt.Fprintf(e.stdout, "  rows read:  %d\n", rep.Read)
	fmt.Fprintf(e.stdout, "  loaded:     %d (new ZIPs added, known ZIPs replaced)\n", n)
	fmt.Fprintf(e.stdout, "  skipped:    %d\n", importTotal(rep.Skipped))
	printImportCounts(e.stdout, rep.Skipped)
	fmt.Fprintf(e.stdout, "  seconds:    %.2f\n", time.Since(start).Seconds())
	return nil
}

// Reasons a ZIP row is skipped.
const (
	zipSkipMalformed = "malformed row"
	zipSkipBadZip    = "bad zip"
	zipSkipLatLon    = "lat/lon missing or out of range"
	zipSkipState     = "state not one of the 50 states and DC"
	zipSkipDuplicate = "duplicate zip"
)

type zipReport struct {
	Read    int
	Skipped map[string]int
}

// readZips parses a ZIP centroid CSV: columns zip, lat, lon and state in any
// order (others ignored). ZIPs that lost their leading zeros are padded to
// five digits; rows with a bad ZIP, coordinates outside the United States or
// a state other than the 50 states and DC are skipped and counted; the
// first row of a repeated ZIP wins.
func readZips(r io.Reader) ([]store.ZipCentroid, zipReport, error) {
	rep := zipReport{Skipped: map[string]int{}}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, rep, fmt.Errorf("read header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		k := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, dup := col[k]; !dup {
			col[k] = i
		}
	}
	var missingCols []string
	for _, k := range []string{"zip", "lat", "lon", "state"} {
		if _, ok := col[k]; !ok {
			missingCols = append(missingCols, k)
		}
	}
	if len(missingCols) > 0 {
		return nil, rep, fmt.Errorf("header lacks column(s) %s; want zip, lat, lon, state", strings.Join(missingCols, ", "))
	}
	seen := map[string]bool{}
	var out []store.ZipCentroid
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, rep, nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			rep.Read++
			rep.Skipped[zipSkipMalformed]++
			continue
		}
		if err != nil {
			return nil, rep, err
		}
		rep.Read++
		if len(rec) != len(header) {
			rep.Skipped[zipSkipMalformed]++
			continue
		}
		z, reason := parseZipRow(rec[col["zip"]], rec[col["lat"]], rec[col["lon"]], rec[col["state"]])
		if reason == "" && seen[z.Zip] {
			reason = zipSkipDuplicate
		}
		if reason != "" {
			rep.Skipped[reason]++
			continue
		}
		seen[z.Zip] = true
		out = append(out, z)
	}
}

func parseZipRow(zip, lat, lon, state string) (store.ZipCentroid, string) {
	zip = strings.TrimSpace(zip)
	if zip == "" || len(zip) > 5 || strings.Trim(zip, "0123456789") != "" || strings.Trim(zip, "0") == "" {
		return store.ZipCentroid{}, zipSkipBadZip
	}
	z := store.ZipCentroid{Zip: strings.Repeat("0", 5-len(zip)) + zip}
	var errLat, errLon error
	z.Lat, errLat = strconv.ParseFloat(strings.TrimSpace(lat), 64)
	z.Lon, errLon = strconv.ParseFloat(strings.TrimSpace(lon), 64)
	// The bounding box of the 50 states and DC, from Hawaii to Alaska and Maine.
	if errLat != nil || errLon != nil || !(z.Lat >= 17 && z.Lat <= 72 && z.Lon >= -180 && z.Lon <= -64) {
		return store.ZipCentroid{}, zipSkipLatLon
	}
	st, ok := domain.LookupState(strings.ToUpper(strings.TrimSpace(state)))
	if !ok {
		return store.ZipCentroid{}, zipSkipState
	}
	z.State = st.Code
	return z, ""
}
