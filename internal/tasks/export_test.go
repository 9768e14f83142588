package tasks

import "time"

// SetDrainRun sets how long a learn drain task runs before handing its
// shard on, for the external tests; the returned func restores it.
func SetDrainRun(d time.Duration) (restore func()) {
	old := drainRun
	drainRun = d
	return func() { drainRun = old }
}

// SetDrainGather sets the least time between a drain's batches, for the
// external tests; the returned func restores it.
func SetDrainGather(d time.Duration) (restore func()) {
	old := drainGather
	drainGather = d
	return func() { drainGather = old }
}

// LegacyLearnShard is a student's shard in the spread of older builds.
func LegacyLearnShard(studentID string) int { return shardOf(studentID, legacyLearnShards) }

// FormerDefaultShard is the student's shard in the spread of the former
// default count (8).
func FormerDefaultShard(studentID string) int { return shardOf(studentID, formerDefaultShards) }
