// Package ptest holds test helpers shared by the memory patterns' tests: a
// manual clock, and a durable store and recall index in one SQLite file.
package ptest
