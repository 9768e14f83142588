// Package ratelimit counts requests per student and operation group in
// Redis (GCRA through redis_rate), so every API replica shares one budget;
// while Redis cannot count, each replica counts the same allowances in its
// own memory (Limiter).
package ratelimit

import "time"

// Group is an operation group with its own allowance.
type Group string

const (
	GroupRecommendations Group = "recommendations"
	GroupSwipes          Group = "swipes"
	GroupBatch           Group = "batch"
	GroupDefault         Group = "default"
	// GroupCommentBytes counts the bytes of feedback comments a student
	// stores (FEEDBACK_COMMENT_BYTES_PER_MIN), a unit per byte; no route
	// counts requests in it.
	GroupCommentBytes Group = "comment_bytes"
)

// Decision is the outcome of counting one request (Allow) or several units
// of an allowance (AllowN, AllowAtMost).
type Decision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	ResetAt    time.Time     // when the full allowance is back
	RetryAfter time.Duration // when Allowed is false: how long until one request (AllowN: the n units; AllowAtMost: the rest) is allowed
	// Granted is how many units AllowN or AllowAtMost spent (Allow leaves
	// it 0).
	Granted int
	// Local: Redis could not count, and the decision was made from the
	// replica's own count in memory, at the same rates (Limiter).
	Local bool
}
