package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// Students are minors: an operator can export everything the service stores
// about one student (ExportStudent) and erase the student's personal data
// (DeleteStudent). See docs/onboarding.md, "Student data rights".

// StudentExport is everything PostgreSQL holds about one student, as JSON.
// Lists are never null; LearningState is null when the student has none.
type StudentExport struct {
	StudentID  string    `json:"student_id"`
	ExportedAt time.Time `json:"exported_at"`
	// Erased reports that the student's personal data was erased
	// (profile.deleted_at is set); what remains is shown as it is stored.
	Erased              bool                    `json:"erased"`
	Profile             StudentRecord           `json:"profile"`
	Swipes              []SwipeRecord           `json:"swipes"`
	Feedback            []FeedbackRecord        `json:"feedback"`
	CategoryPreferences []CategoryPreference    `json:"category_preferences"`
	LearningState       *LearningStateRecord    `json:"learning_state"`
	OutboxEvents        []OutboxEventRecord     `json:"outbox_events"`
	WebhookDeliveries   []WebhookDeliveryRecord `json:"webhook_deliveries"`
}

// StudentRecord is the students row, every column; null where nothing is stored.
type StudentRecord struct {
	ID               string     `json:"id"`
	Name             *string    `json:"name"`
	Email            *string    `json:"email"`
	GraduationYear   *string    `json:"graduation_year"`
	GPA              *float64   `json:"gpa"`
	SAT              *int       `json:"sat"`
	ACT              *int       `json:"act"`
	HomeLat          *float64   `json:"home_lat"`
	HomeLon          *float64   `json:"home_lon"`
	State            *string    `json:"state"`
	Zip              *string    `json:"zip"`
	MaxDistanceMiles *int       `json:"max_distance_miles"`
	Budget           *int       `json:"budget"`
	FamilyIncome     *int       `json:"family_income"`
	IntendedMajors   []string   `json:"intended_majors"`
	PreferredSize    *string    `json:"preferred_size"`
	PreferredSetting *string    `json:"preferred_setting"`
	SwipeCount       int        `json:"swipe_count"`
	Version          int64      `json:"version"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	DeletedAt        *time.Time `json:"deleted_at"`
}

// SwipeRecord is one interaction of the student with a school.
type SwipeRecord struct {
	ID              int64           `json:"id"`
	SchoolID        string          `json:"school_id"`
	SchoolName      string          `json:"school_name"`
	Direction       string          `json:"direction"`
	InteractionType string          `json:"interaction_type"`
	Counted         bool            `json:"counted"`
	IsProbe         bool            `json:"is_probe"`
	TimeSpent       *float64        `json:"time_spent"`
	ClientID        *string         `json:"client_id"`
	Response        json.RawMessage `json:"response"` // the response stored for retries, null when none
	OccurredAt      time.Time       `json:"occurred_at"`
	CreatedAt       time.Time       `json:"created_at"`
}

// FeedbackRecord is one feedback the student gave on a school.
type FeedbackRecord struct {
	ID         int64     `json:"id"`
	SchoolID   string    `json:"school_id"`
	SchoolName string    `json:"school_name"`
	Reason     string    `json:"reason"`
	Comment    *string   `json:"comment"`
	ClientID   *string   `json:"client_id"`
	OccurredAt time.Time `json:"occurred_at"`
	CreatedAt  time.Time `json:"created_at"`
}

// LearningStateRecord is the student's learned model.
type LearningStateRecord struct {
	// Model is the learned model in its JSON form. The store holds it in
	// its binary form (ModelBinary), whose layout it does not know: the
	// caller renders it (match.DecodeModel) before the export is written.
	Model          json.RawMessage `json:"model"`
	ModelBinary    []byte          `json:"-"`
	Weights        json.RawMessage `json:"weights"`
	LastSwipeID    int64           `json:"last_swipe_id"`
	LastFeedbackID int64           `json:"last_feedback_id"`
	Version        int64           `json:"version"`
	UpdatedAt      time.Time       `json:"updated_at"`
}

// OutboxEventRecord is an event about the student in the outbox.
type OutboxEventRecord struct {
	ID          int64           `json:"id"`
	Topic       string          `json:"topic"`
	Payload     json.RawMessage `json:"payload"`
	CreatedAt   time.Time       `json:"created_at"`
	PublishedAt *time.Time      `json:"published_at"`
}

// WebhookDeliveryRecord is the delivery of an event about the student to
// one subscriber, with its attempts. The endpoint is shown without
// credentials or query string.
type WebhookDeliveryRecord struct {
	ID            int64                  `json:"id"`
	OutboxID      int64                  `json:"outbox_id"`
	Endpoint      string                 `json:"endpoint"`
	WebhookID     string                 `json:"webhook_id"`
	Event         string                 `json:"event"`
	Status        string                 `json:"status"`
	Attempts      int                    `json:"attempts"`
	NextAttemptAt *time.Time             `json:"next_attempt_at"`
	LastError     *string                `json:"last_error"`
	CreatedAt     time.Time              `json:"created_at"`
	UpdatedAt     time.Time              `json:"updated_at"`
	AttemptLog    []WebhookAttemptRecord `json:"attempt_log"`
}

// WebhookAttemptRecord is one attempt of a delivery.
type WebhookAttemptRecord struct {
	Attempt    int       `json:"attempt"`
	StatusCode *int      `json:"status_code"`
	LatencyMS  int       `json:"latency_ms"`
	Error      *string   `json:"error"`
	CreatedAt  time.Time `json:"created_at"`
}

// studentOutboxFilter selects the outbox rows about student $1, through the
// student_id column (outbox_student_idx); every event the service writes
// sets it.
const studentOutboxFilter = `o.student_id = $1::text::uuid`

// ExportStudent returns everything PostgreSQL holds about one student, read
// in one consistent snapshot. An unknown id is INVALID_STUDENT_ID; an
// erased student is exported as erased.
func (s *Store) ExportStudent(ctx context.Context, id string) (StudentExport, error) {
	ex := StudentExport{StudentID: id}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&ex.ExportedAt); err != nil {
				return err
			}
			var err error
			if ex.Profile, err = exportProfile(ctx, tx, id); err != nil {
				return err
			}
			ex.Erased = ex.Profile.DeletedAt != nil
			if ex.Swipes, err = exportSwipes(ctx, tx, id); err != nil {
				return err
			}
			if ex.Feedback, err = exportFeedback(ctx, tx, id); err != nil {
				return err
			}
			if ex.CategoryPreferences, err = categoryPreferences(ctx, tx, id); err != nil {
				return err
			}
			if ex.LearningState, err = exportLearningState(ctx, tx, id); err != nil {
				return err
			}
			if ex.OutboxEvents, err = exportOutbox(ctx, tx, id); err != nil {
				return err
			}
			ex.WebhookDeliveries, err = exportDeliveries(ctx, tx, id)
			return err
		})
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			return StudentExport{}, err
		}
		return StudentExport{}, mapErr(err, "student export")
	}
	return ex, nil
}

func exportProfile(ctx context.Context, tx pgx.Tx, id string) (StudentRecord, error) {
	const q = `
SELECT id::text, name, email, graduation_year, gpa, sat, act, home_lat, home_lon, state, zip,
	max_distance_miles, budget, family_income, intended_majors, preferred_size, preferred_setting,
	swipe_count, version, created_at, updated_at, deleted_at
FROM students WHERE id = $1`
	var (
		r        StudentRecord
		gpa      *float32
		sat, act *int16
	)
	err := tx.QueryRow(ctx, q, id).Scan(&r.ID, &r.Name, &r.Email, &r.GraduationYear, &gpa, &sat, &act,
		&r.HomeLat, &r.HomeLon, &r.State, &r.Zip, &r.MaxDistanceMiles, &r.Budget, &r.FamilyIncome,
		&r.IntendedMajors, &r.PreferredSize, &r.PreferredSetting, &r.SwipeCount, &r.Version,
		&r.CreatedAt, &r.UpdatedAt, &r.DeletedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, domain.StudentNotFound(id)
	}
	if err != nil {
		return r, err
	}
	if gpa != nil {
		g := math.Round(float64(*gpa)*100) / 100 // real keeps ~7 digits; GPAs have two decimals
		r.GPA = &g
	}
	r.SAT, r.ACT = intPtr(sat), intPtr(act)
	if r.IntendedMajors == nil {
		r.IntendedMajors = []string{}
	}
	return r, nil
}

func intPtr(v *int16) *int {
	if v == nil {
		return nil
	}
	i := int(*v)
	return &i
}

func exportSwipes(ctx context.Context, tx pgx.Tx, id string) ([]SwipeRecord, error) {
	const q = `
SELECT w.id, w.school_id::text, coalesce(s.name, ''), w.direction, w.interaction_type, w.counted, w.is_probe,
	w.time_spent, w.client_id, w.response, w.occurred_at, w.created_at
FROM swipes w LEFT JOIN schools s ON s.id = w.school_id
WHERE w.student_id = $1
ORDER BY w.id`
	rows, err := tx.Query(ctx, q, id)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SwipeRecord, error) {
		var (
			r        SwipeRecord
			response []byte
		)
		err := row.Scan(&r.ID, &r.SchoolID, &r.SchoolName, &r.Direction, &r.InteractionType, &r.Counted, &r.IsProbe,
			&r.TimeSpent, &r.ClientID, &response, &r.OccurredAt, &r.CreatedAt)
		r.Response = rawJSON(response)
		return r, err
	})
	return nonNil(out), err
}

func exportFeedback(ctx context.Context, tx pgx.Tx, id string) ([]FeedbackRecord, error) {
	const q = `
SELECT f.id, f.school_id::text, coalesce(s.name, ''), f.reason, f.comment, f.client_id, f.occurred_at, f.created_at
FROM feedback f LEFT JOIN schools s ON s.id = f.school_id
WHERE f.student_id = $1
ORDER BY f.id`
	rows, err := tx.Query(ctx, q, id)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (FeedbackRecord, error) {
		var r FeedbackRecord
		err := row.Scan(&r.ID, &r.SchoolID, &r.SchoolName, &r.Reason, &r.Comment, &r.ClientID, &r.OccurredAt, &r.CreatedAt)
		return r, err
	})
	return nonNil(out), err
}

func exportLearningState(ctx context.Context, tx pgx.Tx, id string) (*LearningStateRecord, error) {
	const q = `
SELECT ` + storedModel + `, weights, last_swipe_id, last_feedback_id, version, updated_at
FROM learning_state WHERE student_id = $1`
	var (
		r              LearningStateRecord
		model, weights []byte
	)
	err := tx.QueryRow(ctx, q, id).Scan(&model, &weights, &r.LastSwipeID, &r.LastFeedbackID, &r.Version, &r.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(model) > 0 && model[0] == '{' { // stored before the binary form
		r.Model = rawJSON(model)
	} else {
		r.ModelBinary = model
	}
	r.Weights = rawJSON(weights)
	return &r, nil
}

// exportOutboxQuery reads the student's events (outbox_student_idx).
const exportOutboxQuery = `
SELECT o.id, o.topic, o.payload, o.created_at, o.published_at
FROM outbox o
WHERE ` + studentOutboxFilter + `
ORDER BY o.id`

func exportOutbox(ctx context.Context, tx pgx.Tx, id string) ([]OutboxEventRecord, error) {
	rows, err := tx.Query(ctx, exportOutboxQuery, id)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutboxEventRecord, error) {
		var (
			r       OutboxEventRecord
			payload []byte
		)
		err := row.Scan(&r.ID, &r.Topic, &payload, &r.CreatedAt, &r.PublishedAt)
		r.Payload = rawJSON(payload)
		return r, err
	})
	return nonNil(out), err
}

// exportDeliveriesQuery reads the deliveries of the student's events (by
// event: their unique index). A delivery whose event the outbox's retention
// deleted holds nothing about the student and is not found.
const exportDeliveriesQuery = `
SELECT d.id, d.outbox_id, d.endpoint_url, d.webhook_id, d.event, d.status, d.attempts, d.next_attempt_at,
	d.last_error, d.created_at, d.updated_at
FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id
WHERE ` + studentOutboxFilter + `
ORDER BY d.id`

func exportDeliveries(ctx context.Context, tx pgx.Tx, id string) ([]WebhookDeliveryRecord, error) {
	rows, err := tx.Query(ctx, exportDeliveriesQuery, id)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WebhookDeliveryRecord, error) {
		var r WebhookDeliveryRecord
		err := row.Scan(&r.ID, &r.OutboxID, &r.Endpoint, &r.WebhookID, &r.Event, &r.Status, &r.Attempts,
			&r.NextAttemptAt, &r.LastError, &r.CreatedAt, &r.UpdatedAt)
		r.Endpoint = domain.RedactURL(r.Endpoint)
		r.LastError = scrubbed(r.LastError)
		r.AttemptLog = []WebhookAttemptRecord{}
		return r, err
	})
	if err != nil || len(out) == 0 {
		return nonNil(out), err
	}
	byID := make(map[int64]int, len(out))
	ids := make([]int64, len(out))
	for i, d := range out {
		byID[d.ID], ids[i] = i, d.ID
	}
	const qa = `
SELECT delivery_id, attempt, status_code, latency_ms, error, created_at
FROM webhook_attempts WHERE delivery_id = ANY($1)
ORDER BY delivery_id, attempt, id`
	arows, err := tx.Query(ctx, qa, ids)
	if err != nil {
		return nil, err
	}
	defer arows.Close()
	for arows.Next() {
		var (
			delivery int64
			a        WebhookAttemptRecord
		)
		if err := arows.Scan(&delivery, &a.Attempt, &a.StatusCode, &a.LatencyMS, &a.Error, &a.CreatedAt); err != nil {
			return nil, err
		}
		a.Error = scrubbed(a.Error)
		d := &out[byID[delivery]]
		d.AttemptLog = append(d.AttemptLog, a)
	}
	return out, arows.Err()
}

// scrubbed is a recorded error as exported: scrubbed again
// (domain.ScrubError), whenever it was written.
func scrubbed(s *string) *string {
	if s == nil {
		return nil
	}
	v := domain.ScrubError(*s)
	return &v
}

func rawJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil // encodes as null
	}
	return json.RawMessage(b)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// StudentErasure reports what DeleteStudent erased and what it kept.
type StudentErasure struct {
	StudentID string `json:"student_id"`
	// AlreadyErased is true when the student's row was one an erasure by
	// an earlier build had kept (personal fields empty, deleted_at set);
	// it is deleted now like any other.
	AlreadyErased bool      `json:"already_erased"`
	ErasedAt      time.Time `json:"erased_at"`
	// Version is the version the student's state would have had next:
	// read models built from an older one must not be stored again.
	Version int64 `json:"version"`
	// ProfileFields are the profile fields that held a value.
	ProfileFields []string `json:"profile_fields"`
	// SwipesAnonymised is how many swipes moved to the anonymous statistics
	// (anonymous_swipes): school, what was done and the day, nothing that
	// links them to the student.
	SwipesAnonymised int `json:"swipes_anonymised"`
	// Deleted rows: feedback (with its comments), category preferences, the
	// learned model, the student's outbox events and their webhook
	// deliveries (pending ones included: nothing more is sent about the
	// student) with their attempts.
	Feedback            int  `json:"feedback"`
	CategoryPreferences int  `json:"category_preferences"`
	LearningState       bool `json:"learning_state"`
	OutboxEvents        int  `json:"outbox_events"`
	WebhookDeliveries   int  `json:"webhook_deliveries"`

	// What the student's queued tasks were made from, so that the caller
	// can delete them by id (tasks.PurgeStudentTasks): the deleted
	// feedback rows and deliveries. Not printed: they are the student's.
	FeedbackIDs []int64          `json:"-"`
	Deliveries  []ErasedDelivery `json:"-"`
}

// ErasedDelivery is a webhook delivery an erasure deleted.
type ErasedDelivery struct {
	OutboxID int64
	Endpoint string
	Replays  int
}

// personalColumns are the students columns DeleteStudent erases, each with
// the value it erases to and a test for "held a value".
var personalColumns = []struct {
	name, erased, held string
}{
	{"name", "NULL", "name IS NOT NULL"},
	{"email", "NULL", "email IS NOT NULL"},
	{"graduation_year", "NULL", "graduation_year IS NOT NULL"},
	{"gpa", "NULL", "gpa IS NOT NULL"},
	{"sat", "NULL", "sat IS NOT NULL"},
	{"act", "NULL", "act IS NOT NULL"},
	{"home_lat", "NULL", "home_lat IS NOT NULL"},
	{"home_lon", "NULL", "home_lon IS NOT NULL"},
	{"state", "NULL", "state IS NOT NULL"},
	{"zip", "NULL", "zip IS NOT NULL"},
	{"max_distance_miles", "NULL", "max_distance_miles IS NOT NULL"},
	{"budget", "NULL", "budget IS NOT NULL"},
	{"family_income", "NULL", "family_income IS NOT NULL"},
	{"intended_majors", "'{}'", "cardinality(intended_majors) > 0"},
	{"preferred_size", "NULL", "preferred_size IS NOT NULL"},
	{"preferred_setting", "NULL", "preferred_setting IS NOT NULL"},
}

// anonymiseSwipes moves the student's swipes to anonymous_swipes: the
// school, the direction and kind, the flags and time spent, and the day
// (UTC) it happened; not the student, the client id, the row id or the
// time of day, which a webhook subscriber holds with the student's id. The
// rows are written in random order, so their new ids say nothing either.
const anonymiseSwipes = `
WITH gone AS (
	DELETE FROM swipes WHERE student_id = $1
	RETURNING school_id, direction, interaction_type, counted, is_probe, trigger_feedback, updated_weights,
		time_spent, occurred_at
), kept AS (
	INSERT INTO anonymous_swipes (school_id, direction, interaction_type, counted, is_probe, trigger_feedback,
		updated_weights, time_spent, occurred_on)
	SELECT school_id, direction, interaction_type, counted, is_probe, trigger_feedback, updated_weights, time_spent,
		(occurred_at AT TIME ZONE 'UTC')::date
	FROM gone ORDER BY random()
	RETURNING 1
)
SELECT count(*) FROM kept`

// lockEvents locks the student's outbox rows. It is a statement of its
// own: a relay that holds some of them (publishing them) is waited for, and
// the next statement, with a snapshot taken after that, sees the
// deliveries it wrote.
const lockEvents = `SELECT id FROM outbox WHERE student_id = $1 FOR UPDATE`

// deleteEvents deletes the outbox rows $1 with their webhook deliveries
// and attempts (the attempts first within the statement, which the foreign
// keys check at its end), and returns each deleted delivery, with the
// counts of deleted events and deliveries as the first row's.
const deleteEvents = `
WITH d AS (
	SELECT id FROM webhook_deliveries WHERE outbox_id = ANY($1) FOR UPDATE
), a AS (
	DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM d)
), dd AS (
	DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM d) RETURNING outbox_id, endpoint_url, replays
), de AS (
	DELETE FROM outbox WHERE id = ANY($1) RETURNING 1
)
SELECT outbox_id, endpoint_url, replays FROM dd
UNION ALL
SELECT -1, (SELECT count(*) FROM de)::text, 0`

// DeleteStudent erases a student for good, in one transaction, keeping
// only anonymous statistics:
//
//   - swipes move to anonymous_swipes (anonymiseSwipes): nothing there
//     links them to the student;
//   - feedback, category preferences and the learned model are deleted;
//   - the student's outbox events are deleted with their webhook
//     deliveries and attempts;
//   - the profile row is deleted: no row of any table holds the student's
//     id afterwards.
//
// So onboarding again with the same id starts an empty profile: no swipe,
// feedback, learned weight or sync history of before comes back. An
// unknown id (never onboarded, or erased already) is INVALID_STUDENT_ID.
// Redis read models and queued tasks are not touched here; the caller
// drops them (the erasure package).
func (s *Store) DeleteStudent(ctx context.Context, id string) (StudentErasure, error) {
	er := StudentErasure{StudentID: id, ProfileFields: []string{}, FeedbackIDs: []int64{}, Deliveries: []ErasedDelivery{}}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		held := make([]string, len(personalColumns))
		for i, c := range personalColumns {
			held[i] = fmt.Sprintf("CASE WHEN %s THEN '%s' END", c.held, c.name)
		}
		lock := `SELECT deleted_at IS NOT NULL, coalesce(deleted_at, now()), version + 1,
	array_remove(ARRAY[` + strings.Join(held, ", ") + `]::text[], NULL)
