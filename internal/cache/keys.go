package cache

import "strings"

// Every key the service writes as a read model is built here. The prefix
// carries the format version: a change to a document's layout bumps it
// (rm:v1: -> rm:v2:) and the old keys expire by their TTL. The hash tag
// {student:<id>} keeps a student's keys, and the rate-limit keys of
// internal/ratelimit, in one Redis Cluster slot, so they can be read in one
// pipeline.
const prefix = "rm:v2:"

// studentTag is the hash-tagged part of a student's keys; ids are UUIDs,
// compared in lower case.
func studentTag(studentID string) string {
	return "{student:" + strings.ToLower(studentID) + "}"
}

// FeedKey is the hash holding a student's precomputed feed. Fields:
//
//	sv  student version the feed stands for (decimal; a swipe's patch moves it)
//	lv  learned-state version it was ranked with (decimal)
//	cv  catalogue version it was built from (decimal)
//	n   the student's counted swipes (decimal; a swipe's patch moves it)
//	t   schools eligible for the student (decimal; a swipe's patch moves it)
//	ls  the student version the learned state covers (decimal; 0 when not known)
//	h   header: when and how it was built, weights, the scoring view of the profile
//	ib  the ranked items as built, fixed-size binary records
//	l   the learned model it was ranked with, in its binary form (match.Model.MarshalBinary)
//	x   the schools swipes took off the top since the build, 16 bytes each
//	mb  the compact first page as built: "<cv> <algorithm version> <etag>\n",
//	    the offsets of its items, the ETags of the pages left once swipes
//	    took the first ones off, then the JSON body (encodeCompact)
//	j:k item k of the list as built, as POST /recommendations shows it (pages.go)
//	e   what that envelope says besides the counts (pages.go)
//
// A swipe's patch moves the small fields only (sv, n, t, x): the items,
// the compact page and the described items stay as built, and a reader
// reads them past the schools x names (the patched list is the items
// after the first len(x)/16). A tombstone (written by Invalidate) has sv,
// lv and cv only; one a swipe's patch leaves also keeps h and l, for the
// next swipe's prediction. A new feed is written whole to the key with
// ":next" appended and renamed onto this one (Feeds.Put).
//
// The items and the compact page were "i" and "m" while a patch cut them
// in place: the names changed with the layout, so that a replica of
// either layout finds no items or page in a feed of the other (it builds
// the feed again, and its patch drops it for a tombstone) rather than
// reading them the wrong way.
func FeedKey(studentID string) string { return prefix + studentTag(studentID) + ":feed" }

// Field names of the feed hash.
const (
	fieldStudentVersion  = "sv"
	fieldLearningVersion = "lv"
	fieldCatalogVersion  = "cv"
	fieldSwipes          = "n"
	fieldTotal           = "t"
	fieldLearned         = "ls"
	fieldHeader          = "h"
	fieldItems           = "ib"
	fieldModel           = "l"
	fieldRemoved         = "x"
	// FieldCompact is the field of FeedKey holding the compact first page
	// as built (encodeCompact).
	FieldCompact = "mb"
)
