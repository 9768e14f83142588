package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// FeedbackRecorder records learning feedback (command.Feedback).
type FeedbackRecorder interface {
	Record(ctx context.Context, in command.FeedbackInput) (command.FeedbackResult, error)
}

// feedbackRequest is the body of POST /feedback.
type feedbackRequest struct {
	StudentID json.RawMessage `json:"student_id"`
	SchoolID  json.RawMessage `json:"school_id"`
	Reason    json.RawMessage `json:"reason"`
	Comment   json.RawMessage `json:"comment"`
}

func (q feedbackRequest) parse() (command.FeedbackInput, map[string]string) {
	problems := map[string]string{}
	var in command.FeedbackInput
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{{"student_id", q.StudentID, &in.StudentID}, {"school_id", q.SchoolID, &in.SchoolID}} {
		s, p := stringField(f.raw)
		if p == "" && !isUUID(s) {
			p = "must be a UUID"
		}
		if p != "" {
			problems[f.name] = p
		}
		*f.dst = s
	}
	reason, p := stringField(q.Reason)
	if p == "" && !match.ValidReason(reason) {
		p = "must be one of too_expensive, wrong_location, not_my_major, too_selective, perfect_match"
	}
	if p != "" {
		problems["reason"] = p
	}
	in.Reason = reason
	if len(q.Comment) > 0 {
		c, p := stringField(q.Comment)
		switch {
		case p != "":
		case utf8.RuneCountInString(c) > command.MaxCommentLength:
			p = "must be at most " + strconv.Itoa(command.MaxCommentLength) + " characters"
		case strings.ContainsRune(c, 0):
			p = "must not contain NUL characters" // text PostgreSQL cannot store
		}
		if p != "" {
			problems["comment"] = p
		}
		in.Comment = c
	}
	return in, problems
}

// feedbackResponse is the answer of POST /feedback.
type feedbackResponse struct {
	Success bool `json:"success"`
	// PreferenceWeights are the weights once the learner has applied this
	// feedback to the model stored when it was received.
	PreferenceWeights map[string]float64 `json:"preference_weights"`
	UpdatedWeights    bool               `json:"updated_weights"`
}

// readFeedback decodes and validates POST /feedback.
func readFeedback(r *http.Request) (command.FeedbackInput, error) {
	req, err := decode[feedbackRequest](r, feedbackBody)
	if err != nil {
		return command.FeedbackInput{}, err
	}
	in, problems := req.parse()
	if len(problems) > 0 {
		return command.FeedbackInput{}, domain.Invalid(summarize(problems), problems)
	}
	return in, nil
}

// handleFeedback answers POST /feedback.
func handleFeedback(log *slog.Logger, fb FeedbackRecorder, allowance carriedAllowance) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := readFeedback(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		in.StudentID = studentFrom(r.Context())
		// A comment costs its bytes of the student's comment budget, once
		// it is known to be one that may be stored (an invalid one is
		// refused for itself).
		if _, problems := command.ValidateFeedback(in); len(problems) == 0 && !allowance.comment(w, r, len(in.Comment)) {
			return
		}
		res, err := fb.Record(r.Context(), in)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		weights := make(map[string]float64, len(res.PreferenceWeights))
		for k, v := range res.PreferenceWeights {
			weights[k] = roundTo4(v)
		}
		encode(w, http.StatusOK, feedbackResponse{Success: true, PreferenceWeights: weights, UpdatedWeights: res.UpdatedWeights})
	})
}

func roundTo4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
