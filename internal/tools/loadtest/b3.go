package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/collegematch/matching/internal/store"
)

// B3 is the swipe's fair baseline: a bare chi handler doing the swipe's
// durable write alone, one statement that locks and bumps the student,
// inserts the swipe with its idempotency key and the outbox row, in one
// commit, with no Redis, no token, no validation beyond decoding the body.
// It writes to copies of the service's tables (b3Tables: the same columns,
// constraints, indexes, foreign keys and triggers, and the same rows to
// begin with), through a pool opened as the API opens its own
// (store.APISettings), in a process of its own, so its CPU is its own.

// b3Tables are the service's tables a swipe writes and the baseline's
// copies of them, in the order they are created and filled.
var b3Tables = []struct{ src, dst string }{
	{"students", "loadtest_b3_students"},
	{"swipes", "loadtest_b3_swipes"},
	{"outbox", "loadtest_b3_outbox"},
}

// b3AppName is the application_name of the baseline's connections, by
// which its PostgreSQL backends are told from the service's.
const b3AppName = "loadtest-b3"

// b3Statement is B3's one statement: the durable part of the service's
// (store's recordSwipe) on the copies, without the school check and the
// duplicate lookup, which serve the answer rather than the write.
const b3Statement = `
WITH st AS (
	SELECT id, swipe_count FROM loadtest_b3_students WHERE id = $1 FOR NO KEY UPDATE
), ins AS (
	INSERT INTO loadtest_b3_swipes (student_id, school_id, direction, interaction_type, counted, is_probe, time_spent,
		client_id, occurred_at, swipe_count, trigger_feedback, updated_weights)
	SELECT st.id, $2, $3, 'swipe', true, false, $4, $5, now(), st.swipe_count + 1, false, false
	FROM st
	ON CONFLICT (student_id, client_id) DO NOTHING
	RETURNING id, created_at, swipe_count
), bump AS (
	UPDATE loadtest_b3_students s SET swipe_count = ins.swipe_count, version = s.version + 1
	FROM ins WHERE s.id = $1
	RETURNING s.version
), ev AS (
	INSERT INTO loadtest_b3_outbox (topic, student_id, payload)
	SELECT 'swipe.recorded', $1, jsonb_build_object('student_id', $1::text, 'school_id', $2::text,
		'direction', $3::text,
		'timestamp', to_char(ins.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'swipe_id', ins.id)
	FROM ins
	RETURNING id
)
SELECT EXISTS (SELECT 1 FROM st), ins.id, ins.swipe_count, bump.version, ev.id
FROM (SELECT 1) AS one LEFT JOIN ins ON true LEFT JOIN bump ON true LEFT JOIN ev ON true`

// SetupB3 makes the baseline's tables afresh: each a copy of the service's
// (LIKE ... INCLUDING ALL: columns, defaults, constraints, indexes), with
// sequences of its own for its serial columns, the source's foreign keys
// (pointed at the copies where they point at a copied table) and triggers,
// and the source's rows, then analysed.
func SetupB3(ctx context.Context, pool *pgxpool.Pool) error {
	if err := DropB3(ctx, pool); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		copied := map[string]string{}
		for _, t := range b3Tables {
			copied[t.src] = t.dst
			if err := copyTable(ctx, tx, t.src, t.dst); err != nil {
				return fmt.Errorf("b3: copy %s: %w", t.src, err)
			}
		}
		for _, t := range b3Tables {
			if err := copyKeysAndTriggers(ctx, tx, t.src, t.dst, copied); err != nil {
				return fmt.Errorf("b3: %s's keys and triggers: %w", t.src, err)
			}
		}
		return nil
	})
}

// AnalyzeB3 gathers the copies' statistics, as the history's ANALYZE does
// for the service's tables.
func AnalyzeB3(ctx context.Context, pool *pgxpool.Pool) error {
	for _, t := range b3Tables {
		if _, err := pool.Exec(ctx, `ANALYZE `+t.dst); err != nil {
			return fmt.Errorf("b3: analyze %s: %w", t.dst, err)
		}
	}
	return nil
}

// DropB3 drops the baseline's tables (and their sequences with them).
func DropB3(ctx context.Context, pool *pgxpool.Pool) error {
	for i := len(b3Tables) - 1; i >= 0; i-- {
		if _, err := pool.Exec(ctx, `DROP TABLE IF EXISTS `+b3Tables[i].dst+` CASCADE`); err != nil {
			return fmt.Errorf("b3: drop %s: %w", b3Tables[i].dst, err)
		}
	}
	return nil
}

