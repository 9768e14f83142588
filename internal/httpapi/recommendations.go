package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/query"
)

// Queries is the read side (query.Service).
type Queries interface {
	Recommendations(ctx context.Context, studentID string, limit, offset int) (query.RecommendationsPage, error)
	RecommendationsV2(ctx context.Context, studentID string, limit, offset int) (query.RecommendationsPage, error)
	StoredRecommendations(ctx context.Context, studentID string, limit, offset int, anyProfile bool, pf query.Prefetched, dst []byte) ([]byte, bool)
	PageRead(studentID string, limit, offset int) *query.PageRead
	MatchDetail(ctx context.Context, studentID, schoolID string) (query.MatchDetailView, error)
	CompactRead(studentID string) *query.CompactRead
	CompactFeed(ctx context.Context, studentID string, pf query.Prefetched) (query.CompactPage, error)
	Schools(ctx context.Context, ids []string) query.BatchSchools
}

// Paging of POST /recommendations (decisions.md).
const (
	defaultLimit = 20
	maxLimit     = 100
)

// recommendationsRequest is the body of POST /recommendations. Numbers are
// kept raw so that each problem is reported against its field.
type recommendationsRequest struct {
	StudentID json.RawMessage `json:"student_id"`
	Limit     json.RawMessage `json:"limit"`
	Offset    json.RawMessage `json:"offset"`
}

// takeMember sets the field named key to value (memberDecoder); the
// value aliases the body, which the request keeps.
func (q *recommendationsRequest) takeMember(key, value []byte) bool {
	switch string(key) {
	case "student_id":
		q.StudentID = value
	case "limit":
		q.Limit = value
	case "offset":
		q.Offset = value
	}
	return true
}

func (q recommendationsRequest) Valid() map[string]string {
	var problems map[string]string
	add := func(field, problem string) {
		if problems == nil {
			problems = map[string]string{}
		}
		problems[field] = problem
	}
	switch id, ok := jsonString(q.StudentID); {
	case len(q.StudentID) == 0 || string(q.StudentID) == "null":
		add("student_id", "is required")
	case !ok || !isUUID(id):
		add("student_id", "must be a UUID")
	}
	if _, p := intField(q.Limit, 1, maxLimit, defaultLimit); p != "" {
		add("limit", p)
	}
	if _, p := intField(q.Offset, 0, math.MaxInt32, 0); p != "" {
		add("offset", p)
	}
	return problems
}

// jsonString decodes a JSON string; ok is false for any other value. A
// string of printable ASCII without escapes, the usual case, is read
// without encoding/json (which would give the same string).
func jsonString(raw json.RawMessage) (s string, ok bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && plainASCII(raw[1:len(raw)-1]) {
		return string(raw[1 : len(raw)-1]), true
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// plainASCII reports whether b is printable ASCII without a quote or a
// backslash: the contents of a JSON string that decodes to itself.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// intField reads an optional integer in [lo, hi]; absent gives def. The
// problem is empty when the value is acceptable. raw is valid JSON (the
// body was decoded): a plain integer, the usual case, is read without
// encoding/json.
func intField(raw json.RawMessage, lo, hi, def int) (int, string) {
	if len(raw) == 0 {
		return def, ""
	}
	if n, err := strconv.Atoi(string(raw)); err == nil && n >= lo && n <= hi {
		return n, ""
	}
	var f float64
	if string(raw) == "null" || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) ||
		f < float64(lo) || f > float64(hi) {
		if hi == math.MaxInt32 {
			return 0, "must be an integer, " + strconv.Itoa(lo) + " or more"
		}
		return 0, "must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)
	}
	return int(f), ""
}

// readPage decodes and validates the body of POST /recommendations and
// POST /v2/recommendations: the page asked for. The body is decoded once
// a request: the rate limiter's read (addRoutes) and the handler both
// ask.
func readPage(r *http.Request) (limit, offset int, err error) {
	q, _ := stateOf(r)
	if p := q.page; p != nil {
		return p.limit, p.offset, p.err
	}
	req, err := decode[recommendationsRequest](r, recommendationsBody)
	if err == nil {
		limit, _ = intField(req.Limit, 1, maxLimit, defaultLimit)
		offset, _ = intField(req.Offset, 0, math.MaxInt32, 0)
	}
	q.page = &pageAsked{limit: limit, offset: offset, err: err}
	return limit, offset, err
}

// handleRecommendations answers POST /recommendations: one page of the
// student's ranked feed in the union envelope of decisions.md, from the
// stored feed's bytes when it can (query.Service.StoredRecommendations).
func handleRecommendations(log *slog.Logger, q Queries) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, offset, err := readPage(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		if serveStoredPage(w, r, q, limit, offset, false) {
			return
		}
		page, err := q.Recommendations(r.Context(), studentFrom(r.Context()), limit, offset)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, page)
	})
}

// pageBuffers hold the bodies of pages served from stored bytes: a page
// of 20 is about 25 kB, which would otherwise be allocated and collected
// on every cached read. A buffer grown past maxPooledPage (a page of
// 100 is about 125 kB) is left to the collector.
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledPage = 256 << 10

