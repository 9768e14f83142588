package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/erasure"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tools/inspect"
)

func init() {
	register("students", command{
		usage: "students export|delete|explain ID [--yes] [--limit 20] [--json]",
		help: "export a student's stored data as JSON; explain where they are in learning (phase, weights with " +
			"their uncertainty, the head of their feed with slot kinds and reasons; -h for its flags); or erase their personal data and Redis read models " +
			"(docs/onboarding.md); delete needs --yes when stdin is not a terminal, and if Redis is unreachable " +
			"it still erases, warns and exits 0: read models then expire by TTL, and running delete again drops them",
		run: runStudents,
	})
}

// redisPurgeTimeout bounds the Redis part of a deletion.
const redisPurgeTimeout = 30 * time.Second

func runStudents(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("students")
	yes := fs.Bool("yes", false, "delete: erase without asking (required when stdin is not a terminal)")
	fs.BoolVar(yes, "y", false, "short for --yes")
	limit := fs.Int("limit", 20, fmt.Sprintf("explain: items of the feed to show (1-%d)", inspect.MaxItems))
	asJSON := fs.Bool("json", false, "explain: print the explanation as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("missing subcommand: export, explain or delete")
	}
	sub, ids := pos[0], pos[1:]
	if sub == "explain" {
		if *yes {
			return usageErr("explain takes no --yes")
		}
		return runExplain(ctx, e, ids, *limit, *asJSON)
	}
	explainFlag := ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "limit" || f.Name == "json" {
			explainFlag = f.Name
		}
	})
	if explainFlag != "" {
		return usageErr("--%s is a flag of explain", explainFlag)
	}
	if sub != "export" && sub != "delete" {
		return usageErr("unknown subcommand %q: use export, explain or delete", sub)
	}
	if *yes && sub != "delete" {
		return usageErr("%s takes no flags", sub)
	}
	if len(ids) != 1 {
		return usageErr("%s needs exactly one student ID", sub)
	}
	parsed, err := uuid.Parse(ids[0])
	if err != nil {
		return usageErr("student ID %q is not a UUID", ids[0])
	}
	id := parsed.String() // lower case, as every key and row holds it

	if sub == "delete" && !*yes {
		if err := confirmDelete(e, id); err != nil {
			return err
		}
	}

	pool, err := store.Open(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	st := store.New(pool)

	if sub == "export" {
		return exportStudent(ctx, e, st, id)
	}
	return deleteStudent(ctx, e, st, id)
}

// confirmDelete asks on the terminal; without one, --yes is required.
func confirmDelete(e env, id string) error {
	if !isTerminal(os.Stdin) {
		return usageErr("--yes is required when stdin is not a terminal")
	}
	fmt.Fprintf(e.stderr, "Erase the personal data of student %s? This cannot be undone. Type yes to confirm: ", id)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read confirmation: %w", err)
	}
	if strings.TrimSpace(strings.ToLower(line)) != "yes" {
		return errors.New("not confirmed; nothing was erased")
	}
	return nil
}

// isTerminal reports whether f is a terminal: a character device other
// than the null device (which is what cron, systemd and containers started
// without a TTY give as stdin). Pipes and files are not terminals.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

