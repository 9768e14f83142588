package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/query"
)

// ContinuousFeed is POST /continuous-feed's read (query.Continuous).
type ContinuousFeed interface {
	ContinuousFeed(ctx context.Context, studentID string, limit int, carried query.Carried) (query.ContinuousPage, error)
}

// CarriedSwipes records the swipes a continuous-feed request carries
// (command.Swipes).
type CarriedSwipes interface {
	RecordCarried(ctx context.Context, studentID string, swipes []command.SwipeInput) (command.Carried, error)
}

// continuousRequest is the body of POST /continuous-feed:
// {student_id, limit? (1-50, default 10), swipes? [{school_id, direction,
// time_spent?, interaction_type?, swipe_id?}] (at most 50)}.
type continuousRequest struct {
	StudentID json.RawMessage `json:"student_id"`
	Limit     json.RawMessage `json:"limit"`
	Swipes    json.RawMessage `json:"swipes"`
}

// Fields of one swipe sent along, and what they accept.
var (
	continuousSwipeFields = []string{"school_id", "direction", "time_spent", "interaction_type", "swipe_id"}
	swipeDirections       = []string{"left", "right"}
	interactionTypes      = []string{"swipe", "tap", "detail_view", "save"}
)

// Bounds shared with POST /swipe: time_spent in seconds (a day at most)
// and client ids (Idempotency-Key) of at most 255 printable ASCII characters.
const (
	maxTimeSpent      = 86400
	maxClientIDLength = 255
)

// clientIDProblem says what is wrong with an Idempotency-Key, "" when
// nothing.
func clientIDProblem(id string) string {
	if len(id) > maxClientIDLength {
		return "must be at most " + strconv.Itoa(maxClientIDLength) + " characters"
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return "must be printable ASCII without spaces"
		}
	}
	return ""
}

// idempotencyNamespace derives a swipe's client id from the request's
// Idempotency-Key and the swipe's index (UUIDv5), for swipes without a
// swipe_id: a retried request records none of them twice.
var idempotencyNamespace = uuid.MustParse("6f1d3c52-8a43-5b4e-9d0e-2c7a1b9f4e10")

// parse validates the body and returns the limit and the swipes in order.
// Every problem is reported, each swipe's under its index (swipes[2].direction).
func (q continuousRequest) parse(idemKey string) (int, []command.SwipeInput, map[string]string) {
	problems := recommendationsRequest{StudentID: q.StudentID}.Valid()
	if problems == nil {
		problems = map[string]string{}
	}
	limit, p := intField(q.Limit, 1, query.MaxContinuousLimit, query.DefaultContinuousLimit)
	if p != "" {
		problems["limit"] = p
	}
	if p := clientIDProblem(idemKey); p != "" {
		problems["Idempotency-Key"] = p
	}
	if len(q.Swipes) == 0 {
		return limit, nil, problems
	}
	raw, tooMany, ok := elements(q.Swipes, query.MaxContinuousSwipes)
	switch {
	case tooMany:
		problems["swipes"] = "must have at most " + strconv.Itoa(query.MaxContinuousSwipes) + " entries"
		return limit, nil, problems
	case !ok:
		problems["swipes"] = "must be an array of swipes"
		return limit, nil, problems
	}
	swipes := make([]command.SwipeInput, len(raw))
	for i, b := range raw {
		name := "swipes[" + strconv.Itoa(i) + "]"
		f, ok := objectFields(name+".", b, continuousSwipeFields, problems)
		if !ok {
			continue
		}
		sw := &swipes[i]
		school := f.String("school_id", false)
		switch {
		case !school.Set:
			f.bad("school_id", "is required")
		case !school.Null && !isUUID(school.Value):
			f.bad("school_id", "must be a UUID")
		default:
			sw.SchoolID = strings.ToLower(school.Value)
		}
		dir := f.String("direction", false)
		switch {
		case !dir.Set:
			f.bad("direction", "is required")
		case !dir.Null && !contains(swipeDirections, dir.Value):
			f.bad("direction", "must be left or right")
		default:
			sw.Direction = dir.Value
		}
		if it := f.String("interaction_type", false); it.Set && !it.Null {
			if !contains(interactionTypes, it.Value) {
				f.bad("interaction_type", "must be swipe, tap, detail_view or save")
			}
			sw.InteractionType = it.Value
		}
		if raw, set, null := f.get("time_spent"); set && !null {
			var v float64
			if json.Unmarshal(raw, &v) != nil || v < 0 || v > maxTimeSpent {
				f.bad("time_spent", "must be a number of seconds from 0 to "+strconv.Itoa(maxTimeSpent))
			} else {
				sw.TimeSpent = &v
			}
		}
		id := f.String("swipe_id", false)
		switch {
		case id.Set && !id.Null && !isUUID(id.Value):
			f.bad("swipe_id", "must be a UUID")
		case id.Set && !id.Null:
			sw.ClientID = strings.ToLower(id.Value)
		case idemKey != "":
			sw.ClientID = uuid.NewSHA1(idempotencyNamespace, []byte(idemKey+"\n"+strconv.Itoa(i))).String()
		}
	}
	return limit, swipes, problems
}

// readContinuous decodes and validates POST /continuous-feed: the limit
// and the swipes sent along, in order.
func readContinuous(r *http.Request) (int, []command.SwipeInput, error) {
	req, err := decode[continuousRequest](r, continuousBody)
	if err != nil {
		return 0, nil, err
	}
	limit, swipes, problems := req.parse(strings.TrimSpace(r.Header.Get("Idempotency-Key")))
	if len(problems) > 0 {
		return 0, nil, domain.Invalid(summarize(problems), problems)
	}
	return limit, swipes, nil
}

// handleContinuousFeed answers POST /continuous-feed: it records the swipes
// sent along, in order, as POST /swipe would (the write side), then answers
// the next items of the student's feed in the envelope of POST
// /recommendations (the read side). The swipes cost one unit each of the
// student's swipes allowance, all or none: when it cannot cover them the
// request is 429 and nothing is recorded. Without a use case (c nil) the
// endpoint is not built: 501.
func handleContinuousFeed(log *slog.Logger, rec CarriedSwipes, c ContinuousFeed, allowance carriedAllowance) http.Handler {
	if c == nil || rec == nil {
		return notImplemented(log)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, swipes, err := readContinuous(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		if !allowance.all(w, r, len(swipes)) {
			return
		}
		student := studentFrom(r.Context())
		carried, err := rec.RecordCarried(r.Context(), student, swipes)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		page, err := c.ContinuousFeed(r.Context(), student, limit, query.Carried(carried))
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, page)
	})
}
