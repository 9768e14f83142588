package cache

import "strings"

// Every key the service writes as a read model is built here. The prefix
// carries the format version: a change to a document's layout bumps it
// (rm:v1: -> rm:v2:) and the old keys expire by their TTL. The hash tag
// {student:<id>} keeps a student's keys, and the rate-limit keys of
// internal/ratelimit, in one Redis Cluster slot, so they can be read in one
// pipeline.
const prefix = "rm:v1:"

// studentTag is the hash-tagged part of a student's keys; ids are UUIDs,
// compared in lower case.
func studentTag(studentID string) string {
	return "{student:" + strings.ToLower(studentID) + "}"
}

// FeedKey is the hash holding a student's precomputed feed. Fields:
//
//	sv  student version the feed was built from (decimal)
//	cv  catalogue version it was built from (decimal)
//	h   header: phases, counts, weights, the scoring view of the profile
//	i   the ranked items, fixed-size binary records
//	m   the compact first page: "<cv> <algorithm version> <etag>\n" + JSON body
//
// A tombstone (written by Invalidate) has sv and cv only.
func FeedKey(studentID string) string { return prefix + studentTag(studentID) + ":feed" }

// Field names of the feed hash.
const (
	fieldStudentVersion = "sv"
	fieldCatalogVersion = "cv"
	fieldHeader         = "h"
	fieldItems          = "i"
	// FieldCompact is the field of FeedKey holding the compact first page.
	FieldCompact = "m"
)
