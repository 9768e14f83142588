package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/queueconsole"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

const (
	consoleStudent = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	consoleSecret  = "sig-s3cr3t-value"
)

// fillQueues leaves the critical queue with 2 pending, 1 scheduled, 1
// retry and 2 archived tasks and the webhooks queue with 1 pending, 1
// retry and 1 archived, their payloads and stored errors naming a student
// and an endpoint URL with a secret in its query; both queues are paused
// so that a worker leaves them as they are.
func fillQueues(t *testing.T, redisURL string) *asynq.Inspector {
	t.Helper()
	opt, err := asynq.ParseRedisURI(redisURL)
	require.NoError(t, err)
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = insp.Close() })

	learn := func(n int) []byte {
		return fmt.Appendf(nil, `{"student_id":%q,"version":%d}`, consoleStudent, n)
	}
	hook := fmt.Appendf(nil, `{"outbox_id":7,"endpoint":"https://hooks.example/in?token=%s&x=1","first":{"payload":{"student_id":%q}}}`,
		consoleSecret, consoleStudent)
	fail := fmt.Errorf("POST https://hooks.example/in?token=%s: student %s: 500", consoleSecret, consoleStudent)

	// Failures first, by a task server that fails every task: "archive"
	// tasks skip their retries.
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency: 2, Queues: map[string]int{tasks.QueueCritical: 1, tasks.QueueWebhooks: 1},
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return time.Hour },
		LogLevel:       asynq.FatalLevel,
	})
	require.NoError(t, srv.Start(asynq.HandlerFunc(func(_ context.Context, tk *asynq.Task) error {
		if strings.HasPrefix(tk.ResultWriter().TaskID(), "archive") {
			return errors.Join(fail, asynq.SkipRetry)
		}
		return fail
	})))
	enqueue := func(id, typ, queue string, payload []byte, opts ...asynq.Option) {
		_, err := client.Enqueue(asynq.NewTask(typ, payload), append(opts, asynq.TaskID(id), asynq.Queue(queue), asynq.MaxRetry(5))...)
		require.NoError(t, err)
	}
	enqueue("retry:learn:"+consoleStudent, tasks.TypeStudentLearn, tasks.QueueCritical, learn(1))
	enqueue("archive1:learn:"+consoleStudent, tasks.TypeStudentLearn, tasks.QueueCritical, learn(2))
	enqueue("archive2:learn:"+consoleStudent, tasks.TypeStudentLearn, tasks.QueueCritical, learn(3))
	enqueue("retry:hook", tasks.TypeWebhookDeliver, tasks.QueueWebhooks, hook)
	enqueue("archive:hook", tasks.TypeWebhookDeliver, tasks.QueueWebhooks, hook)
	require.Eventually(t, func() bool {
		c, err := queueconsole.Read(insp, []string{tasks.QueueCritical, tasks.QueueWebhooks})
		return err == nil && c[0].Retry == 1 && c[0].Archived == 2 && c[1].Retry == 1 && c[1].Archived == 1
	}, 20*time.Second, 50*time.Millisecond)
	srv.Shutdown()

	require.NoError(t, insp.PauseQueue(tasks.QueueCritical))
	require.NoError(t, insp.PauseQueue(tasks.QueueWebhooks))
	enqueue("p1:learn:"+consoleStudent, tasks.TypeStudentLearn, tasks.QueueCritical, learn(4))
	enqueue("p2:learn:"+consoleStudent, tasks.TypeStudentLearn, tasks.QueueCritical, learn(5))
	enqueue("s1:learn:"+consoleStudent, tasks.TypeStudentLearn, tasks.QueueCritical, learn(6), asynq.ProcessIn(time.Hour))
	enqueue("p:hook", tasks.TypeWebhookDeliver, tasks.QueueWebhooks, hook)
	return insp
}