// serveStoredPage answers a page from the stored feed's bytes
// (Queries.StoredRecommendations), written from a pooled buffer; false
// when the full path must answer.
func serveStoredPage(w http.ResponseWriter, r *http.Request, q Queries, limit, offset int, anyProfile bool) bool {
	buf := pageBuffers.Get().(*[]byte)
	body, ok := q.StoredRecommendations(r.Context(), studentFrom(r.Context()), limit, offset, anyProfile,
		prefetched(r.Context()), (*buf)[:0])
	if !ok {
		pageBuffers.Put(buf)
		return false
	}
	writeJSON(w, http.StatusOK, body) // Write does not keep body
	if cap(body) <= maxPooledPage {
		*buf = body[:0]
		pageBuffers.Put(buf)
	}
	return true
}

// prefetched is what the rate limiter read for the handler, as the read
// side takes it.
func prefetched(ctx context.Context) query.Prefetched {
	pf := prefetchedFrom(ctx)
	page, _ := pf.Read.(*query.PageRead)
	compact, _ := pf.Read.(*query.CompactRead)
	return query.Prefetched{Done: pf.Done, Page: page, Compact: compact}
}

// handleMatchDetail answers GET /match/{student_id}/{school_id}.
func handleMatchDetail(log *slog.Logger, q Queries) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		school := chi.URLParam(r, "school_id")
		if !isUUID(school) {
			respondErr(w, r, log, domain.Invalid("school_id must be a UUID", map[string]string{"school_id": "must be a UUID"}))
			return
		}
		d, err := q.MatchDetail(r.Context(), studentFrom(r.Context()), strings.ToLower(school))
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, d)
	})
}

// handleCompactRecommendations answers GET /m/recommendations/{student_id}
// with the stored bytes of the compact first page: no JSON is encoded on a
// cached read. The value may already have been read with the rate-limit
// count (rateLimitPrefetch).
func handleCompactRecommendations(log *slog.Logger, q Queries, ttl time.Duration) http.Handler {
	cacheControl := "private, max-age=" + strconv.Itoa(int(ttl.Seconds()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, err := q.CompactFeed(r.Context(), studentFrom(r.Context()), prefetched(r.Context()))
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		h := w.Header()
		if etagMatches(r.Header.Get("If-None-Match"), page.ETag) {
			setHeaders(h, headerETag, page.ETag, headerCacheControl, cacheControl)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		setHeaders(h, headerETag, page.ETag, headerCacheControl, cacheControl,
			headerContentType, contentTypeJSON, headerContentLength, strconv.Itoa(len(page.Body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(page.Body) // the client is gone; nothing useful to do
	})
}

// etagMatches applies If-None-Match (RFC 9110 13.1.2): "*" matches any
// current representation; otherwise a comma-separated list of entity tags
// compared weakly (W/"x" matches "x").
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	if strings.TrimSpace(header) == "*" {
		return true
	}
	etag = strings.TrimPrefix(etag, "W/")
	for part := range strings.SplitSeq(header, ",") {
		if strings.TrimPrefix(strings.TrimSpace(part), "W/") == etag {
			return true
		}
	}
	return false
}

// maxBatchSchools is the most ids POST /m/batch/schools takes (decisions.md).
const maxBatchSchools = 100

// batchSchoolsRequest is the body of POST /m/batch/schools. The array is
// kept raw and read element by element, at most maxBatchSchools of them.
type batchSchoolsRequest struct {
	SchoolIDs json.RawMessage `json:"school_ids"`
}

// parse returns the ids, lower-cased, in request order; every problem is
// reported, each id's under its index.
func (q batchSchoolsRequest) parse() ([]string, map[string]string) {
	problems := map[string]string{}
	if len(q.SchoolIDs) == 0 || string(q.SchoolIDs) == "null" {
		problems["school_ids"] = "is required"
		return nil, problems
	}
	elems, tooMany, ok := elements(q.SchoolIDs, maxBatchSchools)
	switch {
	case tooMany:
		problems["school_ids"] = "must have at most " + strconv.Itoa(maxBatchSchools) + " entries"
		return nil, problems
	case !ok:
		problems["school_ids"] = "must be an array of school ids"
		return nil, problems
	}
	ids := make([]string, len(elems))
	for i, raw := range elems {
		if json.Unmarshal(raw, &ids[i]) != nil || !isUUID(ids[i]) {
			problems["school_ids["+strconv.Itoa(i)+"]"] = "must be a UUID"
		}
		ids[i] = strings.ToLower(ids[i])
	}
	return ids, problems
}

// readBatchSchools decodes and validates POST /m/batch/schools: the ids,
// lower-cased, in request order.
func readBatchSchools(r *http.Request) ([]string, error) {
	req, err := decode[batchSchoolsRequest](r, batchSchoolsBody)
	if err != nil {
		return nil, err
	}
	ids, problems := req.parse()
	if len(problems) > 0 {
		return nil, domain.Invalid(summarize(problems), problems)
	}
	return ids, nil
}

// handleBatchSchools answers POST /m/batch/schools from the in-memory
// catalogue: compact records in request order, duplicates once, and the
// ids not served in missing.
func handleBatchSchools(log *slog.Logger, q Queries) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids, err := readBatchSchools(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, q.Schools(r.Context(), ids))
	})
}
