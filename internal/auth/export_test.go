package auth

// CacheLen reports how many verified tokens are cached.
func (v *Verifier) CacheLen() int { return v.cache.len() }

// Cached reports whether raw is in the verified-token cache.
func (v *Verifier) Cached(raw string) bool {
	_, ok := v.cache.get(sha256Sum(raw))
	return ok
}
