package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// SchoolsByID loads the schools with the given ids, active or not, keyed by
// id; ids that are not stored are absent from the map. Importers use it to
// merge a file into what earlier imports stored.
func (s *Store) SchoolsByID(ctx context.Context, ids []string) (map[string]domain.School, error) {
	const q = `SELECT ` + schoolColumns + ` FROM schools WHERE id = ANY($1::uuid[])`
	out := make(map[string]domain.School, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, q, ids)
	if err != nil {
		return nil, mapErr(err, "schools")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.School, error) { return scanSchool(r) })
	if err != nil {
		return nil, mapErr(err, "schools")
	}
	for _, sc := range list {
		out[sc.ID] = sc
	}
	return out, nil
}

// DeactivateSchools marks the listed active schools of source as inactive
// (for example schools a catalogue file says have closed); their swipes stay.
func (s *Store) DeactivateSchools(ctx context.Context, source string, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	const q = `UPDATE schools SET active = false, updated_at = now()
WHERE source = $1 AND active AND id = ANY($2::uuid[])`
	tag, err := s.pool.Exec(ctx, q, source, ids)
	return int(tag.RowsAffected()), mapErr(err, "schools")
}
