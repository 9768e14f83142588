package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/queueconsole"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// queuesEnv is a database with one outbox row no worker hands over and a
// Redis DB whose critical queue holds 3 pending, 2 scheduled and 1
// archived student:learn tasks and whose webhooks queue holds 1 pending
// and 2 archived webhook:deliver tasks, both queues paused (a worker
// leaves them as they are).
type queuesEnv struct {
	getenv  func(string) string
	env     map[string]string
	insp    *asynq.Inspector
	student string
}

func newQueuesEnv(t *testing.T) *queuesEnv {
	t.Helper()
	ctx := context.Background()
	rdb := testutil.NewRedis(t, testutil.RedisDBMatchctl)
	dbURL := testutil.NewDBURL(t)
	q := &queuesEnv{
		env:     map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": testutil.RedisURLFor(t, testutil.RedisDBMatchctl)},
		insp:    asynq.NewInspectorFromRedisClient(rdb),
		student: uuid.NewString(),
	}
	q.getenv = func(k string) string { return q.env[k] }
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO outbox (topic, payload) VALUES ('mystery.happened', '{}')`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	// Two students marked in their learn drains (two shards or one).
	for range 2 {
		id := uuid.NewString()
		pending, _ := tasks.LearnDrainKeys(id)
		require.NoError(t, rdb.ZAdd(ctx, pending, redis.Z{Score: 3, Member: id}).Err())
	}

	client := asynq.NewClientFromRedisClient(rdb)
	add := func(id, typ, queue string, opts ...asynq.Option) {
		payload := fmt.Appendf(nil, `{"student_id":%q,"endpoint":"https://hooks.example/in?token=s3cr3t"}`, q.student)
		_, err := client.Enqueue(asynq.NewTask(typ, payload), append(opts, asynq.TaskID(id), asynq.Queue(queue))...)
		require.NoError(t, err)
	}
	for _, qn := range []string{tasks.QueueCritical, tasks.QueueWebhooks} {
		add("x:"+qn, tasks.TypeStudentLearn, qn) // registers the queue
		require.NoError(t, q.insp.PauseQueue(qn))
		require.NoError(t, q.insp.DeleteTask(qn, "x:"+qn))
	}
	for i := range 4 {
		add(fmt.Sprintf("learn:%s:v%d", q.student, i), tasks.TypeStudentLearn, tasks.QueueCritical)
	}
	require.NoError(t, q.insp.ArchiveTask(tasks.QueueCritical, "learn:"+q.student+":v0"))
	for i := range 2 {
		add(fmt.Sprintf("later:%s:%d", q.student, i), tasks.TypeStudentLearn, tasks.QueueCritical, asynq.ProcessIn(time.Hour))
	}
	for i := range 3 {
		add(fmt.Sprintf("hook:%d", i), tasks.TypeWebhookDeliver, tasks.QueueWebhooks)
	}
	require.NoError(t, q.insp.ArchiveTask(tasks.QueueWebhooks, "hook:0"))
	require.NoError(t, q.insp.ArchiveTask(tasks.QueueWebhooks, "hook:1"))
	return q
}

// `matchctl queues` prints the counts asynq's Inspector reads, for every
// queue of the service, and the outbox rows not yet handed over.
func TestQueuesPrintsWhatTheInspectorCounts(t *testing.T) {
	q := newQueuesEnv(t)
	want, err := queueconsole.Read(q.insp, tasks.Queues())
	require.NoError(t, err)

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"queues"}, q.getenv, &out, &errOut), errOut.String())
	lines := strings.Split(out.String(), "\n")
	assert.Regexp(t, `^QUEUE +PENDING +ACTIVE +SCHEDULED +RETRY +ARCHIVED +LATENCY +PAUSED$`, lines[0])
	for i, c := range want {
		f := strings.Fields(lines[i+1])
		require.GreaterOrEqual(t, len(f), 7, lines[i+1])
		assert.Equal(t, []string{c.Queue, strconv.Itoa(c.Pending), strconv.Itoa(c.Active), strconv.Itoa(c.Scheduled),
			strconv.Itoa(c.Retry), strconv.Itoa(c.Archived)}, f[:6])
	}
	assert.Equal(t, []int{3, 0, 2, 0, 1}, []int{want[0].Pending, want[0].Active, want[0].Scheduled, want[0].Retry, want[0].Archived})
	assert.Regexp(t, `(?m)^  outbox \(events not yet handed to asynq\) +1 +oldest `, out.String())
	assert.Regexp(t, `(?m)^  learn drains \(students with swipes not yet folded\) +2`, out.String())

	out.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"queues", "--json"}, q.getenv, &out, &errOut), errOut.String())
	var got struct {
		Queues  []queueconsole.Counts  `json:"queues"`
		Outside []queueconsole.Outside `json:"outside"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Len(t, got.Queues, len(want))
	for i := range want {
		for _, s := range queueconsole.States {
			assert.Equal(t, want[i].Of(s), got.Queues[i].Of(s), "%s %s", want[i].Queue, s)
		}
	}
	require.Len(t, got.Outside, 2)
	assert.Equal(t, 1, got.Outside[0].Count)
	assert.Equal(t, queueconsole.LearnMarksName, got.Outside[1].Name)
	assert.Equal(t, 2, got.Outside[1].Count)

	errOut.Reset()
	assert.Equal(t, 2, run(context.Background(), []string{"queues", "extra"}, q.getenv, &out, &errOut))
	assert.Contains(t, errOut.String(), "queues takes no arguments")
}

