package queueconsole

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"
)

// Config is what the console reads and whom it lets act.
type Config struct {
	Inspector *asynq.Inspector
	// Queues are the service's queues (tasks.Queues()), shown whether or
	// not asynq lists them.
	Queues []string
	// Outside reads the work waiting outside asynq; nil: none shown.
	Outside OutsideFunc
	// AdminToken (OPS_ADMIN_TOKEN) enables the actions on archived tasks
	// for requests carrying it as a bearer token; empty: read-only.
	AdminToken string
	Log        *slog.Logger
}

// maxListed bounds the tasks one page lists.
const maxListed = 100

// maxSearched bounds the archived tasks an action looks through for its
// task.
const maxSearched = 10000

//go:embed console.js
var consoleJS []byte

// Handler serves the console:
//
//	GET  /queues                              every queue's counts (HTML; ?format=json for JSON)
//	GET  /queues/{queue}?state=S              the queue's tasks in state S, newest first (default archived)
//	GET  /queues/console.js                   the page's script (the actions)
//	POST /queues/{queue}/archived/{key}/run    run an archived task again (admin)
//	POST /queues/{queue}/archived/{key}/delete delete an archived task (admin)
//
// A task is named in an action by its key (a digest of its id, since the id
// may hold a student id and is never shown). Actions answer 403 when no
// admin token is configured and 401 without the right bearer token.
func Handler(c Config) http.Handler {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /queues", c.overview)
	mux.HandleFunc("GET /queues/console.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		_, _ = w.Write(consoleJS)
	})
	mux.HandleFunc("GET /queues/{queue}", c.tasks)
	mux.HandleFunc("POST /queues/{queue}/archived/{key}/{action}", c.act)
	return secureHeaders(mux)
}

func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; "+
			"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

type overviewData struct {
	Queues  []Counts  `json:"queues"`
	Outside []Outside `json:"outside"`
	Admin   bool      `json:"admin"`
	States  []string  `json:"-"`
}

func (c Config) overview(w http.ResponseWriter, r *http.Request) {
	counts, err := Read(c.Inspector, c.Queues)
	if err != nil {
		c.unavailable(w, r, "queues", err)
		return
	}
	d := overviewData{Queues: counts, Outside: []Outside{}, Admin: c.AdminToken != "", States: States}
	if c.Outside != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if d.Outside, err = c.Outside(ctx); err != nil {
			c.unavailable(w, r, "outside", err)
			return
		}
	}
	c.render(w, r, "overview", d)
}

// Task is a task as the console shows it: redacted.
type Task struct {
	Key       string    `json:"key"`
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Payload   string    `json:"payload"`
	Retried   int       `json:"retried"`
	MaxRetry  int       `json:"max_retry"`
	LastError string    `json:"last_error,omitempty"`
	FailedAt  time.Time `json:"last_failed_at,omitzero"`
	NextAt    time.Time `json:"next_process_at,omitzero"`
}

type tasksData struct {
	Queue  Counts         `json:"queue"`
	State  string         `json:"state"`
	Tasks  []Task         `json:"tasks"`
	ByType map[string]int `json:"by_type"`
	Admin  bool           `json:"admin"`
	States []string       `json:"-"`
}

func (c Config) tasks(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	if !slices.Contains(c.Queues, q) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such queue", map[string]any{"queues": c.Queues})
		return
	}
	state := r.URL.Query().Get("state")
	if state == "" {
		state = "archived"
	}
	if !slices.Contains(States, state) {
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "state must be one of "+strings.Join(States, ", "),
			map[string]any{"field": "state"})
		return
	}
	counts, err := Read(c.Inspector, []string{q})
	if err != nil {
		c.unavailable(w, r, "queues", err)
		return
	}
	list, err := c.list(q, state, asynq.PageSize(maxListed))
	if err != nil {
		c.unavailable(w, r, "queues", err)
		return
	}
	d := tasksData{Queue: counts[0], State: state, Tasks: []Task{}, ByType: map[string]int{},
		Admin: c.AdminToken != "" && state == "archived", States: States}
	for _, t := range list {
		d.ByType[t.Type]++
		d.Tasks = append(d.Tasks, Task{Key: taskKey(t.ID), ID: RedactText(t.ID), Type: t.Type, Payload: RedactPayload(t.Payload),
			Retried: t.Retried, MaxRetry: t.MaxRetry, LastError: RedactText(t.LastErr), FailedAt: t.LastFailedAt, NextAt: t.NextProcessAt})
	}
	c.render(w, r, "tasks", d)
}

