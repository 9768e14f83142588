package cache

// StudentKeys names every read-model key this package writes for a student
// (ids in lower case, as every key holds them). They share the student's
// hash tag, so one command can drop them all on a Redis Cluster too, and
// an erasure drops them by name without scanning the keyspace. A new
// per-student key belongs here; the staged feed (Feeds.Put) too, though
// no Put leaves it behind.
func StudentKeys(studentID string) []string {
	return []string{FeedKey(studentID), ProbesKey(studentID), ShownKey(studentID), SwipedKey(studentID),
		StagedFeedKey(studentID)}
}
