package verbs

// Digest exposes the keyspace digest to the end-to-end tests.
var Digest = digest
