package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

const studentColumns = `id::text, coalesce(name, ''), coalesce(email, ''), coalesce(graduation_year, ''),
	gpa, sat, act, home_lat, home_lon, coalesce(state, ''), coalesce(zip, ''), max_distance_miles,
	budget, family_income, intended_majors, coalesce(preferred_size, ''), coalesce(preferred_setting, ''),
	swipe_count, created_at, updated_at, deleted_at`

func scanStudent(row pgx.Row) (domain.Student, error) {
	var (
		s      domain.Student
		gpa    *float32
		sat    *int16
		act    *int16
		majors []string
	)
	err := row.Scan(&s.ID, &s.Name, &s.Email, &s.GraduationYear, &gpa, &sat, &act, &s.HomeLat, &s.HomeLon,
		&s.State, &s.Zip, &s.MaxDistanceMiles, &s.Budget, &s.FamilyIncome, &majors, &s.PreferredSize,
		&s.PreferredSetting, &s.SwipeCount, &s.CreatedAt, &s.UpdatedAt, &s.DeletedAt)
	if err != nil {
		return s, err
	}
	if gpa != nil {
		g := float64(*gpa)
		g = float64(int(g*100+0.5)) / 100 // real keeps ~7 digits; GPAs have two decimals
		s.GPA = &g
	}
	if sat != nil {
		v := int(*sat)
		s.SAT = &v
	}
	if act != nil {
		v := int(*act)
		s.ACT = &v
	}
	s.IntendedMajors = make([]domain.Major, len(majors))
	for i, m := range majors {
		s.IntendedMajors[i] = domain.Major(m)
	}
	return s, nil
}

// Student loads a student by id. A deleted student is still returned (with
// its personal fields erased); an unknown id gives INVALID_STUDENT_ID.
func (s *Store) Student(ctx context.Context, id string) (domain.Student, error) {
	const q = `SELECT ` + studentColumns + ` FROM students WHERE id = $1`
	st, err := scanStudent(s.pool.QueryRow(ctx, q, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return st, domain.StudentNotFound(id)
	}
	return st, mapErr(err, "student")
}

// SaveStudent inserts the student or replaces its profile fields, and
// reports whether it was created. Swipe counts and timestamps are the
// store's own and are not taken from st. An erased student saved again
// starts a new profile (created_at now; DeleteStudent left nothing else).
func (s *Store) SaveStudent(ctx context.Context, st domain.Student) (saved domain.Student, created bool, err error) {
	return saveStudent(ctx, s.pool, st)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func saveStudent(ctx context.Context, q1 querier, st domain.Student) (saved domain.Student, created bool, err error) {
	const q = `
INSERT INTO students (id, name, email, graduation_year, gpa, sat, act, home_lat, home_lon, state, zip,
	max_distance_miles, budget, family_income, intended_majors, preferred_size, preferred_setting)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, nullif($10, ''), nullif($11, ''), $12, $13, $14, $15,
	nullif($16, ''), nullif($17, ''))
ON CONFLICT (id) DO UPDATE SET
	name = excluded.name, email = excluded.email, graduation_year = excluded.graduation_year,
	gpa = excluded.gpa, sat = excluded.sat, act = excluded.act, home_lat = excluded.home_lat,
	home_lon = excluded.home_lon, state = excluded.state, zip = excluded.zip,
	max_distance_miles = excluded.max_distance_miles, budget = excluded.budget,
	family_income = excluded.family_income, intended_majors = excluded.intended_majors,
	preferred_size = excluded.preferred_size, preferred_setting = excluded.preferred_setting,
	version = students.version + 1, updated_at = now(), deleted_at = NULL,
	-- an erased student onboarding again starts a new profile
	created_at = CASE WHEN students.deleted_at IS NULL THEN students.created_at ELSE now() END
RETURNING ` + studentColumns + `, (xmax = 0)`
	majors := make([]string, len(st.IntendedMajors))
	for i, m := range st.IntendedMajors {
		majors[i] = string(m)
	}
	row := q1.QueryRow(ctx, q, st.ID, st.Name, st.Email, st.GraduationYear, st.GPA, st.SAT, st.ACT,
		st.HomeLat, st.HomeLon, st.State, st.Zip, st.MaxDistanceMiles, st.Budget, st.FamilyIncome, majors,
		st.PreferredSize, st.PreferredSetting)
	saved, err = scanStudent(rowWithExtra{row, &created})
	return saved, created, mapErr(err, "student")
}

// UpdateStudent reads the student (exists is false for an unknown id),
// lets apply compute the new profile and stores it, all under a per-student
// lock, so concurrent updates of one student (or an update racing an
// erasure) apply one after the other and none is lost.
func (s *Store) UpdateStudent(ctx context.Context, id string,
	apply func(current domain.Student, exists bool) (domain.Student, error)) (saved domain.Student, created bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// An advisory lock serialises a student's updates even before its
		// row exists (two concurrent first onboardings).
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, id); err != nil {
			return err
		}
		current, err := scanStudent(tx.QueryRow(ctx, `SELECT `+studentColumns+` FROM students WHERE id = $1`, id))
		exists := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if !exists {
			current = domain.Student{ID: id}
		}
		next, err := apply(current, exists)
		if err != nil {
			return err
		}
		saved, created, err = saveStudent(ctx, tx, next)
		return err
	})
	var de *domain.Error
	if errors.As(err, &de) {
		return saved, created, err
	}
	return saved, created, mapErr(err, "student")
}

// rowWithExtra scans a row whose last column is one extra destination.
type rowWithExtra struct {
	pgx.Row
	extra any
}

func (r rowWithExtra) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra)...) }

// ZipCentroid resolves a five-digit ZIP code loaded by `matchctl import-zips`.
func (s *Store) ZipCentroid(ctx context.Context, zip string) (lat, lon float64, state string, ok bool, err error) {
	const q = `SELECT lat, lon, state FROM zip_centroids WHERE zip = $1`
	err = s.pool.QueryRow(ctx, q, zip).Scan(&lat, &lon, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, "", false, nil
	}
	if err != nil {
		return 0, 0, "", false, mapErr(err, "zip centroid")
	}
	return lat, lon, state, true, nil
}
