package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog/bundled"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/tools/inspect"
)

// explainEnv is a database with the bundled catalogue and one student who
// chose a category, swiped 13 schools and has a learned model folded from
// them, and this package's Redis DB.
type explainEnv struct {
	getenv  func(string) string
	student string
	model   match.Model
	prior   match.Weights
	profile match.Profile
	cat     *match.Catalog
}

func newExplainEnv(t *testing.T) explainEnv {
	t.Helper()
	ctx := context.Background()
	dbURL := testutil.NewDBURL(t)
	testutil.NewRedis(t, testutil.RedisDBMatchctl) // flushed before and after
	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": testutil.RedisURLFor(t, testutil.RedisDBMatchctl)}
	e := explainEnv{getenv: func(k string) string { return env[k] }, student: uuid.NewString()}

	code, _, errOut := runSeedCmd(t, dbURL, "seed")
	require.Equal(t, 0, code, errOut)
	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	sat, lat, lon, budget, dist := 1350, 39.95, -75.16, 30000, 500
	student, _, err := st.SaveStudent(ctx, domain.Student{ID: e.student, Name: "Ada", Email: "ada@example.com",
		GraduationYear: "2027", SAT: &sat, HomeLat: &lat, HomeLon: &lon, State: "PA", Budget: &budget,
		MaxDistanceMiles: &dist, IntendedMajors: []domain.Major{"computer"}})
	require.NoError(t, err)
	_, err = st.SaveCategorySwipe(ctx, e.student, "liberal-arts", "right")
	require.NoError(t, err)

	// 13 swipes and the model the worker would fold from them.
	schools, err := bundled.Schools()
	require.NoError(t, err)
	cat := match.NewCatalog(schools)
	p, prior := match.CategoryStart(match.NewProfile(student),
		[]match.CategoryPreference{match.CategoryPreferenceFrom("liberal-arts", "right")})
	e.prior, e.model, e.profile, e.cat = prior, match.NewModel(prior), p, cat
	for i := range 13 {
		dir, d := "left", match.Dislike
		if i%3 == 0 {
			dir, d = "right", match.Like
		}
		_, err := pool.Exec(ctx, `INSERT INTO swipes (student_id, school_id, direction, counted) VALUES ($1, $2, $3, true)`,
			e.student, schools[i*50].ID, dir)
		require.NoError(t, err)
		e.model, _ = e.model.Observe(p, cat, match.SwipeObservation(i*50, d))
	}
	model, err := e.model.MarshalBinary()
	require.NoError(t, err)
	weights, err := json.Marshal(e.model.Weights().Map())
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO learning_state (student_id, model_bin, weights) VALUES ($1, $2, $3)`, e.student, model, weights)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE students SET swipe_count = 13, version = version + 1 WHERE id = $1`, e.student)
	require.NoError(t, err)
	return e
}

func (e explainEnv) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, e.getenv, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestStudentsExplainJSON(t *testing.T) {
	e := newExplainEnv(t)
	code, out, errOut := e.run(t, "students", "explain", e.student, "--json")
	require.Equal(t, 0, code, errOut)
	var ex inspect.Explanation
	require.NoError(t, json.Unmarshal([]byte(out), &ex), out)

	assert.Equal(t, e.student, ex.StudentID)
	assert.Equal(t, "refinement", ex.Phase)
	assert.Equal(t, 13, ex.SwipeCount)
	assert.True(t, ex.Learned)
	assert.Equal(t, 13, ex.ModelSwipes)
	assert.Equal(t, []inspect.CategoryPreference{{CategoryID: "liberal-arts", Direction: "like"}}, ex.Categories)
	want, sds := e.model.Weights().Map(), e.model.WeightUncertainty().Map()
	require.Len(t, ex.Weights, len(want))
	var learnedSD, priorSD float64
	priorSDs := match.NewModel(e.prior).WeightUncertainty().Map()
	for k, v := range want {
		assert.InDelta(t, v, ex.Weights[k].Value, 1e-4, k)
		assert.InDelta(t, sds[k], ex.Weights[k].Uncertainty, 1e-4, k)
		learnedSD += ex.Weights[k].Uncertainty
		priorSD += priorSDs[k]
	}
	assert.Less(t, learnedSD, priorSD, "13 swipes made the model surer than its prior")
	// What was learned beyond the weights: the residual fitted on the 13
	// schools, and the preferences it reads as.
	assert.Equal(t, 13, ex.ResidualSchools)
	require.Len(t, ex.Residual, len(match.ResidualFeatureNames()))
	for k, v := range e.model.Residual() {
		assert.InDelta(t, v, ex.Residual[k], 1e-4, k)
	}
	wantPrefs := []match.Learned{}
	for _, l := range e.model.LearnedPreferences(e.profile, e.cat) {
		wantPrefs = append(wantPrefs, match.Learned{Key: l.Key, Phrase: l.Phrase, Text: l.Text, Strength: l.Strength})
	}
	assert.Equal(t, wantPrefs, ex.LearnedPreferences, "as JSON carries them")

	f := ex.Feed
	assert.Equal(t, "built", f.Source, "nothing was stored: ranked now and stored")
	assert.Equal(t, 13, f.TotalSwipes)
	assert.Equal(t, "refinement", f.Phase)
	require.Len(t, f.Items, 20)
	kinds := map[string]int{}
	for i, it := range f.Items {
		assert.Equal(t, i+1, it.Position)
		assert.NotEmpty(t, it.Name)
		assert.NotEmpty(t, it.Reasons, "item %d has reasons", i+1)
		assert.Equal(t, query.IsProbePosition(13, i+1), it.Slot == inspect.SlotProbe, "item %d: %s", i+1, it.Slot)
		kinds[it.Slot]++
	}
	assert.Positive(t, kinds[inspect.SlotRanked])
	assert.Equal(t, 5, kinds[inspect.SlotProbe], "positions 3, 7, 11, 15, 19 after 13 swipes")
	t.Logf("slots of the first 20: %v", kinds)

	// The second time the stored feed is read, the same.
	// Flags may stand anywhere among the arguments, as for every command.
	code, out, errOut = e.run(t, "students", "--json", "explain", "--limit", "5", e.student)
	require.Equal(t, 0, code, errOut)
	var again inspect.Explanation
	require.NoError(t, json.Unmarshal([]byte(out), &again))
	assert.Equal(t, "stored", again.Feed.Source)
	assert.Equal(t, f.Items[:5], again.Feed.Items)
	assert.Equal(t, f.BuiltAt, again.Feed.BuiltAt)
}