// The queue console opens in headless Chromium on the ops port of a
// running worker (built from cmd/worker) and lists the learn (critical)
// and webhooks queues with the counts `matchctl queues` prints; a queue's
// archived tasks show without the student's id or the URL's secret, and
// without actions (no OPS_ADMIN_TOKEN). Skipped without Chromium, except
// under CI.
func TestQueueConsoleInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	bin := buildServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q := newQueuesEnv(t)
	env := map[string]string{"OPS_ADDR": "127.0.0.1:0"}
	for k, v := range q.env {
		env[k] = v
	}
	worker := startServer(t, filepath.Join(bin, "worker"), env)
	opsURL := "http://" + worker.addrs(t, 1)[0]

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("no-sandbox", os.Geteuid() == 0),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	b, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	problems := watchConsole(t, b)

	require.NoError(t, chromedp.Do(b, chromedp.Navigate(opsURL+"/queues"), chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="webhooks"]`))))
	shown := evaluate[map[string]map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll('#queues tr[data-queue]')].map(r =>
		[r.dataset.queue, Object.fromEntries([...r.querySelectorAll('td[data-state]')].map(td => [td.dataset.state, td.textContent.trim()]))]))`)

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"queues", "--json"}, q.getenv, &out, &errOut), errOut.String())
	var printed struct {
		Queues []queueconsole.Counts `json:"queues"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &printed))
	require.Len(t, shown, len(printed.Queues))
	for _, c := range printed.Queues {
		for _, s := range queueconsole.States {
			assert.Equal(t, strconv.Itoa(c.Of(s)), shown[c.Queue][s], "%s %s", c.Queue, s)
		}
	}
	assert.Equal(t, map[string]string{"pending": "3", "active": "0", "scheduled": "2", "retry": "0", "archived": "1", "completed": "0"},
		shown[tasks.QueueCritical])
	assert.Equal(t, map[string]string{"pending": "1", "active": "0", "scheduled": "0", "retry": "0", "archived": "2", "completed": "0"},
		shown[tasks.QueueWebhooks])

	// A queue's archived tasks, from the page's own link.
	require.NoError(t, chromedp.Do(b,
		chromedp.Click(chromedp.CSS(`tr[data-queue="webhooks"] td[data-state="archived"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#tasks tr[data-key]`))))
	text := evaluate[string](t, b, `document.body.innerText`)
	assert.Contains(t, text, "Queue webhooks: archived")
	assert.Equal(t, 2, strings.Count(text, "webhook:deliver\t"), text)
	assert.Contains(t, text, `"endpoint":"https://hooks.example/in"`)
	assert.NotContains(t, text, q.student)
	assert.NotContains(t, text, "s3cr3t")
	assert.Regexp(t, regexp.MustCompile(`"student_id":"uuid:[0-9a-f]{8}"`), text)
	assert.Equal(t, 0, evaluate[int](t, b, `document.querySelectorAll('button').length`), "read-only: no actions")
	assert.Empty(t, problems.list(), "the page logs no error and breaks no Content-Security-Policy rule")
}
