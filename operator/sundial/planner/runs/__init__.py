"""The life of a run's attempts (DESIGN §4): claiming an attempt and creating its Job, matching claimed
attempts with the Jobs observed (success, failure, JobLost, UnexpectedJob, maxRunAge, re-issue), retries with
backoff, dead letters and the dead-letter circuit, and the finished-Job history limits. It imports only the
working copy (status) and the vocabulary below it."""
