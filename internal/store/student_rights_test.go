package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// person is a student's personal data; every string is one a test can
// search the whole database for.
type person struct {
	id, name, email, comment, zip string
}

func newPerson(tag string) person {
	return person{
		id:      uuid.NewString(),
		name:    "Zephyrine Quillfeather-" + tag,
		email:   "zq." + tag + "@sentinel.example.com",
		comment: "my counselor Ms. Okonkwo-" + tag + " says it is too far from home",
		zip:     "0" + tag[:4],
	}
}

// rightsFixture stores a student with every profile field, two swipes
// (one with a stored response), feedback with a comment, a category
// preference, a learning state, two outbox events about the student and a
// webhook delivery of one of them with an attempt.
type rightsFixture struct {
	schools   []domain.School
	outboxIDs []int64
}

func addRightsFixture(t *testing.T, db *store.Store, p person) rightsFixture {
	t.Helper()
	ctx := context.Background()
	var f rightsFixture
	f.schools = catalog.Generate(3, 1)
	_, err := db.UpsertSchools(ctx, f.schools)
	require.NoError(t, err)

	gpa, sat, act := 3.71, 1350, 30
	lat, lon := 44.4759, -73.2121
	maxDist, budget, income := 300, 23457, 123457
	_, _, err = db.SaveStudent(ctx, domain.Student{
		ID: p.id, Name: p.name, Email: p.email, GraduationYear: "2027", GPA: &gpa, SAT: &sat, ACT: &act,
		HomeLat: &lat, HomeLon: &lon, State: "VT", Zip: p.zip, MaxDistanceMiles: &maxDist, Budget: &budget,
		FamilyIncome: &income, IntendedMajors: []domain.Major{"computer", "history"}, PreferredSize: "small",
		PreferredSetting: "town",
	})
	require.NoError(t, err)

	err = pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		const swipe = `INSERT INTO swipes (student_id, school_id, direction, counted, time_spent, client_id, response)
VALUES ($1, $2, $3, true, $4, $5, $6::jsonb)`
		response := `{"success":true,"learning_state":{"preference_weights":{"cost_weight":0.61}},"ui_message":"Nice pick, ` + p.name + `"}`
		if _, err := tx.Exec(ctx, swipe, p.id, f.schools[0].ID, "right", 3.5, uuid.NewString(), response); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, swipe, p.id, f.schools[1].ID, "left", nil, nil, nil); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE students SET swipe_count = 2 WHERE id = $1`, p.id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO feedback (student_id, school_id, reason, comment) VALUES ($1, $2, 'wrong_location', $3)`,
			p.id, f.schools[1].ID, p.comment); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO learning_state (student_id, model, weights, last_swipe_id, version)
VALUES ($1, '{"n":2}', '{"cost_weight":0.61,"size_preference":0.2}', 2, 3)`, p.id); err != nil {
			return err
		}
		for i, school := range f.schools[:2] {
			id, err := store.InsertOutbox(ctx, tx, "swipe.recorded", p.id, map[string]any{
				"student_id": p.id, "school_id": school.ID, "direction": "right",
				"timestamp": "2026-01-02T03:04:05Z", "student_name": p.name,
				"data": map[string]any{"email": p.email, "swipe_id": int64(1000 + i)},
			})
			if err != nil {
				return err
			}
			f.outboxIDs = append(f.outboxIDs, id)
		}
		var delivery int64
		if err := tx.QueryRow(ctx, `INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, status, attempts, last_error)
VALUES ($1, 'https://user:pw@hooks.example.org/in?token=secret', 'msg_1', 'swipe.recorded', 'pending', 1, 'HTTP 500')
RETURNING id`, f.outboxIDs[0]).Scan(&delivery); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error) VALUES ($1, 1, 500, 42, 'HTTP 500')`, delivery)
		return err
	})
	require.NoError(t, err)
	_, err = db.SaveCategorySwipe(ctx, p.id, "liberal-arts", "right")
	require.NoError(t, err)
	return f
}

