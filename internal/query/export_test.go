package query

import "time"

// SetFactorCacheClock makes c read the time from now.
func SetFactorCacheClock(c *FactorCache, now func() time.Time) { c.now = now }
