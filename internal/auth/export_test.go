package auth

// CacheLen reports how many verified tokens are cached.
func (v *Verifier) CacheLen() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.cache)
}