func TestExportStudent(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	p, other := newPerson("11111"), newPerson("22222")
	f := addRightsFixture(t, db, p)
	addRightsFixture(t, db, other)

	ex, err := db.ExportStudent(ctx, p.id)
	require.NoError(t, err)
	assert.Equal(t, p.id, ex.StudentID)
	assert.False(t, ex.Erased)
	assert.False(t, ex.ExportedAt.IsZero())

	pr := ex.Profile
	assert.Equal(t, p.id, pr.ID)
	assert.Equal(t, p.name, *pr.Name)
	assert.Equal(t, p.email, *pr.Email)
	assert.Equal(t, "2027", *pr.GraduationYear)
	assert.Equal(t, 3.71, *pr.GPA)
	assert.Equal(t, 1350, *pr.SAT)
	assert.Equal(t, 30, *pr.ACT)
	assert.Equal(t, 44.4759, *pr.HomeLat)
	assert.Equal(t, "VT", *pr.State)
	assert.Equal(t, p.zip, *pr.Zip)
	assert.Equal(t, 123457, *pr.FamilyIncome)
	assert.Equal(t, 23457, *pr.Budget)
	assert.Equal(t, []string{"computer", "history"}, pr.IntendedMajors)
	assert.Equal(t, "small", *pr.PreferredSize)
	assert.Equal(t, 2, pr.SwipeCount)
	assert.Nil(t, pr.DeletedAt)

	require.Len(t, ex.Swipes, 2)
	assert.Equal(t, f.schools[0].ID, ex.Swipes[0].SchoolID)
	assert.Equal(t, f.schools[0].Name, ex.Swipes[0].SchoolName)
	assert.Equal(t, "right", ex.Swipes[0].Direction)
	assert.Equal(t, 3.5, *ex.Swipes[0].TimeSpent)
	assert.Contains(t, string(ex.Swipes[0].Response), "learning_state")
	assert.Nil(t, ex.Swipes[1].Response)

	require.Len(t, ex.Feedback, 1)
	assert.Equal(t, "wrong_location", ex.Feedback[0].Reason)
	assert.Equal(t, p.comment, *ex.Feedback[0].Comment)

	require.Len(t, ex.CategoryPreferences, 1)
	assert.Equal(t, "liberal-arts", ex.CategoryPreferences[0].CategoryID)

	require.NotNil(t, ex.LearningState)
	assert.JSONEq(t, `{"cost_weight":0.61,"size_preference":0.2}`, string(ex.LearningState.Weights))
	assert.Equal(t, int64(3), ex.LearningState.Version)

	require.Len(t, ex.OutboxEvents, 2)
	assert.Equal(t, f.outboxIDs, []int64{ex.OutboxEvents[0].ID, ex.OutboxEvents[1].ID})
	assert.Contains(t, string(ex.OutboxEvents[0].Payload), p.name)

	require.Len(t, ex.WebhookDeliveries, 1)
	d := ex.WebhookDeliveries[0]
	assert.Equal(t, f.outboxIDs[0], d.OutboxID)
	assert.Equal(t, "https://hooks.example.org/in", d.Endpoint, "no credentials, no query")
	require.Len(t, d.AttemptLog, 1)
	assert.Equal(t, 500, *d.AttemptLog[0].StatusCode)

	// The export is JSON and holds nothing of the other student.
	b, err := json.Marshal(ex)
	require.NoError(t, err)
	assert.NotContains(t, string(b), other.id)
	assert.NotContains(t, string(b), other.name)

	_, err = db.ExportStudent(ctx, uuid.NewString())
	assert.Equal(t, domain.CodeInvalidStudentID, errorCode(err))

	// A student with nothing but a profile exports empty lists, not nulls.
	lone := newStudent(t, db)
	ex, err = db.ExportStudent(ctx, lone)
	require.NoError(t, err)
	b, err = json.Marshal(ex)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	for _, k := range []string{"swipes", "feedback", "category_preferences", "outbox_events", "webhook_deliveries"} {
		assert.Equal(t, []any{}, doc[k], k)
	}
	assert.Nil(t, doc["learning_state"])
}

func errorCode(err error) string {
	var de *domain.Error
	if !errors.As(err, &de) {
		return ""
	}
	return de.Code
}

