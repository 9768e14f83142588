package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// studentKeyCount is how many Redis keys the service writes for a student:
// four read models, a feed left staged by a failed write and one
// rate-limit count per group.
const studentKeyCount = 10

// studentsEnv is a database with two students and a Redis DB holding
// per-student keys of both.
type studentsEnv struct {
	dbURL, redisURL string
	st              *store.Store
	rdb             *redis.Client
	student, other  string
	school          string
}

func newStudentsEnv(t *testing.T) *studentsEnv {
	t.Helper()
	ctx := context.Background()
	e := &studentsEnv{
		dbURL:    testutil.NewDBURL(t),
		redisURL: testutil.RedisURLFor(t, testutil.RedisDBMatchctl),
		rdb:      testutil.NewRedis(t, testutil.RedisDBMatchctl),
		student:  uuid.NewString(),
		other:    uuid.NewString(),
	}
	pool, err := store.Open(ctx, e.dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	e.st = store.New(pool)

	schools := catalog.Generate(2, 1)
	_, err = e.st.UpsertSchools(ctx, schools)
	require.NoError(t, err)
	e.school = schools[0].ID
	for i, id := range []string{e.student, e.other} {
		gpa, income := 3.4, 64000+i
		lat, lon := 40.0, -83.0
		_, _, err := e.st.SaveStudent(ctx, domain.Student{
			ID: id, Name: []string{"Marisol Ferreira-Okafor", "Other Student"}[i], Email: []string{"marisol@example.com", "other@example.com"}[i],
			GraduationYear: "2027", GPA: &gpa, HomeLat: &lat, HomeLon: &lon, State: "OH", Zip: "43210", FamilyIncome: &income,
		})
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO swipes (student_id, school_id, direction, counted) VALUES ($1, $2, 'right', true)`, id, e.school)
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO feedback (student_id, school_id, reason, comment) VALUES ($1, $2, 'too_expensive', 'we cannot afford it, love Marisol')`, id, e.school)
		require.NoError(t, err)
		_, err = e.st.SaveCategorySwipe(ctx, id, "community-college", "right")
		require.NoError(t, err)

		// The service's per-student keys: feed, probes, cooldowns, recent
		// swipes, the rate limits of every group.
		require.NoError(t, e.rdb.HSet(ctx, cache.FeedKey(id), "sv", 3).Err())
		// A feed left staged by a Put that failed half-way.
		require.NoError(t, e.rdb.HSet(ctx, cache.StagedFeedKey(id), "sv", 4).Err())
		for _, key := range []string{cache.ProbesKey(id), cache.ShownKey(id), cache.SwipedKey(id)} {
			require.NoError(t, e.rdb.ZAdd(ctx, key, redis.Z{Score: 1, Member: e.school}).Err())
		}
		for _, key := range ratelimit.StudentKeys(id) {
			require.NoError(t, e.rdb.Set(ctx, key, "1", time.Hour).Err())
		}
	}
	require.Len(t, studentKeys(e.student), studentKeyCount)
	require.NoError(t, e.rdb.Set(ctx, "rm:v2:catalog", "1", 0).Err())
	return e
}

func (e *studentsEnv) getenv(redisURL string) func(string) string {
	return func(k string) string {
		switch k {
		case "DATABASE_URL":
			return e.dbURL
		case "REDIS_URL":
			return redisURL
		}
		return ""
	}
}

func (e *studentsEnv) run(t *testing.T, args ...string) (int, string, string) {
	return e.runWithRedis(t, e.redisURL, args...)
}

func (e *studentsEnv) runWithRedis(t *testing.T, redisURL string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, args, e.getenv(redisURL), &out, &errOut)
	return code, out.String(), errOut.String()
}

func (e *studentsEnv) keys(t *testing.T) []string {
	t.Helper()
	keys, err := e.rdb.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	return keys
}