func copyTable(ctx context.Context, tx pgx.Tx, src, dst string) error {
	if _, err := tx.Exec(ctx, `CREATE TABLE `+dst+` (LIKE `+src+` INCLUDING ALL)`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+dst+` SELECT * FROM `+src); err != nil {
		return err
	}
	// A serial column's default still draws from the source's sequence:
	// give it one of its own, past the rows copied.
	rows, err := tx.Query(ctx, `
SELECT a.attname FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
WHERE d.adrelid = $1::regclass AND pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%'`, dst)
	if err != nil {
		return err
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, col := range cols {
		seq := dst + "_" + col + "_seq"
		for _, q := range []string{
			`CREATE SEQUENCE ` + seq + ` OWNED BY ` + dst + `.` + col,
			`SELECT setval('` + seq + `', coalesce((SELECT max(` + col + `) FROM ` + dst + `), 0) + 1, false)`,
			`ALTER TABLE ` + dst + ` ALTER COLUMN ` + col + ` SET DEFAULT nextval('` + seq + `')`,
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyKeysAndTriggers gives dst src's foreign keys and triggers.
func copyKeysAndTriggers(ctx context.Context, tx pgx.Tx, src, dst string, copied map[string]string) error {
	rows, err := tx.Query(ctx, `
SELECT conname, pg_get_constraintdef(oid), confrelid::regclass::text FROM pg_constraint
WHERE conrelid = $1::regclass AND contype = 'f' ORDER BY conname`, src)
	if err != nil {
		return err
	}
	type fk struct{ name, def, ref string }
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (fk, error) {
		var k fk
		return k, r.Scan(&k.name, &k.def, &k.ref)
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		def := k.def
		if to, ok := copied[k.ref]; ok {
			def = strings.Replace(def, "REFERENCES "+k.ref+"(", "REFERENCES "+to+"(", 1)
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE `+dst+` ADD CONSTRAINT loadtest_b3_`+k.name+` `+def); err != nil {
			return err
		}
	}
	rows, err = tx.Query(ctx, `
SELECT t.tgname, pg_get_triggerdef(t.oid), quote_ident(n.nspname) || '.' || quote_ident(c.relname)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE t.tgrelid = $1::regclass AND NOT t.tgisinternal ORDER BY t.tgname`, src)
	if err != nil {
		return err
	}
	type trigger struct{ name, def, table string }
	triggers, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (trigger, error) {
		var tr trigger
		return tr, r.Scan(&tr.name, &tr.def, &tr.table)
	})
	if err != nil {
		return err
	}
	for _, tr := range triggers {
		def := strings.Replace(tr.def, " TRIGGER "+tr.name+" ", " TRIGGER loadtest_b3_"+tr.name+" ", 1)
		def = strings.Replace(def, " ON "+tr.table+" ", " ON "+dst+" ", 1)
		if def == tr.def || !strings.Contains(def, " ON "+dst+" ") {
			return fmt.Errorf("cannot copy trigger %s: %s", tr.name, tr.def)
		}
		if _, err := tx.Exec(ctx, def); err != nil {
			return err
		}
	}
	return nil
}

// b3Swipe is the body B3 reads: the fields of POST /swipe its write uses.
type b3Swipe struct {
	StudentID string  `json:"student_id"`
	SchoolID  string  `json:"school_id"`
	Direction string  `json:"direction"`
	SwipeID   string  `json:"swipe_id"`
	TimeSpent float64 `json:"time_spent"`
}

// NewB3Handler is B3's router: POST /swipe runs b3Statement once.
func NewB3Handler(pool *pgxpool.Pool) http.Handler {
	r := chi.NewRouter()
	r.Post("/swipe", func(w http.ResponseWriter, r *http.Request) {
		var in b3Swipe
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var (
			found                 bool
			id, version, outboxID *int64
			count                 *int
			clientID              *string
			status                = http.StatusOK
		)
		if in.SwipeID != "" {
			clientID = &in.SwipeID
		}
		err := pool.QueryRow(r.Context(), b3Statement, in.StudentID, in.SchoolID, in.Direction, in.TimeSpent, clientID).
			Scan(&found, &id, &count, &version, &outboxID)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		case !found:
			status = http.StatusNotFound
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "swipe_count": count, "version": version})
	})
	return r
}

// ServeB3 serves B3 on addr (127.0.0.1:0 for a free port) over
// databaseURL's database until ctx ends, writing "b3 URL" on out once it
// listens. This is the baseline's own process (matchctl loadtest
// --serve-b3).
func ServeB3(ctx context.Context, addr, databaseURL string, out io.Writer, log *slog.Logger) error {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("application_name", b3AppName)
	u.RawQuery = q.Encode()
	pool, err := store.OpenWith(ctx, u.String(), store.APISettings(runtime.GOMAXPROCS(0), log))
	if err != nil {
		return err
	}
	defer pool.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: NewB3Handler(pool), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(out, "b3 http://%s\n", ln.Addr())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// b3Process is B3 running in a process of its own.
type b3Process struct {
	URL string
	PID int
	cmd *exec.Cmd
}

// startB3 starts command (a matchctl loadtest --serve-b3 ADDR, or a test's
// stand-in) and waits for the URL it serves on.
func startB3(ctx context.Context, command []string, databaseURL string) (*b3Process, error) {
	if len(command) == 0 {
		return nil, errors.New("b3: no command to start it with")
	}
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("b3: %w", err)
	}
	p := &b3Process{PID: cmd.Process.Pid, cmd: cmd}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "b3 "); ok {
				lines <- u
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case p.URL = <-lines:
		return p, nil
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	p.Stop()
	return nil, errors.New("b3: the baseline's process did not say where it listens within 30 s")
}

// Stop ends the process (SIGTERM, then SIGKILL after 5 s) and waits for it.
func (p *b3Process) Stop() {
	if p == nil || p.cmd == nil {
		return
	}
	_ = terminate(p.cmd.Process)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}
