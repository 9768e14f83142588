package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
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
	Model          json.RawMessage `json:"model"`
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

// studentOutboxFilter selects the outbox rows about student $1: its own
// events and any event whose payload names it.
const studentOutboxFilter = `(o.student_id = $1::text::uuid OR strpos(lower(o.payload::text), lower($1::text)) > 0)`

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
			spent    *float32
			response []byte
		)
		err := row.Scan(&r.ID, &r.SchoolID, &r.SchoolName, &r.Direction, &r.InteractionType, &r.Counted, &r.IsProbe,
			&spent, &r.ClientID, &response, &r.OccurredAt, &r.CreatedAt)
		if spent != nil {
			v := float64(*spent)
			r.TimeSpent = &v
		}
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
SELECT model, weights, last_swipe_id, last_feedback_id, version, updated_at
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
	r.Model, r.Weights = rawJSON(model), rawJSON(weights)
	return &r, nil
}

func exportOutbox(ctx context.Context, tx pgx.Tx, id string) ([]OutboxEventRecord, error) {
	q := `
SELECT o.id, o.topic, o.payload, o.created_at, o.published_at
FROM outbox o
WHERE ` + studentOutboxFilter + `
ORDER BY o.id`
	rows, err := tx.Query(ctx, q, id)
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

func exportDeliveries(ctx context.Context, tx pgx.Tx, id string) ([]WebhookDeliveryRecord, error) {
	q := `
SELECT d.id, d.outbox_id, d.endpoint_url, d.webhook_id, d.event, d.status, d.attempts, d.next_attempt_at,
	d.last_error, d.created_at, d.updated_at
FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id
WHERE ` + studentOutboxFilter + `
ORDER BY d.id`
	rows, err := tx.Query(ctx, q, id)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WebhookDeliveryRecord, error) {
		var r WebhookDeliveryRecord
		err := row.Scan(&r.ID, &r.OutboxID, &r.Endpoint, &r.WebhookID, &r.Event, &r.Status, &r.Attempts,
			&r.NextAttemptAt, &r.LastError, &r.CreatedAt, &r.UpdatedAt)
		r.Endpoint = endpointWithoutSecrets(r.Endpoint)
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
		d := &out[byID[delivery]]
		d.AttemptLog = append(d.AttemptLog, a)
	}
	return out, arows.Err()
}

// endpointWithoutSecrets drops the user info, query and fragment of a
// subscriber URL: they may carry the subscriber's credentials.
func endpointWithoutSecrets(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	return u.String()
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
	// AlreadyErased is true when the student had been erased before and had
	// not onboarded again; erasing again is harmless.
	AlreadyErased bool      `json:"already_erased"`
	ErasedAt      time.Time `json:"erased_at"`
	// Version is the student's version after the erasure: read models built
	// from an older one must not be stored again.
	Version int64 `json:"version"`
	// ProfileFields are the profile fields that held a value and now hold
	// none.
	ProfileFields []string `json:"profile_fields"`
	// FeedbackComments is how many free-text feedback comments were erased.
	FeedbackComments int `json:"feedback_comments"`
	// SwipeResponses is how many stored swipe responses (kept for retries;
	// they carry the student's learning state) were erased.
	SwipeResponses int `json:"swipe_responses"`
	// LearningState reports that the learned model was deleted.
	LearningState bool `json:"learning_state"`
	// OutboxEvents is how many event payloads were reduced to their ids.
	OutboxEvents int `json:"outbox_events"`
	// What stays, without personal data: interactions (school, direction,
	// kind, times), feedback reasons and category preferences.
	SwipesKept              int `json:"swipes_kept"`
	FeedbackKept            int `json:"feedback_kept"`
	CategoryPreferencesKept int `json:"category_preferences_kept"`
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

// DeleteStudent erases a student's personal data in one transaction and
// keeps anonymous statistics:
//
//   - the profile: every personal field (name, email, graduation year, GPA,
//     test scores, home coordinates, state, ZIP, distance, budget, family
//     income, intended majors, preferred size and setting) is set to null
//     (majors to an empty list); the row stays, with deleted_at set, its
//     swipe count and its version bumped so read models built before are
//     superseded;
//   - swipes stay (school, direction, kind, probe, time spent, times,
//     client id), without the response stored for retries;
//   - feedback stays (school, reason, times) without its free-text comment;
//   - category preferences stay;
//   - the learned model (learning_state) is deleted;
//   - outbox events about the student keep only their ids: every JSON key
//     other than "id" and "*_id" is removed from the payload.
//
// Erasing an erased student again is harmless and keeps the first
// erased_at. An unknown id is INVALID_STUDENT_ID. Redis read models are
// not touched here; the caller drops them (see cmd/matchctl students).
func (s *Store) DeleteStudent(ctx context.Context, id string) (StudentErasure, error) {
	er := StudentErasure{StudentID: id, ProfileFields: []string{}}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		held := make([]string, len(personalColumns))
		for i, c := range personalColumns {
			held[i] = fmt.Sprintf("CASE WHEN %s THEN '%s' END", c.held, c.name)
		}
		lock := `SELECT deleted_at IS NOT NULL, array_remove(ARRAY[` + strings.Join(held, ", ") + `]::text[], NULL)
FROM students WHERE id = $1 FOR UPDATE`
		if err := tx.QueryRow(ctx, lock, id).Scan(&er.AlreadyErased, &er.ProfileFields); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return domain.StudentNotFound(id)
			}
			return err
		}
		sets := make([]string, len(personalColumns))
		for i, c := range personalColumns {
			sets[i] = c.name + " = " + c.erased
		}
		erase := `UPDATE students SET ` + strings.Join(sets, ", ") + `,
	version = version + 1, updated_at = now(), deleted_at = coalesce(deleted_at, now())
WHERE id = $1
RETURNING deleted_at, version`
		if err := tx.QueryRow(ctx, erase, id).Scan(&er.ErasedAt, &er.Version); err != nil {
			return err
		}

		tag, err := tx.Exec(ctx, `UPDATE feedback SET comment = NULL WHERE student_id = $1 AND comment IS NOT NULL`, id)
		if err != nil {
			return err
		}
		er.FeedbackComments = int(tag.RowsAffected())
		if tag, err = tx.Exec(ctx, `UPDATE swipes SET response = NULL WHERE student_id = $1 AND response IS NOT NULL`, id); err != nil {
			return err
		}
		er.SwipeResponses = int(tag.RowsAffected())
		if tag, err = tx.Exec(ctx, `DELETE FROM learning_state WHERE student_id = $1`, id); err != nil {
			return err
		}
		er.LearningState = tag.RowsAffected() > 0
		if er.OutboxEvents, err = scrubOutbox(ctx, tx, id); err != nil {
			return err
		}

		const kept = `SELECT
	(SELECT count(*) FROM swipes WHERE student_id = $1),
	(SELECT count(*) FROM feedback WHERE student_id = $1),
	(SELECT count(*) FROM category_preferences WHERE student_id = $1)`
		return tx.QueryRow(ctx, kept, id).Scan(&er.SwipesKept, &er.FeedbackKept, &er.CategoryPreferencesKept)
	})
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			return StudentErasure{}, err
		}
		return StudentErasure{}, mapErr(err, "student erasure")
	}
	return er, nil
}

