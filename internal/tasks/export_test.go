package tasks

// RetryAt is retryAt, for the external tests.
var RetryAt = retryAt