FROM students WHERE id = $1 FOR UPDATE`
		if err := tx.QueryRow(ctx, lock, id).Scan(&er.AlreadyErased, &er.ErasedAt, &er.Version, &er.ProfileFields); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return domain.StudentNotFound(id)
			}
			return err
		}
		if err := tx.QueryRow(ctx, anonymiseSwipes, id).Scan(&er.SwipesAnonymised); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, lockEvents, id)
		if err != nil {
			return err
		}
		events, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(events) > 0 {
			rows, err = tx.Query(ctx, deleteEvents, events)
			if err != nil {
				return err
			}
			for rows.Next() {
				var d ErasedDelivery
				if err := rows.Scan(&d.OutboxID, &d.Endpoint, &d.Replays); err != nil {
					rows.Close()
					return err
				}
				if d.OutboxID < 0 {
					er.OutboxEvents, _ = strconv.Atoi(d.Endpoint)
					continue
				}
				er.Deliveries = append(er.Deliveries, d)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			er.WebhookDeliveries = len(er.Deliveries)
		}
		rows, err = tx.Query(ctx, `DELETE FROM feedback WHERE student_id = $1 RETURNING id`, id)
		if err != nil {
			return err
		}
		if er.FeedbackIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		er.Feedback = len(er.FeedbackIDs)
		tag, err := tx.Exec(ctx, `DELETE FROM category_preferences WHERE student_id = $1`, id)
		if err != nil {
			return err
		}
		er.CategoryPreferences = int(tag.RowsAffected())
		if tag, err = tx.Exec(ctx, `DELETE FROM learning_state WHERE student_id = $1`, id); err != nil {
			return err
		}
		er.LearningState = tag.RowsAffected() > 0
		_, err = tx.Exec(ctx, `DELETE FROM students WHERE id = $1`, id)
		return err
	})
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			return StudentErasure{}, err
		}
		return StudentErasure{}, mapErr(err, "student erasure")
	}
	if er.FeedbackIDs == nil {
		er.FeedbackIDs = []int64{}
	}
	return er, nil
}
