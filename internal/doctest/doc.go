// Package doctest keeps the shell commands of README.md and docs/ true. Its
// test builds capsuled, starts it on a fresh data directory (on a free
// loopback port, which replaces the docs' 127.0.0.1:8080), and then:
//
//   - runs every sh block of README.md with bash, in order, in a working
//     directory holding a small ./handbook/ folder, with KEY and
//     CAPSULED_API_KEY set to the admin key the server printed; a block must
//     exit 0 and no HTTP answer it prints may be an error body;
//   - checks every `capsuled …` command line in docs/*.md (benchmark and
//     deployment recipes that run for minutes or need PostgreSQL) with
//     CAPSULED_CHECK_ARGS=1: the command parses its arguments exactly as it
//     would and stops before doing anything.
//
// A block that cannot run in a test is listed in the test's skip table with
// the reason; everything else runs.
package doctest
