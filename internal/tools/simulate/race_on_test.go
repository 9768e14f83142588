//go:build race

package simulate

// raceEnabled is set when the race detector is on: the simulation test
// then runs a smaller population.
const raceEnabled = true