func (c Config) list(q, state string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error) {
	var (
		ts  []*asynq.TaskInfo
		err error
	)
	switch state {
	case "pending":
		ts, err = c.Inspector.ListPendingTasks(q, opts...)
	case "active":
		ts, err = c.Inspector.ListActiveTasks(q, opts...)
	case "scheduled":
		ts, err = c.Inspector.ListScheduledTasks(q, opts...)
	case "retry":
		ts, err = c.Inspector.ListRetryTasks(q, opts...)
	default:
		ts, err = c.Inspector.ListArchivedTasks(q, opts...)
	}
	if errors.Is(err, asynq.ErrQueueNotFound) {
		return nil, nil
	}
	return ts, err
}

// taskKey names a task in an action without its id.
func taskKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:12])
}

func (c Config) act(w http.ResponseWriter, r *http.Request) {
	if c.AdminToken == "" {
		writeError(w, http.StatusForbidden, "FORBIDDEN", "the queue console is read-only: OPS_ADMIN_TOKEN is not set", nil)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(c.AdminToken)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="queues"`)
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "this action needs the OPS_ADMIN_TOKEN as a bearer token", nil)
		return
	}
	q, key, action := r.PathValue("queue"), r.PathValue("key"), r.PathValue("action")
	if !slices.Contains(c.Queues, q) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such queue", nil)
		return
	}
	if action != "run" && action != "delete" {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "the actions are run and delete", nil)
		return
	}
	id, err := c.findArchived(q, key)
	if err != nil {
		c.unavailable(w, r, "queues", err)
		return
	}
	if id == "" {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no archived task with this key in the queue", nil)
		return
	}
	if action == "run" {
		err = c.Inspector.RunTask(q, id)
	} else {
		err = c.Inspector.DeleteTask(q, id)
	}
	if errors.Is(err, asynq.ErrTaskNotFound) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no archived task with this key in the queue", nil)
		return
	}
	if err != nil {
		c.unavailable(w, r, "queues", err)
		return
	}
	c.Log.InfoContext(r.Context(), "queue console action", "action", action, "queue", q, "task", RedactText(id))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"queue": q, "key": key, "done": action})
}

// findArchived returns the id of the archived task of queue q whose key is
// key ("" when none).
func (c Config) findArchived(q, key string) (string, error) {
	const size = 500
	for page := 1; page*size <= maxSearched; page++ {
		ts, err := c.list(q, "archived", asynq.PageSize(size), asynq.Page(page))
		if err != nil {
			return "", err
		}
		for _, t := range ts {
			if taskKey(t.ID) == key {
				return t.ID, nil
			}
		}
		if len(ts) < size {
			break
		}
	}
	return "", nil
}

func (c Config) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.Log.WarnContext(r.Context(), "queue console cannot read", "what", what, "err", err)
	w.Header().Set("Retry-After", "5")
	writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "the queues cannot be read now", nil)
}

func (c Config) render(w http.ResponseWriter, r *http.Request, name string, d any) {
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(d)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages.ExecuteTemplate(w, name, d); err != nil {
		c.Log.ErrorContext(r.Context(), "queue console page", "err", err)
	}
}

func writeError(w http.ResponseWriter, status int, code, message string, details map[string]any) {
	if details == nil {
		details = map[string]any{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": message, "details": details}})
}

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"of":  func(c Counts, s string) int { return c.Of(s) },
	"ms":  func(d time.Duration) time.Duration { return d.Round(time.Millisecond) },
	"age": func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
	"at": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
}).Parse(pageTemplates))

const pageTemplates = `
{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all;margin:0}
.note{color:#666}
</style>
<script src="/queues/console.js" defer></script>
</head><body>{{end}}

{{define "overview"}}{{template "head" "Queues"}}
<h1>Queues</h1>
<table id="queues">
<thead><tr><th>queue</th>{{range .States}}<th>{{.}}</th>{{end}}<th>completed</th><th>latency</th><th>paused</th></tr></thead>
<tbody>
{{- $states := .States}}
{{- range .Queues}}
<tr data-queue="{{.Queue}}"><td><a href="/queues/{{.Queue}}">{{.Queue}}</a></td>
{{- $c := .}}{{range $states}}<td class="n" data-state="{{.}}"><a href="/queues/{{$c.Queue}}?state={{.}}">{{of $c .}}</a></td>{{end}}
<td class="n" data-state="completed">{{.Completed}}</td><td class="n">{{ms .Latency}}</td><td>{{if .Paused}}paused{{end}}</td></tr>
{{- end}}
</tbody></table>
<h2>Waiting outside asynq</h2>
{{if .Outside}}<table id="outside"><thead><tr><th>what</th><th>count</th><th>oldest</th></tr></thead><tbody>
{{- range .Outside}}<tr data-outside="{{.Name}}"><td>{{.Name}}</td><td class="n">{{.Count}}</td><td>{{if not .Oldest.IsZero}}{{age .Oldest}} ago{{end}}</td></tr>{{end}}
</tbody></table>{{else}}<p class="note">nothing read</p>{{end}}
<p class="note">{{if .Admin}}Archived tasks can be run again or deleted with the admin token.{{else}}Read-only (OPS_ADMIN_TOKEN is not set).{{end}}
Student ids show as uuid:digest; URLs without their query. <a href="/queues?format=json">JSON</a></p>
</body></html>{{end}}

{{define "tasks"}}{{template "head" (print "Queue " .Queue.Queue)}}
<p><a href="/queues">all queues</a></p>
<h1>Queue {{.Queue.Queue}}: {{.State}}</h1>
<p>{{$q := .Queue}}{{range .States}}<a href="/queues/{{$q.Queue}}?state={{.}}">{{.}} ({{of $q .}})</a> {{end}}</p>
{{if .ByType}}<p>listed by type: {{range $t, $n := .ByType}}{{$t}} {{$n}}; {{end}}</p>{{end}}
{{if .Admin}}<p><label>admin token <input type="password" id="admin-token" autocomplete="off"></label> <span id="action-result"></span></p>{{end}}
<table id="tasks" data-queue="{{.Queue.Queue}}"><thead><tr><th>id</th><th>type</th><th>payload</th><th>retried</th><th>last error</th><th>failed at</th><th>next</th>{{if .Admin}}<th></th>{{end}}</tr></thead><tbody>
{{- $admin := .Admin}}
{{- range .Tasks}}
<tr data-key="{{.Key}}"><td><code>{{.ID}}</code></td><td>{{.Type}}</td><td><pre>{{.Payload}}</pre></td><td class="n">{{.Retried}}/{{.MaxRetry}}</td>
<td><pre>{{.LastError}}</pre></td><td>{{at .FailedAt}}</td><td>{{at .NextAt}}</td>
{{- if $admin}}<td><button type="button" data-action="run">run</button> <button type="button" data-action="delete">delete</button></td>{{end}}</tr>
{{- else}}<tr><td colspan="7" class="note">none</td></tr>
{{- end}}
</tbody></table>
<p class="note">At most ` + "100" + ` tasks are listed. <a href="?state={{.State}}&amp;format=json">JSON</a></p>
</body></html>{{end}}
`
