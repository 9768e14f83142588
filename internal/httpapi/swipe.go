package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
)

// Swipes records swipes (command.Swipes).
type Swipes interface {
	Record(ctx context.Context, in command.SwipeInput) (command.SwipeResult, error)
}

// SwipeReads is a Swipes whose read before the commit can go in the
// request's rate-limit count (command.Swipes): POST /swipe then makes one
// Redis round trip before its commit, not two.
type SwipeReads interface {
	Swipes
	// ReadBefore builds the read for a swipe of studentID on schoolID (nil:
	// none to make).
	ReadBefore(studentID, schoolID string) *command.SwipeRead
	// RecordRead records a swipe with that read made (nil: not made).
	RecordRead(ctx context.Context, in command.SwipeInput, read *command.SwipeRead) (command.SwipeResult, error)
}

// swipeRequest is the body of POST /swipe. Values are kept raw so that
// each problem is reported against its field.
type swipeRequest struct {
	StudentID       json.RawMessage `json:"student_id"`
	SchoolID        json.RawMessage `json:"school_id"`
	Direction       json.RawMessage `json:"direction"`
	InteractionType json.RawMessage `json:"interaction_type"`
	TimeSpent       json.RawMessage `json:"time_spent"`
	SwipeID         json.RawMessage `json:"swipe_id"`
}

// takeMember sets the field named key to value (memberDecoder); the value
// aliases the body, which the request keeps. An escaped name is matched as
// encoding/json matches it (knownIndex).
func (q *swipeRequest) takeMember(key, value []byte) bool {
	fields := [...]*json.RawMessage{&q.StudentID, &q.SchoolID, &q.Direction, &q.InteractionType, &q.TimeSpent,
		&q.SwipeID} // in swipeFields' order
	if i := knownIndex(swipeFields, key); i >= 0 {
		*fields[i] = value
	}
	return true
}

// parse validates the request; every problem is reported at once.
func (q swipeRequest) parse() (command.SwipeInput, map[string]string) {
	problems := map[string]string{}
	var in command.SwipeInput
	uuidField := func(name string, raw json.RawMessage, required bool) string {
		if len(raw) == 0 && !required {
			return ""
		}
		s, p := stringField(raw)
		if p == "" && !isUUID(s) {
			p = "must be a UUID"
		}
		if p != "" {
			problems[name] = p
		}
		return s
	}
	in.StudentID = uuidField("student_id", q.StudentID, true)
	in.SchoolID = uuidField("school_id", q.SchoolID, true)
	in.ClientID = uuidField("swipe_id", q.SwipeID, false)
	dir, p := stringField(q.Direction)
	if p == "" && dir != "left" && dir != "right" {
		p = "must be left or right"
	}
	if p != "" {
		problems["direction"] = p
	}
	in.Direction = dir
	if len(q.InteractionType) > 0 {
		it, p := stringField(q.InteractionType)
		switch {
		case p != "":
			problems["interaction_type"] = p
		case it != "swipe" && it != "tap" && it != "detail_view" && it != "save":
			problems["interaction_type"] = "must be swipe, tap, detail_view or save"
		}
		in.InteractionType = it
	}
	if len(q.TimeSpent) > 0 {
		f, ok := jsonNumber(q.TimeSpent)
		if !ok || f < 0 || f > command.MaxTimeSpent {
			problems["time_spent"] = "must be a number of seconds from 0 to " + strconv.Itoa(command.MaxTimeSpent)
		} else {
			in.TimeSpent = &f
		}
	}
	return in, problems
}

// swipeResponse is the answer of POST /swipe: the union of the
// specification's two variants.
type swipeResponse struct {
	Success         bool               `json:"success"`
	SwipeCount      int                `json:"swipe_count"`
	LearningPhase   string             `json:"learning_phase"`
	UIMessage       string             `json:"ui_message"`
	LearningState   swipeLearningState `json:"learning_state"`
	TriggerFeedback bool               `json:"trigger_feedback"`
	FeedbackOptions []string           `json:"feedback_options"`
}

type swipeLearningState struct {
	Phase          string  `json:"phase"`
	Progress       float64 `json:"progress"`
	UpdatedWeights bool    `json:"updated_weights"`
}