func TestDeleteStudentErasesPersonalData(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	p, other := newPerson("33333"), newPerson("44444")
	f := addRightsFixture(t, db, p)
	addRightsFixture(t, db, other)
	before, err := db.ExportStudent(ctx, p.id)
	require.NoError(t, err)

	er, err := db.DeleteStudent(ctx, p.id)
	require.NoError(t, err)
	assert.Equal(t, p.id, er.StudentID)
	assert.False(t, er.AlreadyErased)
	assert.False(t, er.ErasedAt.IsZero())
	assert.ElementsMatch(t, []string{"name", "email", "graduation_year", "gpa", "sat", "act", "home_lat", "home_lon",
		"state", "zip", "max_distance_miles", "budget", "family_income", "intended_majors", "preferred_size",
		"preferred_setting"}, er.ProfileFields)
	assert.Equal(t, 2, er.SwipesAnonymised)
	assert.Equal(t, 1, er.Feedback)
	assert.Equal(t, 1, er.CategoryPreferences)
	assert.True(t, er.LearningState)
	assert.Equal(t, 2, er.OutboxEvents)
	assert.Equal(t, 1, er.WebhookDeliveries)

	assertNoPersonalData(t, db, p)
	assertNoTrace(t, db, p.id, before)

	// The profile row is gone too: the export knows no such student.
	assert.Zero(t, count(t, db, `SELECT count(*) FROM students WHERE id = $1`, p.id))
	_, err = db.ExportStudent(ctx, p.id)
	assert.Equal(t, domain.CodeInvalidStudentID, errorCode(err))
	assert.Greater(t, er.Version, int64(0), "the version a tombstone holds")
	assert.Len(t, er.FeedbackIDs, 1, "the feedback rows, for their learn task ids")
	require.Len(t, er.Deliveries, 1, "the deliveries, for their task ids")
	assert.Equal(t, before.WebhookDeliveries[0].OutboxID, er.Deliveries[0].OutboxID)
	assert.Zero(t, count(t, db, `SELECT count(*) FROM webhook_attempts`)-
		count(t, db, `SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id`),
		"no attempt is left without its delivery")

	// Anonymous statistics stay: which schools, which way, which day.
	rows, err := db.Pool().Query(ctx, `SELECT school_id::text, direction, counted, occurred_on::text FROM anonymous_swipes ORDER BY school_id`)
	require.NoError(t, err)
	type stat struct {
		School, Direction string
		Counted           bool
		Day               string
	}
	stats, err := pgx.CollectRows(rows, pgx.RowToStructByPos[stat])
	require.NoError(t, err)
	var want []stat
	for _, sw := range before.Swipes {
		want = append(want, stat{sw.SchoolID, sw.Direction, sw.Counted, sw.OccurredAt.UTC().Format(time.DateOnly)})
	}
	assert.ElementsMatch(t, want, stats)
	assert.Equal(t, f.schools[0].ID, before.Swipes[0].SchoolID)

	// The other student is untouched.
	o, err := db.ExportStudent(ctx, other.id)
	require.NoError(t, err)
	assert.Equal(t, other.name, *o.Profile.Name)
	assert.Equal(t, other.comment, *o.Feedback[0].Comment)
	assert.Len(t, o.Swipes, 2)
	assert.NotNil(t, o.LearningState)
	assert.Contains(t, string(o.OutboxEvents[0].Payload), other.email)
	assert.Len(t, o.WebhookDeliveries, 1)

	// Erasing again finds no such student, and changes nothing.
	_, err = db.DeleteStudent(ctx, p.id)
	assert.Equal(t, domain.CodeInvalidStudentID, errorCode(err))
	assert.Equal(t, 2, count(t, db, `SELECT count(*) FROM anonymous_swipes`))

	_, err = db.DeleteStudent(ctx, uuid.NewString())
	assert.Equal(t, domain.CodeInvalidStudentID, errorCode(err))
}

// assertNoTrace checks that nothing stored links to the erased student:
// the id is in no row of any table, and none of the client
// ids, row ids or times of the swipes of before is in what was kept.
func assertNoTrace(t *testing.T, db *store.Store, id string, before store.StudentExport) {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables
WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, tables, "anonymous_swipes")
	for _, table := range tables {
		q := `SELECT count(*) FROM ` + pgx.Identifier{table}.Sanitize() + ` t WHERE strpos(lower(t::text), $1) > 0`
		assert.Zero(t, count(t, db, q, id), "table %s holds the erased student's id", table)
		for _, sw := range before.Swipes {
			if sw.ClientID != nil {
				assert.Zero(t, count(t, db, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` t WHERE strpos(t::text, $1) > 0`,
					*sw.ClientID), "table %s holds a client id of the erased student", table)
			}
		}
	}
	for _, sw := range before.Swipes {
		assert.Zero(t, count(t, db, `SELECT count(*) FROM swipes WHERE id = $1`, sw.ID), "swipe %d is gone", sw.ID)
	}
	var columns []string
	rows, err = db.Pool().Query(ctx, `SELECT column_name FROM information_schema.columns
WHERE table_schema = 'public' AND table_name = 'anonymous_swipes' ORDER BY ordinal_position`)
	require.NoError(t, err)
	columns, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"id", "school_id", "direction", "interaction_type", "counted", "is_probe", "trigger_feedback",
		"updated_weights", "time_spent", "occurred_on"}, columns, "no column that could hold a student, a client id or a time of day")
}

// assertNoPersonalData searches every row of every table for p's strings.
func assertNoPersonalData(t *testing.T, db *store.Store, p person) {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables
WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, tables, "students")
	for _, table := range tables {
		rows, err := db.Pool().Query(ctx, `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t`)
		require.NoError(t, err)
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		for _, text := range texts {
			lower := strings.ToLower(text)
			for _, s := range []string{p.name, p.email, p.comment} {
				assert.NotContains(t, lower, strings.ToLower(s), "table %s", table)
			}
		}
	}
}
