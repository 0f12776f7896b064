//go:build !race

package gobert

const raceEnabled = false
