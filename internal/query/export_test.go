package query

import "time"

// SetFactorCacheClock makes c read the time from now.
func SetFactorCacheClock(c *FactorCache, now func() time.Time) { c.now = now }

// Admit is the admission a miss of studentID goes through (admit), without
// the ranking and the keep that follow it.
func (c *FactorCache) Admit(studentID string) bool { return c.admit(studentID) }