func TestStudentsExport(t *testing.T) {
	e := newStudentsEnv(t)
	code, out, errOut := e.run(t, "students", "export", e.student)
	require.Equal(t, 0, code, "stderr: %s", errOut)

	var ex store.StudentExport
	require.NoError(t, json.Unmarshal([]byte(out), &ex))
	assert.Equal(t, e.student, ex.StudentID)
	assert.False(t, ex.Erased)
	assert.Equal(t, "Marisol Ferreira-Okafor", *ex.Profile.Name)
	assert.Equal(t, "marisol@example.com", *ex.Profile.Email)
	assert.Equal(t, 64000, *ex.Profile.FamilyIncome)
	require.Len(t, ex.Swipes, 1)
	assert.Equal(t, e.school, ex.Swipes[0].SchoolID)
	require.Len(t, ex.Feedback, 1)
	assert.Equal(t, "we cannot afford it, love Marisol", *ex.Feedback[0].Comment)
	require.Len(t, ex.CategoryPreferences, 1)
	assert.NotContains(t, out, e.other)

	// An id in upper case is the same student.
	code, _, errOut = e.run(t, "students", "export", strings.ToUpper(e.student))
	assert.Equal(t, 0, code, errOut)
}

// The learned model is stored in its binary form and exported in its JSON
// form; one a build from before the binary form stored (as JSON, the newer
// of the two when both are there) is exported as stored; one the service
// cannot decode is exported as its bytes.
func TestStudentsExportLearnedModel(t *testing.T) {
	ctx := context.Background()
	e := newStudentsEnv(t)
	m := match.NewModel(match.DefaultWeights())
	stored, err := m.MarshalBinary()
	require.NoError(t, err)
	want, err := json.Marshal(m)
	require.NoError(t, err)

	for _, c := range []struct {
		name      string
		json, bin *string
		want      string
	}{
		{"binary", nil, ptr(string(stored)), string(want)},
		{"JSON, saved by an older build", ptr(`{"version": 1}`), ptr(string(stored)), `{"version": 1}`},
		{"binary of another version", nil, ptr("M\xff"), `{"undecoded":"Tf8=","error":"learning model: unsupported version 255 (want ` +
			strconv.Itoa(match.ModelVersion) + `)"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var bin []byte
			if c.bin != nil {
				bin = []byte(*c.bin)
			}
			_, err := e.st.Pool().Exec(ctx, `INSERT INTO learning_state (student_id, model, model_bin, weights) VALUES ($1, $2::jsonb, $3, '{}')
ON CONFLICT (student_id) DO UPDATE SET model = excluded.model, model_bin = excluded.model_bin`, e.student, c.json, bin)
			require.NoError(t, err)
			code, out, errOut := e.run(t, "students", "export", e.student)
			require.Equal(t, 0, code, "stderr: %s", errOut)
			var ex store.StudentExport
			require.NoError(t, json.Unmarshal([]byte(out), &ex))
			require.NotNil(t, ex.LearningState)
			assert.JSONEq(t, c.want, string(ex.LearningState.Model))
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestStudentsDelete(t *testing.T) {
	ctx := context.Background()
	e := newStudentsEnv(t)
	code, out, errOut := e.run(t, "students", "delete", e.student, "--yes")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "erased student "+e.student)
	assert.Contains(t, out, "profile deleted; fields that held a value: name, email, graduation_year, gpa, home_lat, home_lon, state, zip, family_income")
	assert.Contains(t, out, "swipes kept as anonymous statistics (no student, client id or time of day): 1")
	assert.Contains(t, out, "deleted: 1 feedback, 1 category preferences, learned model no, 0 outbox events, 0 webhook deliveries")
	assert.Contains(t, out, fmt.Sprintf("redis: dropped %d read-model keys tagged {student:%s}", studentKeyCount, e.student))
	assert.Contains(t, out, "queue: deleted 0 tasks about the student")
	t.Logf("%s", out)

	// Postgres: nothing of the student's, the swipe kept as an anonymous
	// statistic.
	for _, q := range []string{`SELECT count(*) FROM students WHERE id = $1`, `SELECT count(*) FROM swipes WHERE student_id = $1`,
		`SELECT count(*) FROM feedback WHERE student_id = $1`} {
		var n int
		require.NoError(t, e.st.Pool().QueryRow(ctx, q, e.student).Scan(&n))
		assert.Zero(t, n, q)
	}
	var anonymous int
	require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM anonymous_swipes WHERE school_id = $1`, e.school).Scan(&anonymous))
	assert.Equal(t, 1, anonymous)

	// Redis: the student's keys are gone but for the feed tombstone, which
	// holds two version numbers and expires; the other student's and shared
	// keys stay.
	tombstone := "rm:v2:{student:" + e.student + "}:feed"
	fields, err := e.rdb.HGetAll(ctx, tombstone).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"cv", "lv", "sv"}, slices.Sorted(maps.Keys(fields)), "tombstone only")
	ttl, err := e.rdb.PTTL(ctx, tombstone).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Duration(0))
	var keys []string
	for _, k := range e.keys(t) {
		if k != tombstone {
			keys = append(keys, k)
			assert.NotContains(t, strings.ToLower(k), e.student)
		}
	}
	assert.ElementsMatch(t, append(studentKeys(e.other), "rm:v2:catalog"), keys)

	// The other student is untouched.
	other, err := e.st.Student(ctx, e.other)
	require.NoError(t, err)
	assert.Equal(t, "Other Student", other.Name)

	// The export of an erased student finds no such student.
	code, out, errOut = e.run(t, "students", "export", e.student)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "student "+e.student+" not found")

	// Deleting again finds no such student, and drops what Redis holds
	// under the id all the same: the tombstone.
	code, out, errOut = e.run(t, "students", "delete", "--yes", e.student)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "student "+e.student+" not found")
	assert.Contains(t, out, "is not in PostgreSQL (never onboarded, or erased already)")
	assert.Contains(t, out, "redis: dropped 1 read-model keys")
	for _, k := range e.keys(t) {
		assert.NotContains(t, strings.ToLower(k), e.student)
	}
}

