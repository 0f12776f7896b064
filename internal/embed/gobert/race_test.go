//go:build race

package gobert

// raceEnabled is true in a -race build, where the real-model suite would
// take many minutes.
const raceEnabled = true
