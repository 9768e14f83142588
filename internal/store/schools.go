package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

const schoolColumns = `id::text, unitid, name, city, state, zip, url, lat, lon, region, control, locale, size,
	pred_degree, admission_rate, sat25, sat75, act25, act75, tuition_in, tuition_out, avg_net_price,
	net_price_by_band, pell_rate, loan_rate, median_debt, grad_rate, retention_rate, earnings_6yr,
	earnings_10yr, program_shares, active, source, updated_at`

// schoolColumnsNoShares is schoolColumns with no program shares read: a
// school scanned from it has none.
var schoolColumnsNoShares = strings.Replace(schoolColumns, "program_shares", "NULL::jsonb", 1)

func scanSchool(row pgx.Row) (domain.School, error) {
	var (
		s                          domain.School
		region                     string
		control                    int16
		adm, pell, loan, grad, ret *float32
		bands                      []*int32
		shares                     []byte
	)
	err := row.Scan(&s.ID, &s.UnitID, &s.Name, &s.City, &s.State, &s.Zip, &s.URL, &s.Lat, &s.Lon, &region,
		&control, &s.Locale, &s.Size, &s.PredDegree, &adm, &s.SAT25, &s.SAT75, &s.ACT25, &s.ACT75,
		&s.TuitionIn, &s.TuitionOut, &s.AvgNetPrice, &bands, &pell, &loan, &s.MedianDebt, &grad, &ret,
		&s.Earnings6yr, &s.Earnings10yr, &shares, &s.Active, &s.Source, &s.UpdatedAt)
	if err != nil {
		return s, err
	}
	s.Region, s.Control = domain.Region(region), domain.Control(control)
	s.AdmissionRate, s.PellRate, s.LoanRate, s.GradRate, s.RetentionRate = f64(adm), f64(pell), f64(loan), f64(grad), f64(ret)
	copy(s.NetPriceByBand[:], bands)
	if len(shares) > 0 {
		if err := json.Unmarshal(shares, &s.ProgramShares); err != nil {
			return s, fmt.Errorf("school %s program_shares: %w", s.ID, err)
		}
	}
	return s, nil
}

// f64 widens a real column, rounding away float32 noise (0.6622 stays 0.6622).
func f64(v *float32) *float64 {
	if v == nil {
		return nil
	}
	x := float64(*v)
	x = float64(int64(x*1e6+0.5)) / 1e6
	return &x
}

func f32(v *float64) *float32 {
	if v == nil {
		return nil
	}
	x := float32(*v)
	return &x
}

// School loads one school; an unknown id gives INVALID_SCHOOL_ID.
func (s *Store) School(ctx context.Context, id string) (domain.School, error) {
	const q = `SELECT ` + schoolColumns + ` FROM schools WHERE id = $1`
	sc, err := scanSchool(s.pool.QueryRow(ctx, q, id))
	if err == pgx.ErrNoRows {
		return sc, domain.SchoolNotFound(id)
	}
	return sc, mapErr(err, "school")
}

// ActiveSchools loads the whole active catalogue, ordered by id.
func (s *Store) ActiveSchools(ctx context.Context) ([]domain.School, error) {
	const q = `SELECT ` + schoolColumns + ` FROM schools WHERE active ORDER BY id`
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, mapErr(err, "schools")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.School, error) { return scanSchool(r) })
	return out, mapErr(err, "schools")
}

// CountSchools counts active schools.
func (s *Store) CountSchools(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM schools WHERE active`).Scan(&n)
	return n, mapErr(err, "schools")
}

// CatalogVersion changes whenever any school row changes; the API reloads
// its in-memory catalogue when it does.
func (s *Store) CatalogVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(change_seq), 0) FROM schools`).Scan(&v)
	return v, mapErr(err, "schools")
}

// UpsertResult counts what an upsert did.
type UpsertResult struct {
	Inserted, Updated, Unchanged int
}

// UpsertSchools inserts or updates schools by id in one transaction. A row
// whose data is unchanged is not touched, so its change_seq and updated_at
// stay put and a re-import changes nothing.
func (s *Store) UpsertSchools(ctx context.Context, schools []domain.School) (UpsertResult, error) {
	var res UpsertResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		res, err = upsertSchools(ctx, tx, schools)
		return err
	})
	return res, mapErr(err, "schools")
}