// swipeAnswer is the answer of POST /swipe to a recorded swipe.
func swipeAnswer(r command.SwipeResult) swipeResponse {
	opts := r.FeedbackOptions
	if opts == nil {
		opts = []string{}
	}
	return swipeResponse{
		Success: true, SwipeCount: r.SwipeCount, LearningPhase: r.Phase, UIMessage: r.UIMessage,
		LearningState: swipeLearningState{Phase: r.Phase, Progress: math.Round(r.Progress*1e4) / 1e4,
			UpdatedWeights: r.UpdatedWeights},
		TriggerFeedback: r.TriggerFeedback, FeedbackOptions: opts,
	}
}

// appendJSON appends the answer as encoding/json encodes it, and a newline
// (TestSwipeAnswerEncodesAsEncodingJSON), without reflection.
func (a swipeResponse) appendJSON(b []byte) []byte {
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, a.Success)
	b = append(b, `,"swipe_count":`...)
	b = strconv.AppendInt(b, int64(a.SwipeCount), 10)
	b = appendJSONField(b, "learning_phase", a.LearningPhase)
	b = appendJSONField(b, "ui_message", a.UIMessage)
	b = append(b, `,"learning_state":{"phase":`...)
	b = appendJSONString(b, a.LearningState.Phase)
	b = append(b, `,"progress":`...)
	b = appendJSONFloat(b, a.LearningState.Progress)
	b = append(b, `,"updated_weights":`...)
	b = strconv.AppendBool(b, a.LearningState.UpdatedWeights)
	b = append(b, `},"trigger_feedback":`...)
	b = strconv.AppendBool(b, a.TriggerFeedback)
	b = append(b, `,"feedback_options":`...)
	if a.FeedbackOptions == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, o := range a.FeedbackOptions {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, o)
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

// appendJSONField appends `,"name":` and s as a JSON string.
func appendJSONField(b []byte, name, s string) []byte {
	b = append(append(append(b, `,"`...), name...), `":`...)
	return appendJSONString(b, s)
}

// appendJSONString appends s as encoding/json writes a string: printable
// ASCII but for what it escapes (quote, backslash, <, >, &) is written as
// it is, anything else goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// appendJSONFloat appends f as encoding/json writes a float64: the
// shortest form that reads back, in exponent form below 1e-6 and from
// 1e21 on (f is finite: a progress).
func appendJSONFloat(b []byte, f float64) []byte {
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		q, _ := json.Marshal(f)
		return append(b, q...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// IdempotentReplayedHeader is set to "true" on the answer to a retried
// swipe (the first answer, repeated).
const IdempotentReplayedHeader = "Idempotent-Replayed"

// jsonNumber reads a JSON number; ok is false for any other value (raw is
// valid JSON: its body was decoded).
func jsonNumber(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// readSwipe decodes and validates POST /swipe: the body, and the
// Idempotency-Key header when the body has no swipe_id.
func readSwipe(r *http.Request) (command.SwipeInput, error) {
	req, err := decode[swipeRequest](r, swipeBody)
	if err != nil {
		return command.SwipeInput{}, err
	}
	in, problems := req.parse()
	if in.ClientID == "" {
		if key, ok := r.Header[http.CanonicalHeaderKey("Idempotency-Key")]; ok {
			switch {
			case len(key) != 1 || key[0] == "":
				problems["Idempotency-Key"] = "must be given once, with a value"
			case command.ClientIDProblem(key[0]) != "":
				problems["Idempotency-Key"] = command.ClientIDProblem(key[0])
			default:
				in.ClientID = key[0]
			}
		}
	}
	if len(problems) > 0 {
		return command.SwipeInput{}, domain.Invalid(summarize(problems), problems)
	}
	return in, nil
}

// handleSwipe answers POST /swipe. The client id that makes a retry
// harmless is the body's swipe_id, else the Idempotency-Key header.
func handleSwipe(log *slog.Logger, swipes Swipes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := readSwipe(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		in.StudentID = studentFrom(r.Context())
		var res command.SwipeResult
		if sr, ok := swipes.(SwipeReads); ok {
			read, _ := prefetchedFrom(r.Context()).Read.(*command.SwipeRead)
			res, err = sr.RecordRead(r.Context(), in, read)
		} else {
			res, err = swipes.Record(r.Context(), in)
		}
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		if res.Duplicate {
			w.Header().Set(IdempotentReplayedHeader, "true")
		}
		writeJSON(w, http.StatusOK, swipeAnswer(res).appendJSON(make([]byte, 0, 256)))
	})
}
