package tasks

import "time"

// SetDrainRun sets how long a learn drain task runs before handing its
// shard on, for the external tests; the returned func restores it.
func SetDrainRun(d time.Duration) (restore func()) {
	old := drainRun
	drainRun = d
	return func() { drainRun = old }
}