func TestStudentsExplainText(t *testing.T) {
	e := newExplainEnv(t)
	code, out, errOut := e.run(t, "students", "explain", e.student, "--limit", "8")
	require.Equal(t, 0, code, errOut)
	t.Logf("\n%s", out)
	assert.Contains(t, out, "student "+e.student+": refinement, 13 swipes (progress 0.42)\n")
	assert.Contains(t, out, "learned model: 13 swipes, 0 other signals, 0 feedback reasons folded in\n")
	assert.Contains(t, out, "onboarding categories: liberal-arts like\n")
	assert.Contains(t, out, "\nlearned beyond the weights")
	assert.Regexp(t, `\n  cost_weight +0\.\d{3} ± 0\.\d{3}\n`, out)
	assert.Regexp(t, `\nfeed \(built, built \S+ from student version \d+ at 13 swipes, \S+\): first 8 of \d+ schools\n`, out)
	assert.Regexp(t, `\n3 +probe +0\.\d{4} `, out, "the third item is a probe after 13 swipes")
	lines := strings.Split(strings.TrimSpace(out[strings.Index(out, "#  slot"):]), "\n")
	assert.Len(t, lines, 1+8)
	assert.NotContains(t, errOut, "catalogue loaded", "routine logs stay out of the answer")
}

func TestStudentsExplainUsageAndErrors(t *testing.T) {
	e := newExplainEnv(t)
	code, out, _ := e.run(t, "students", "explain", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: matchctl students export|delete|explain ID [--yes] [--limit 20] [--json]")
	assert.Contains(t, out, "  --json\n      explain: print the explanation as JSON")
	assert.Contains(t, out, "  --limit INT\n      explain: items of the feed to show (1-100) (default 20)")

	for _, args := range [][]string{
		{"students", "explain"},
		{"students", "explain", "not-a-uuid"},
		{"students", "explain", e.student, "--limit", "0"},
		{"students", "explain", e.student, "--limit", "101"},
		{"students", "explain", e.student, "--nope"},
		{"students", "explain", e.student, uuid.NewString()},
	} {
		code, _, errOut := e.run(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.Contains(t, errOut, "usage: matchctl students", "%v", args)
	}

	unknown := uuid.NewString()
	code, _, errOut := e.run(t, "students", "explain", unknown)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "student "+unknown+" not found")

	// An erased student is not explained: there is no such student.
	code, _, errOut = e.run(t, "students", "delete", e.student, "--yes")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = e.run(t, "students", "explain", e.student)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "student "+e.student+" not found")
}

// Without Redis the feed is ranked from PostgreSQL and shown, not stored.
func TestStudentsExplainWithoutRedis(t *testing.T) {
	e := newExplainEnv(t)
	getenv := e.getenv
	e.getenv = func(k string) string {
		if k == "REDIS_URL" {
			return "redis://127.0.0.1:1/0"
		}
		return getenv(k)
	}
	code, out, errOut := e.run(t, "students", "explain", e.student, "--json", "--limit", "4")
	require.Equal(t, 0, code, errOut)
	var ex inspect.Explanation
	require.NoError(t, json.Unmarshal([]byte(out), &ex))
	assert.Equal(t, "built, not stored", ex.Feed.Source)
	assert.Len(t, ex.Feed.Items, 4)
}