func exportStudent(ctx context.Context, e env, st *store.Store, id string) error {
	ex, err := st.ExportStudent(ctx, id)
	if err != nil {
		return studentErr(err, id)
	}
	if ls := ex.LearningState; ls != nil && ls.ModelBinary != nil {
		ls.Model, err = exportModel(ls.ModelBinary)
		if err != nil {
			return fmt.Errorf("student %s: learned model: %w", id, err)
		}
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(ex)
}

// exportModel renders a stored binary model as JSON; one the service
// cannot decode (another model version) is exported as stored, base64.
func exportModel(b []byte) (json.RawMessage, error) {
	m, err := match.DecodeModel(b)
	if err != nil {
		return json.Marshal(struct {
			Undecoded []byte `json:"undecoded"`
			Error     string `json:"error"`
		}{b, err.Error()})
	}
	return json.Marshal(m)
}

func deleteStudent(ctx context.Context, e env, st *store.Store, id string) error {
	w := e.stdout
	er, err := st.DeleteStudent(ctx, id)
	if err != nil {
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalidStudentID {
			return err
		}
		// Not in PostgreSQL: never onboarded, or erased already (perhaps
		// while Redis was unreachable). What Redis may still hold under the
		// id is dropped all the same, and the id is reported unknown.
		fmt.Fprintf(w, "student %s is not in PostgreSQL (never onboarded, or erased already)\n", id)
		purgeRedis(ctx, e, store.StudentErasure{StudentID: id}, false)
		return studentErr(err, id)
	}
	if er.AlreadyErased {
		fmt.Fprintf(w, "student %s had been erased on %s by an earlier version; its kept row is deleted now\n",
			id, er.ErasedAt.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(w, "erased student %s at %s\n", id, er.ErasedAt.UTC().Format(time.RFC3339))
	}
	fields := "none left"
	if len(er.ProfileFields) > 0 {
		fields = strings.Join(er.ProfileFields, ", ")
	}
	fmt.Fprintf(w, "  profile deleted; fields that held a value: %s\n", fields)
	fmt.Fprintf(w, "  swipes kept as anonymous statistics (no student, client id or time of day): %d\n", er.SwipesAnonymised)
	fmt.Fprintf(w, "  deleted: %d feedback, %d category preferences, learned model %s, %d outbox events, %d webhook deliveries\n",
		er.Feedback, er.CategoryPreferences, yesNo(er.LearningState), er.OutboxEvents, er.WebhookDeliveries)
	purgeRedis(ctx, e, er, true)
	return nil
}

// purgeRedis runs the Redis part of an erasure (erasure.Purge) and says
// what it did. If Redis is unreachable it warns: the erasure in PostgreSQL
// stands, read models expire by their TTL, queued deliveries make no
// attempt when they run (their events are gone), and running delete again
// drops the rest.
func purgeRedis(ctx context.Context, e env, er store.StudentErasure, erased bool) {
	w := e.stdout
	ctx, cancel := context.WithTimeout(ctx, redisPurgeTimeout)
	defer cancel()
	rd, err := func() (erasure.Redis, error) {
		rdb, _, err := cache.Open(ctx, e.cfg.RedisURL)
		if err != nil {
			return erasure.Redis{}, err
		}
		defer rdb.Close()
		return erasure.Purge(ctx, rdb, er)
	}()
	if err != nil {
		fmt.Fprintf(w, "  redis: not reachable (%v); the student's cached read models were not dropped and expire by their TTL, "+
			"their queued webhook deliveries make no attempt (their events are gone); "+
			"run this command again to drop them now\n", err)
		fmt.Fprintf(e.stderr, "matchctl students: warning: Redis unreachable, read models and tasks of %s not dropped (they expire by TTL)\n", er.StudentID)
		return
	}
	fmt.Fprintf(w, "  redis: dropped %d read-model keys tagged {student:%s}\n", rd.Keys, er.StudentID)
	fmt.Fprintf(w, "  queue: deleted %d tasks about the student (read %d archived tasks)", rd.Tasks.Deleted, rd.Tasks.ArchivedScanned)
	if rd.Tasks.Running > 0 {
		fmt.Fprintf(w, "; %d running, which end without an attempt or within their timeout", rd.Tasks.Running)
	}
	fmt.Fprintln(w)
	if erased {
		fmt.Fprintf(w, "  redis: a feed tombstone (two version numbers) is kept for %s, so no feed build in flight stores the student again\n",
			erasure.TombstoneTTL)
	}
}

// studentKeys names every Redis key the service writes for a student.
func studentKeys(id string) []string { return erasure.StudentKeys(id) }

// studentErr turns an unknown student into a message that names the id.
func studentErr(err error, id string) error {
	var de *domain.Error
	if errors.As(err, &de) && de.Code == domain.CodeInvalidStudentID {
		return fmt.Errorf("student %s not found", id)
	}
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
