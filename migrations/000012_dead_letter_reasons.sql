-- 000012: two more reasons a task becomes DEAD (dead_letters.reason).
--
--   undeliverable  the dispatcher could not publish its envelope, ever: larger
--                  than the broker accepts (CF_KAFKA_MAX_MESSAGE_BYTES, or the
--                  broker's MESSAGE_TOO_LARGE). Retrying would loop for ever.
--   unknown_type   no worker had a handler for its type for
--                  CF_WORKER_UNKNOWN_TYPE_DEAD_AFTER_MS (each worker without
--                  one hands the task back, its attempt not counted).

ALTER TABLE dead_letters DROP CONSTRAINT dead_letters_reason_check;
ALTER TABLE dead_letters ADD CONSTRAINT dead_letters_reason_check
  CHECK (reason IN ('exhausted', 'non_retryable', 'lease_expired', 'undeliverable', 'unknown_type'));