func httpDo(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

type consoleTasks struct {
	Queue queueconsole.Counts `json:"queue"`
	Tasks []queueconsole.Task `json:"tasks"`
	Admin bool                `json:"admin"`
}

// The worker's ops port serves the queue console: every queue of the
// service with its tasks by state, as the Inspector counts them, and the
// outbox rows not yet handed over; the tasks of a state with payloads and
// stored errors that name no student id and no URL secret; read-only
// (actions refused 403, no buttons) without OPS_ADMIN_TOKEN, and with it
// an archived task run again or deleted by a request carrying the token
// (401 without it).
func TestQueueConsole(t *testing.T) {
	testutil.NewRedis(t, testutil.RedisDBCmdWorker)
	redisURL := testutil.RedisURLFor(t, testutil.RedisDBCmdWorker)
	dbURL := testutil.NewDBURL(t)
	insp := fillQueues(t, redisURL)
	writeEvent(t, dbURL, "mystery.happened") // no route: stays in the outbox

	for _, token := range []string{"", "admin-token-123"} {
		t.Run(fmt.Sprintf("admin=%t", token != ""), func(t *testing.T) {
			w := start(t, map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": redisURL, "OPS_ADDR": "127.0.0.1:0", "OPS_ADMIN_TOKEN": token})
			base := "http://" + w.ops

			code, body := httpDo(t, "GET", base+"/queues?format=json", "")
			require.Equal(t, http.StatusOK, code, body)
			var over struct {
				Queues  []queueconsole.Counts  `json:"queues"`
				Outside []queueconsole.Outside `json:"outside"`
				Admin   bool                   `json:"admin"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &over))
			want, err := queueconsole.Read(insp, tasks.Queues())
			require.NoError(t, err)
			require.Len(t, over.Queues, len(tasks.Queues()))
			for i, c := range over.Queues {
				assert.Equal(t, want[i].Queue, c.Queue)
				for _, s := range queueconsole.States {
					assert.Equal(t, want[i].Of(s), c.Of(s), "%s %s", c.Queue, s)
				}
			}
			byName := map[string]queueconsole.Counts{}
			for _, c := range over.Queues {
				byName[c.Queue] = c
			}
			crit, hooks := byName[tasks.QueueCritical], byName[tasks.QueueWebhooks]
			assert.Equal(t, []int{2, 0, 1, 1, 2}, []int{crit.Pending, crit.Active, crit.Scheduled, crit.Retry, crit.Archived})
			assert.Equal(t, []int{1, 0, 0, 1, 1}, []int{hooks.Pending, hooks.Active, hooks.Scheduled, hooks.Retry, hooks.Archived})
			assert.True(t, crit.Paused)
			require.Len(t, over.Outside, 2)
			assert.Equal(t, 1, over.Outside[0].Count)
			assert.Equal(t, queueconsole.LearnMarksName, over.Outside[1].Name)
			assert.Zero(t, over.Outside[1].Count)
			assert.Equal(t, token != "", over.Admin)

			// The HTML page shows the same.
			code, page := httpDo(t, "GET", base+"/queues", "")
			require.Equal(t, http.StatusOK, code)
			assert.Contains(t, page, `<tr data-queue="critical">`)
			assert.Contains(t, page, `<td class="n" data-state="archived"><a href="/queues/critical?state=archived">2</a></td>`)
			assert.Contains(t, page, `<td class="n" data-state="retry"><a href="/queues/webhooks?state=retry">1</a></td>`)

			// Every state's tasks, redacted.
			for _, q := range []string{tasks.QueueCritical, tasks.QueueWebhooks} {
				for _, s := range queueconsole.States {
					code, body := httpDo(t, "GET", base+"/queues/"+q+"?state="+s+"&format=json", "")
					require.Equal(t, http.StatusOK, code, body)
					code, page := httpDo(t, "GET", base+"/queues/"+q+"?state="+s, "")
					require.Equal(t, http.StatusOK, code, page)
					for _, text := range []string{body, page} {
						assert.NotContains(t, text, consoleStudent, "%s %s", q, s)
						assert.NotContains(t, text, consoleSecret, "%s %s", q, s)
					}
					var ts consoleTasks
					require.NoError(t, json.Unmarshal([]byte(body), &ts))
					assert.Len(t, ts.Tasks, byName[q].Of(s), "%s %s", q, s)
					if s == "archived" || s == "retry" {
						for _, tk := range ts.Tasks {
							assert.Contains(t, tk.LastError, "POST https://hooks.example/in student uuid:")
						}
					}
					assert.Equal(t, token != "" && s == "archived", strings.Contains(page, `data-action="run"`), "%s %s", q, s)
				}
			}
			code, body = httpDo(t, "GET", base+"/queues/webhooks?state=archived&format=json", "")
			require.Equal(t, http.StatusOK, code)
			var archived consoleTasks
			require.NoError(t, json.Unmarshal([]byte(body), &archived))
			require.Len(t, archived.Tasks, 1)
			hook := archived.Tasks[0]
			assert.Contains(t, hook.Payload, `"endpoint":"https://hooks.example/in"`)
			assert.Contains(t, hook.Payload, `"first":{"payload":{"student_id":"uuid:`)
			code, body = httpDo(t, "GET", base+"/queues/critical?state=archived&format=json", "")
			require.Equal(t, http.StatusOK, code)
			var learnArchived consoleTasks
			require.NoError(t, json.Unmarshal([]byte(body), &learnArchived))
			require.Len(t, learnArchived.Tasks, 2)

			// Bad input: the error body, never a 500.
			code, body = httpDo(t, "GET", base+"/queues/nope", "")
			assert.Equal(t, http.StatusNotFound, code)
			assert.Contains(t, body, `"code":"NOT_FOUND"`)
			code, body = httpDo(t, "GET", base+"/queues/critical?state=done", "")
			assert.Equal(t, http.StatusBadRequest, code)
			assert.Contains(t, body, `"code":"VALIDATION_ERROR"`)

			run := base + "/queues/webhooks/archived/" + hook.Key + "/run"
			del := base + "/queues/critical/archived/" + learnArchived.Tasks[0].Key + "/delete"
			if token == "" {
				for _, u := range []string{run, del} {
					code, body := httpDo(t, "POST", u, "anything")
					assert.Equal(t, http.StatusForbidden, code, body)
					assert.Contains(t, body, `"code":"FORBIDDEN"`)
				}
				c, err := queueconsole.Read(insp, tasks.Queues())
				require.NoError(t, err)
				for i := range c {
					c[i].Latency, want[i].Latency = 0, 0 // the pending tasks' wait grows
				}
				assert.Equal(t, want, c, "nothing changed")
				return
			}
			for _, bad := range []string{"", "wrong"} {
				code, body := httpDo(t, "POST", run, bad)
				assert.Equal(t, http.StatusUnauthorized, code, body)
			}
			code, body = httpDo(t, "POST", base+"/queues/webhooks/archived/0123/run", token)
			assert.Equal(t, http.StatusNotFound, code, body)

			code, body = httpDo(t, "POST", run, token)
			require.Equal(t, http.StatusOK, code, body)
			code, body = httpDo(t, "POST", del, token)
			require.Equal(t, http.StatusOK, code, body)
			c, err := queueconsole.Read(insp, []string{tasks.QueueCritical, tasks.QueueWebhooks})
			require.NoError(t, err)
			assert.Equal(t, []int{2, 0, 1, 1, 1}, []int{c[0].Pending, c[0].Active, c[0].Scheduled, c[0].Retry, c[0].Archived})
			assert.Equal(t, []int{2, 0, 0, 1, 0}, []int{c[1].Pending, c[1].Active, c[1].Scheduled, c[1].Retry, c[1].Archived},
				"the archived webhook task is pending again (its queue is paused)")
			code, _ = httpDo(t, "POST", run, token)
			assert.Equal(t, http.StatusNotFound, code, "no longer archived")
		})
	}
}
