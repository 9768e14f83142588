//go:build race

package httpapi_test

// raceEnabled reports whether the tests run under the race detector, which
// makes every byte a scan reads several times slower.
const raceEnabled = true