func TestStudentsDeleteWithRedisDown(t *testing.T) {
	ctx := context.Background()
	e := newStudentsEnv(t)
	code, out, errOut := e.runWithRedis(t, "redis://127.0.0.1:1/0", "students", "delete", e.student, "--yes")
	require.Equal(t, 0, code, "the erasure is done; stderr: %s", errOut)
	assert.Contains(t, out, "erased student "+e.student)
	assert.Contains(t, out, "expire by their TTL")
	assert.Contains(t, errOut, "warning: Redis unreachable")

	_, err := e.st.Student(ctx, e.student)
	assert.Error(t, err, "erased in PostgreSQL")
	assert.Len(t, e.keys(t), 2*studentKeyCount+1, "nothing dropped")

	// Once Redis is back, running delete again drops the keys.
	code, out, errOut = e.run(t, "students", "delete", e.student, "--yes")
	assert.Equal(t, 1, code, "no such student in PostgreSQL any more; stderr: %s", errOut)
	assert.Contains(t, out, fmt.Sprintf("redis: dropped %d read-model keys", studentKeyCount))
}

func TestStudentsErrors(t *testing.T) {
	e := newStudentsEnv(t)
	unknown := uuid.NewString()
	for _, sub := range []string{"export", "delete"} {
		args := []string{"students", sub, unknown}
		if sub == "delete" {
			args = append(args, "--yes")
		}
		code, out, errOut := e.run(t, args...)
		assert.Equal(t, 1, code, sub)
		if sub == "export" {
			assert.Empty(t, out, sub)
		} else {
			assert.Contains(t, out, "redis: dropped 0 read-model keys", "delete drops what Redis may hold under the id")
		}
		assert.Equal(t, "matchctl students: student "+unknown+" not found\n", errOut, sub)
	}
	assert.Len(t, e.keys(t), 2*studentKeyCount+1, "an unknown id touches nothing")

	for _, args := range [][]string{
		{"students"},
		{"students", "show", e.student},
		{"students", "export"},
		{"students", "export", "not-a-uuid"},
		{"students", "export", e.student, e.other},
		{"students", "export", e.student, "--yes"},
		{"students", "delete", e.student, "--force"},
	} {
		code, _, errOut := e.run(t, args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.Contains(t, errOut, "usage: matchctl students export|delete|explain ID [--yes] [--limit 20] [--json]", "%v", args)
	}

	if isTerminal(os.Stdin) {
		t.Log("stdin is a terminal; the --yes requirement is not checked here")
		return
	}
	code, _, errOut := e.run(t, "students", "delete", e.student)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--yes is required when stdin is not a terminal")
	s, err := e.st.Student(context.Background(), e.student)
	require.NoError(t, err)
	assert.Nil(t, s.DeletedAt, "nothing erased without confirmation")
}