func upsertSchools(ctx context.Context, tx pgx.Tx, schools []domain.School) (UpsertResult, error) {
	const q = `
INSERT INTO schools (id, unitid, name, city, state, zip, url, lat, lon, region, control, locale, size,
	pred_degree, admission_rate, sat25, sat75, act25, act75, tuition_in, tuition_out, avg_net_price,
	net_price_by_band, pell_rate, loan_rate, median_debt, grad_rate, retention_rate, earnings_6yr,
	earnings_10yr, program_shares, active, source)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
	$22, $23, $24, $25, $26, $27, $28, $29, $30, $31, true, $32)
ON CONFLICT (id) DO UPDATE SET
	unitid = excluded.unitid, name = excluded.name, city = excluded.city, state = excluded.state,
	zip = excluded.zip, url = excluded.url, lat = excluded.lat, lon = excluded.lon, region = excluded.region,
	control = excluded.control, locale = excluded.locale, size = excluded.size,
	pred_degree = excluded.pred_degree, admission_rate = excluded.admission_rate, sat25 = excluded.sat25,
	sat75 = excluded.sat75, act25 = excluded.act25, act75 = excluded.act75,
	tuition_in = excluded.tuition_in, tuition_out = excluded.tuition_out,
	avg_net_price = excluded.avg_net_price, net_price_by_band = excluded.net_price_by_band,
	pell_rate = excluded.pell_rate, loan_rate = excluded.loan_rate, median_debt = excluded.median_debt,
	grad_rate = excluded.grad_rate, retention_rate = excluded.retention_rate,
	earnings_6yr = excluded.earnings_6yr, earnings_10yr = excluded.earnings_10yr,
	program_shares = excluded.program_shares, active = true, source = excluded.source,
	updated_at = now()
WHERE (schools.unitid, schools.name, schools.city, schools.state, schools.zip, schools.url, schools.lat,
	schools.lon, schools.region, schools.control, schools.locale, schools.size, schools.pred_degree,
	schools.admission_rate, schools.sat25, schools.sat75, schools.act25, schools.act75,
	schools.tuition_in, schools.tuition_out, schools.avg_net_price, schools.net_price_by_band,
	schools.pell_rate, schools.loan_rate, schools.median_debt, schools.grad_rate,
	schools.retention_rate, schools.earnings_6yr, schools.earnings_10yr, schools.program_shares,
	schools.active, schools.source)
	IS DISTINCT FROM
	(excluded.unitid, excluded.name, excluded.city, excluded.state, excluded.zip, excluded.url,
	excluded.lat, excluded.lon, excluded.region, excluded.control, excluded.locale, excluded.size,
	excluded.pred_degree, excluded.admission_rate, excluded.sat25, excluded.sat75, excluded.act25,
	excluded.act75, excluded.tuition_in, excluded.tuition_out, excluded.avg_net_price,
	excluded.net_price_by_band, excluded.pell_rate, excluded.loan_rate, excluded.median_debt,
	excluded.grad_rate, excluded.retention_rate, excluded.earnings_6yr, excluded.earnings_10yr,
	excluded.program_shares, true, excluded.source)
RETURNING (xmax = 0)`
	var res UpsertResult
	batch := &pgx.Batch{}
	for _, sc := range schools {
		shares := sc.ProgramShares
		if shares == nil {
			shares = map[domain.Major]float64{}
		}
		sharesJSON, err := json.Marshal(shares)
		if err != nil {
			return res, err
		}
		batch.Queue(q, sc.ID, sc.UnitID, sc.Name, sc.City, sc.State, sc.Zip, sc.URL, sc.Lat, sc.Lon,
			string(sc.Region), int16(sc.Control), sc.Locale, sc.Size, sc.PredDegree, f32(sc.AdmissionRate),
			sc.SAT25, sc.SAT75, sc.ACT25, sc.ACT75, sc.TuitionIn, sc.TuitionOut, sc.AvgNetPrice,
			sc.NetPriceByBand[:], f32(sc.PellRate), f32(sc.LoanRate), sc.MedianDebt, f32(sc.GradRate),
			f32(sc.RetentionRate), sc.Earnings6yr, sc.Earnings10yr, sharesJSON, sc.Source)
	}
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	for range schools {
		var inserted bool
		err := br.QueryRow().Scan(&inserted)
		switch {
		case err == pgx.ErrNoRows:
			res.Unchanged++
		case err != nil:
			return res, err
		case inserted:
			res.Inserted++
		default:
			res.Updated++
		}
	}
	return res, br.Close()
}

// DeactivateSchoolsNotIn marks active schools of source that are not in
// keep as inactive (they vanished from a re-import); their swipes stay.
func (s *Store) DeactivateSchoolsNotIn(ctx context.Context, source string, keep []string) (int, error) {
	const q = `UPDATE schools SET active = false, updated_at = now()
WHERE source = $1 AND active AND NOT (id = ANY($2::uuid[]))`
	tag, err := s.pool.Exec(ctx, q, source, keep)
	return int(tag.RowsAffected()), mapErr(err, "schools")
}

// ReplaceZipCentroids loads a ZIP centroid table, replacing rows with the same ZIP.
func (s *Store) ReplaceZipCentroids(ctx context.Context, zips []ZipCentroid) (int, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE zip_load (LIKE zip_centroids) ON COMMIT DROP`); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"zip_load"}, []string{"zip", "lat", "lon", "state"},
			pgx.CopyFromSlice(len(zips), func(i int) ([]any, error) {
				z := zips[i]
				return []any{z.Zip, z.Lat, z.Lon, z.State}, nil
			}))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO zip_centroids SELECT DISTINCT ON (zip) * FROM zip_load
ON CONFLICT (zip) DO UPDATE SET lat = excluded.lat, lon = excluded.lon, state = excluded.state`)
		return err
	})
	return len(zips), mapErr(err, "zip centroids")
}

// ZipCentroid is one row of the ZIP table.
type ZipCentroid struct {
	Zip      string
	Lat, Lon float64
	State    string
}

// ActiveSchoolsBySource counts active schools per source ("seed", "scorecard").
func (s *Store) ActiveSchoolsBySource(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT source, count(*) FROM schools WHERE active GROUP BY source`)
	if err != nil {
		return nil, mapErr(err, "schools")
	}
	out := map[string]int{}
	var (
		src string
		n   int
	)
	_, err = pgx.ForEachRow(rows, []any{&src, &n}, func() error { out[src] = n; return nil })
	return out, mapErr(err, "schools")
}