// scrubOutbox reduces the payload of every outbox event about the student
// to its ids and reports how many payloads changed.
func scrubOutbox(ctx context.Context, tx pgx.Tx, id string) (int, error) {
	q := `SELECT o.id, o.payload FROM outbox o WHERE ` + studentOutboxFilter + ` ORDER BY o.id FOR UPDATE`
	rows, err := tx.Query(ctx, q, id)
	if err != nil {
		return 0, err
	}
	type change struct {
		id      int64
		payload []byte
	}
	var changes []change
	for rows.Next() {
		var (
			rowID   int64
			payload []byte
		)
		if err := rows.Scan(&rowID, &payload); err != nil {
			rows.Close()
			return 0, err
		}
		scrubbed, changed, err := idsOnly(payload)
		if err != nil {
			rows.Close()
			return 0, fmt.Errorf("outbox row %d: %w", rowID, err)
		}
		if changed {
			changes = append(changes, change{rowID, scrubbed})
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, c := range changes {
		if _, err := tx.Exec(ctx, `UPDATE outbox SET payload = $2::jsonb WHERE id = $1`, c.id, string(c.payload)); err != nil {
			return 0, err
		}
	}
	return len(changes), nil
}

// idsOnly keeps, of a JSON payload, the members named "id" or ending in
// "_id" whose values are strings or numbers, and those named "ids" or
// ending in "_ids" whose values are lists of strings or numbers, at any
// depth of nested objects; everything else goes. A payload that is not an
// object becomes {}. changed is false when nothing was removed, so
// scrubbing twice changes nothing.
func idsOnly(payload []byte) (out []byte, changed bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, err
	}
	obj, isObj := v.(map[string]any)
	kept, removed := keepIDs(obj)
	if out, err = json.Marshal(kept); err != nil {
		return nil, false, err
	}
	return out, removed || !isObj, nil
}

// keepIDs returns the id members of obj and whether anything was removed.
func keepIDs(obj map[string]any) (map[string]any, bool) {
	out := make(map[string]any, len(obj))
	removed := false
	for k, v := range obj {
		switch val := v.(type) {
		case map[string]any:
			kept, r := keepIDs(val)
			removed = removed || r
			if len(kept) > 0 {
				out[k] = kept
			} else if len(val) > 0 {
				removed = true
			}
			continue
		case string, json.Number:
			if k == "id" || strings.HasSuffix(k, "_id") {
				out[k] = val
				continue
			}
		case []any:
			if (k == "ids" || strings.HasSuffix(k, "_ids")) && scalarList(val) {
				out[k] = val
				continue
			}
		}
		removed = true
	}
	return out, removed
}

func scalarList(vs []any) bool {
	for _, v := range vs {
		switch v.(type) {
		case string, json.Number:
		default:
			return false
		}
	}
	return true
}
